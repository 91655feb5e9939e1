import type { FastifyInstance } from "fastify";
import rateLimit from "@fastify/rate-limit";
import { ApiError } from "../../core/errors.ts";
import { bearerToken } from "./auth.ts";

/**
 * Per API key, per second (live and test limits differ). It runs before authentication and keys on
 * the presented token (or the client address without one), so guessing keys is rate limited too.
 * Headers per the IETF draft: RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After.
 */
export async function registerRateLimit(app: FastifyInstance, limits: { livePerSecond: number; testPerSecond: number }) {
  await app.register(rateLimit, {
    global: true,
    hook: "onRequest",
    timeWindow: 1000,
    enableDraftSpec: true,
    keyGenerator: (request) => bearerToken(request) ?? `ip:${request.ip}`,
    max: (_request, key) => (key.startsWith("sk_live_") ? limits.livePerSecond : limits.testPerSecond),
    errorResponseBuilder: (_request, context) =>
      new ApiError("rate_limited", `Too many requests: at most ${context.max} a second with this key; retry after ${context.after}.`),
  });
}
