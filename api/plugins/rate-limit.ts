import type { onRequestHookHandler } from "fastify";
import { ApiError } from "../../core/domain/errors.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import type { Clock } from "../../core/runtime/time.ts";

const WINDOW_MS = 1000;

/**
 * Per API key, per second (live and test limits differ): an onRequest hook added after
 * authentication's, so it counts per authenticated key; failed authentications are limited per
 * client address before that (failed-auth-limit.ts). Headers per the IETF draft: RateLimit-Limit,
 * RateLimit-Remaining, RateLimit-Reset, and Retry-After when refused. The counters are the store's
 * (in a cluster, every API replica's) under `api:<live|test>:<key id>`; the store out of reach
 * (NATS down) lets requests through rather than refuse them all.
 *
 * What @fastify/rate-limit did here (the capture and dashboard scopes keep it), with the same
 * headers, keys and refusal: its hook awaited the key generator, the limit and the store in turn,
 * five promises a request, where this one takes from the store once and answers in its callback
 * (its share of a GET's CPU: docs/benchmarks.md).
 */
export function perKeyRateLimit(limits: { livePerSecond: number; testPerSecond: number }, store: RateLimitStore, clock: Clock) {
  const hook: onRequestHookHandler = (request, reply, done) => {
    const live = request.scope.livemode;
    const max = live ? limits.livePerSecond : limits.testPerSecond;
    store.take(`api:${live ? "live" : "test"}:${request.apiKeyId}`, max, WINDOW_MS, clock.now()).then(
      (a) => {
        const resetS = Math.ceil(a.resetMs / 1000);
        reply.header("ratelimit-limit", max);
        if (a.used <= max) {
          reply.header("ratelimit-remaining", max - a.used);
          reply.header("ratelimit-reset", resetS);
          return done();
        }
        reply.header("ratelimit-remaining", 0);
        reply.header("ratelimit-reset", resetS);
        reply.header("retry-after", resetS);
        // The window is a second, so the wait is whole seconds.
        done(
          new ApiError(
            "rate_limited",
            `Too many requests: at most ${max} a second with this key; retry after ${resetS} second${resetS === 1 ? "" : "s"}.`,
          ),
        );
      },
      () => done(),
    );
  };
  return hook;
}
