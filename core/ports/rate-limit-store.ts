import type { Allowance } from "../domain/allowance.ts";

/**
 * Rate-limit counters by key (`core/domain/allowance.ts` says how they count). Embedded, one
 * process's memory; in a cluster, one NATS KV bucket that every API replica shares, so a client
 * spreading requests over replicas meets one limit.
 */
export interface RateLimitStore {
  /** Counts one request against the key's `limit` per `windowMs`; a refused request is not counted. */
  take(key: string, limit: number, windowMs: number, now: number): Promise<Allowance>;
  /** The key's state, counting nothing. */
  peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance>;
}
