import type { Allowance } from "../domain/allowance.ts";

/**
 * Rate-limit counters by key (`core/domain/allowance.ts` says how they count). Embedded, one
 * process's memory; in a cluster, one NATS KV bucket that every API replica shares, so a client
 * spreading requests over replicas meets one limit.
 */
export interface RateLimitStore {
  /**
   * Counts one request against the key's `limit` per `windowMs`; a refused request is not counted.
   * An adapter that counts in this process answers at once, without a promise: every request of the
   * API takes once, and a promise costs it a turn of the microtask queue. Answered at once, this take,
   * the key's lookup and the inspection's read took a GET by id from 16.8 to 15.4 µs of CPU
   * (docs/benchmarks.md). Callers handle both, as `await` does.
   */
  take(key: string, limit: number, windowMs: number, now: number): Allowance | Promise<Allowance>;
  /** The key's state, counting nothing. */
  peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance>;
}
