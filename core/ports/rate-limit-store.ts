import type { Allowance } from "../domain/allowance.ts";
import type { Awaitable } from "./awaitable.ts";

/**
 * Rate-limit counters by key (`core/domain/allowance.ts` says how they count). Embedded, one
 * process's memory; in a cluster, one NATS KV bucket that every API replica shares, so a client
 * spreading requests over replicas meets one limit.
 */
export interface RateLimitStore {
  /**
   * Counts one request against the key's `limit` per `windowMs`; a refused request is not counted.
   * At once from an adapter that counts in this process (awaitable.ts says why).
   */
  take(key: string, limit: number, windowMs: number, now: number): Awaitable<Allowance>;
  /** The key's state, counting nothing. */
  peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance>;
}
