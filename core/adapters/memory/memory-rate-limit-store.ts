import { type Allowance, peekAt, takeOne } from "../../domain/allowance.ts";
import type { RateLimitStore } from "../../ports/rate-limit-store.ts";

/** Past this many keys, a take first drops the keys whose buckets are full again (nothing to remember). */
const PRUNE_AT = 10_000;

/** Rate-limit counters in this process's memory: one number per key, the time its bucket is full again. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #fullAt = new Map<string, number>();

  take(key: string, limit: number, windowMs: number, now: number): Allowance {
    if (this.#fullAt.size >= PRUNE_AT) this.#prune(now);
    const allowance = takeOne(this.#fullAt.get(key) ?? null, limit, windowMs, now);
    if (allowance.allowed) this.#fullAt.set(key, allowance.fullAt);
    return allowance;
  }

  async peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance> {
    return peekAt(this.#fullAt.get(key) ?? null, limit, windowMs, now);
  }

  #prune(now: number) {
    for (const [key, fullAt] of this.#fullAt) if (fullAt <= now) this.#fullAt.delete(key);
  }
}
