import type { FastifyInstance } from "fastify";
import rateLimit, { type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import { ApiError } from "../../core/domain/errors.ts";

/**
 * Per API key, per second (live and test limits differ). Its hook is the route's own onRequest, so
 * it runs after authentication (the scope's onRequest) and counts per authenticated key; failed
 * authentications are limited per client address before that (failed-auth-limit.ts).
 * Headers per the IETF draft: RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After.
 */
export async function registerRateLimit(
  app: FastifyInstance,
  limits: { livePerSecond: number; testPerSecond: number },
  store: FastifyRateLimitStoreCtor,
) {
  await app.register(rateLimit, {
    global: true,
    store,
    // The shared counters out of reach (NATS down) let requests through rather than refuse them all.
    skipOnError: true,
    hook: "onRequest",
    timeWindow: 1000,
    enableDraftSpec: true,
    keyGenerator: (request) => `${request.scope.livemode ? "live" : "test"}:${request.apiKeyId}`,
    max: (_request, key) => (key.startsWith("live:") ? limits.livePerSecond : limits.testPerSecond),
    errorResponseBuilder: (_request, context) =>
      new ApiError("rate_limited", `Too many requests: at most ${context.max} a second with this key; retry after ${context.after}.`),
  });
}
