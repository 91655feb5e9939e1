import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from "fastify";
import type { Allowance } from "../../core/domain/allowance.ts";
import { ApiError } from "../../core/domain/errors.ts";
import { type Awaitable, whenReady } from "../../core/ports/awaitable.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import type { Clock } from "../../core/runtime/time.ts";

/** One limit: `max(request)` requests per `windowMs` for each `key(request)`, counted in `store`. */
export type RateLimit = {
  store: RateLimitStore;
  clock: Clock;
  windowMs: number;
  max: (request: FastifyRequest) => number;
  /** The counter's key: its scope first (`api:`, `capture:`, `sign-in:`), so scopes never share one. */
  key: (request: FastifyRequest) => string;
  /** What a refused request is told; `retryS` is whole seconds. */
  refusal: (max: number, retryS: number) => string;
};

/** Whole seconds until an allowance's window resets, at least 1: RateLimit-Reset's and Retry-After's value. */
const resetSeconds = (a: Allowance): number => Math.max(1, Math.ceil(a.resetMs / 1000));

/** The RateLimit-* headers (IETF draft) of an allowance under `limit`: every limiter's, refused or not. */
export function rateLimitHeaders(limit: number, a: Allowance): Record<string, string> {
  return {
    "ratelimit-limit": String(limit),
    "ratelimit-remaining": String(Math.max(0, limit - a.used)),
    "ratelimit-reset": String(resetSeconds(a)),
  };
}

/**
 * Every rate limit of the service, as a hook (onRequest, or preHandler where the body decides
 * nothing but the route must be known): headers per the IETF draft (RateLimit-Limit,
 * RateLimit-Remaining, RateLimit-Reset, and Retry-After when refused) and 429 `rate_limited`. The
 * counters are the store's (in a cluster, every API replica's); the store out of reach (NATS down)
 * lets requests through rather than refuse them all. Failed authentications have a limiter of their
 * own (failed-auth-limit.ts), counted only once a credential has failed.
 *
 * A callback hook that takes from the store once and goes on at once where the store answers at
 * once (core/ports/awaitable.ts): @fastify/rate-limit,
 * which this replaced, awaited its key generator, its limit and the store in turn (five promises a
 * request; its share of a GET's CPU: docs/benchmarks.md).
 */
export function rateLimit(limit: RateLimit): onRequestHookHandler & preHandlerHookHandler {
  return (request, reply, done) => {
    const max = limit.max(request);
    const answer = (a: Allowance) => {
      reply.headers(rateLimitHeaders(max, a));
      if (a.allowed) return done();
      const resetS = resetSeconds(a);
      reply.header("retry-after", resetS);
      done(new ApiError("rate_limited", limit.refusal(max, resetS)));
    };
    const key = limit.key(request);
    const now = limit.clock.now();
    let taken: Awaitable<Allowance>;
    try {
      taken = limit.store.take(key, max, limit.windowMs, now);
    } catch {
      return done(); // the store out of reach: the request goes through
    }
    whenReady(taken, answer, () => done());
  };
}

const seconds = (n: number) => `${n} second${n === 1 ? "" : "s"}`;

/** /v1: per API key, per second, live and test limits apart; added after authentication's hook, so it counts per authenticated key. */
export function perKeyRateLimit(limits: { livePerSecond: number; testPerSecond: number }, store: RateLimitStore, clock: Clock) {
  return rateLimit({
    store,
    clock,
    windowMs: 1000,
    max: (request) => (request.scope.livemode ? limits.livePerSecond : limits.testPerSecond),
    key: (request) => `api:${request.scope.livemode ? "live" : "test"}:${request.apiKeyId}`,
    refusal: (max, retryS) => `Too many requests: at most ${max} a second with this key; retry after ${seconds(retryS)}.`,
  });
}

/** The capture API: per capture link and client address, per second; a phone uploading ten photos never comes near it. */
export function perLinkRateLimit(perSecond: number, store: RateLimitStore, clock: Clock) {
  return rateLimit({
    store,
    clock,
    windowMs: 1000,
    max: () => perSecond,
    key: (request) => `capture:${request.ip}:${(request.params as { token?: string }).token ?? ""}`,
    refusal: (max, retryS) => `Too many requests: at most ${max} a second for this capture link; retry after ${seconds(retryS)}.`,
  });
}

/** The dashboard's sign-in: per client address, per minute, right or wrong (each try costs an argon2 verification). */
export function signInRateLimit(perMinute: number, store: RateLimitStore, clock: Clock) {
  return rateLimit({
    store,
    clock,
    windowMs: 60_000,
    max: () => perMinute,
    key: (request) => `sign-in:${request.ip}`,
    refusal: (_max, retryS) => `Too many attempts; retry after ${seconds(retryS)}.`,
  });
}
