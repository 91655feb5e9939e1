import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyError, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import type { Allowance } from "../../core/domain/allowance.ts";
import { ApiError } from "../../core/domain/errors.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import type { Clock } from "../../core/runtime/time.ts";
import { sendError, toApiError } from "./error-handler.ts";
import { type Awaitable, whenReady } from "../../core/ports/awaitable.ts";
import type { Authentication } from "./auth.ts";
import { rateLimitHeaders } from "./rate-limit.ts";

/** The longest a refused failure is held before its answer: a held answer is a timer and an open connection. */
const MAX_HOLD_MS = 1_000;

/**
 * Failed authentications per client address, counted only once a credential has failed: a valid
 * API key or capture token is looked up and let through whatever its address did, so a stale key
 * retried in a loop behind a shared egress address (an office, a cluster's NAT) locks no other
 * client out. An address that has used its `limit` failures in the window has each further failure
 * answered 429 with Retry-After, and held until the address would be allowed one more (at most
 * MAX_HOLD_MS): a guesser gets one answer a second per open connection at the default limit, and
 * each guess is one in 2^206 (docs/api.md, "Authentication and rate limits"). Successes never read
 * the counters, so the API's usual request costs nothing here. The counters are the store's (in a
 * cluster, every API replica's).
 */
export class FailedAuthLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #store: RateLimitStore;

  constructor(options: { limit: number; windowMs: number; clock: Clock; store: RateLimitStore }) {
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#clock = options.clock;
    this.#store = options.store;
  }

  /**
   * Counts a failed authentication from `address`; the error to answer it with: the failure itself
   * with the address's RateLimit-* while it has failures left, else 429, once held.
   */
  async refusal(address: string, failure: ApiError): Promise<ApiError> {
    let a: Allowance;
    try {
      a = await this.#store.take(`failed-auth:${address}`, this.#limit, this.#windowMs, this.#clock.now());
    } catch {
      // The shared counters out of reach (NATS down): the failure is answered as it is, uncounted,
      // as the per-key limits let requests through then (skipOnError).
      return failure;
    }
    const headers = rateLimitHeaders(this.#limit, a);
    if (a.allowed)
      return new ApiError(failure.code, failure.message, { param: failure.param, headers: { ...failure.headers, ...headers } });
    await sleep(Math.min(a.resetMs, MAX_HOLD_MS));
    return new ApiError("rate_limited", `Too many failed authentications from this address; retry after ${headers["ratelimit-reset"]} s.`, {
      headers: { ...headers, "retry-after": headers["ratelimit-reset"]! },
    });
  }

  /**
   * An authenticating onRequest hook, guarded: a failure (`codes`) is counted and answered as
   * `refusal` says. One hook rather than two, since every request of the API passes through it, and
   * a callback one: an async wrapper would cost each request another promise and turn of the
   * microtask queue.
   */
  guard(authenticate: (request: FastifyRequest) => Awaitable<Authentication>, codes: ReadonlySet<string>): onRequestHookHandler {
    const settle = (request: FastifyRequest, done: (error?: Error) => void, refused: Authentication) => {
      if (refused === null) return done();
      if (!codes.has(refused.code)) return done(refused);
      this.refusal(request.ip, refused).then(done, done);
    };
    return (request, _reply, done) => {
      let outcome: Awaitable<Authentication>;
      try {
        outcome = authenticate(request);
      } catch (error) {
        return done(error as Error);
      }
      // A lookup that failed (the key store out of reach) is the error handler's, never a pass.
      whenReady(
        outcome,
        (refused) => settle(request, done, refused),
        (error) => done(error instanceof Error ? error : new Error(`the API key's lookup failed: ${String(error)}`)),
      );
    };
  }

  /**
   * The error handler of a scope whose failed authentications surface in its routes (an unknown
   * capture token): the error shaped as everywhere (error-handler.ts), a failure (`codes`) counted
   * and answered as `refusal` says.
   */
  errorHandler(codes: ReadonlySet<string>) {
    return async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const apiError = toApiError(error, request);
      return sendError(reply, request, codes.has(apiError.code) ? await this.refusal(request.ip, apiError) : apiError);
    };
  }
}
