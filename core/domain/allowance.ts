/**
 * Rate limits as a token bucket in its GCRA form (the generic cell rate algorithm, as redis-cell and
 * Stripe's limiters count): a key holds one number, the time at which its bucket is full again (its
 * "theoretical arrival time"). `limit` requests may come at once; after that one more each
 * `windowMs / limit`. One number per key is what makes it shareable: replicas agree by
 * compare-and-set on it, and it only ever grows, so a stale copy can only under-count, never refuse
 * wrongly.
 */
export type Allowance = {
  allowed: boolean;
  /** The key's stored time after this request (unchanged when refused). */
  fullAt: number;
  /** Requests counted against the current window, this one included; limit + 1 when refused. */
  used: number;
  /** Milliseconds until the bucket is full again (allowed), or until the next request is allowed (refused). */
  resetMs: number;
};

/** Takes one request from the key's allowance; `fullAt` is its stored time, null where it has none. */
export function takeOne(fullAt: number | null, limit: number, windowMs: number, now: number): Allowance {
  const interval = windowMs / limit;
  const start = Math.max(fullAt ?? now, now);
  // The bucket may run at most one window ahead of now: `limit` requests fill it.
  if (start + interval - now > windowMs + 1e-9) {
    return { allowed: false, fullAt: start, used: limit + 1, resetMs: Math.ceil(start + interval - windowMs - now) };
  }
  const next = start + interval;
  return { allowed: true, fullAt: next, used: usedBy(next, interval, now), resetMs: Math.ceil(next - now) };
}

/** The key's state without taking from it: what it has used, and whether `takeOne` would allow. */
export function peekAt(fullAt: number | null, limit: number, windowMs: number, now: number): Allowance {
  const interval = windowMs / limit;
  const ahead = Math.max((fullAt ?? now) - now, 0);
  const allowed = ahead + interval <= windowMs + 1e-9;
  return {
    allowed,
    fullAt: fullAt ?? now,
    used: usedBy(now + ahead, interval, now),
    resetMs: Math.ceil(allowed ? ahead : ahead + interval - windowMs),
  };
}

const usedBy = (fullAt: number, interval: number, now: number) => Math.max(0, Math.ceil((fullAt - now) / interval - 1e-9));
