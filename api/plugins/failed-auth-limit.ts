import type { FastifyReply, FastifyRequest } from "fastify";
import type { Allowance } from "../../core/domain/allowance.ts";
import { ApiError } from "../../core/errors.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import type { Clock } from "../../core/time.ts";

/**
 * Failed authentications per client address: an address that has used its `limit` failures in the
 * window is refused (429) before its credentials are even looked at, so API keys and capture tokens
 * cannot be guessed at full speed; then it gets one more try each `window / limit`. Only failures
 * count: a busy integration behind one address is limited per key, not here. The counters are the
 * store's (in a cluster, every API replica's), and the check reads them without counting.
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

  /** The RateLimit-* headers (IETF draft, as the per-key limiter sends them) of an address's allowance. */
  #headers(a: Allowance): Record<string, string> {
    return {
      "ratelimit-limit": String(this.#limit),
      "ratelimit-remaining": String(Math.max(0, this.#limit - a.used)),
      "ratelimit-reset": String(Math.max(1, Math.ceil(a.resetMs / 1000))),
    };
  }

  /** Throws 429 when the address has no failures left. */
  async check(address: string): Promise<void> {
    const a = await this.#store.peek(`failed-auth:${address}`, this.#limit, this.#windowMs, this.#clock.now());
    if (a.allowed) return;
    const headers = this.#headers(a);
    throw new ApiError("rate_limited", `Too many failed authentications from this address; retry after ${headers["ratelimit-reset"]} s.`, {
      headers: { ...headers, "retry-after": headers["ratelimit-reset"]! },
    });
  }

  /** Counts a failure; the headers to answer it with. */
  async record(address: string): Promise<Record<string, string>> {
    try {
      return this.#headers(await this.#store.take(`failed-auth:${address}`, this.#limit, this.#windowMs, this.#clock.now()));
    } catch {
      // The shared counters out of reach (NATS down): the failure still answers 401, uncounted,
      // as the per-key limits let requests through then (skipOnError).
      return {};
    }
  }

  /**
   * An authenticating onRequest hook, guarded: an address out of failures is refused before
   * `authenticate` runs, and a failure (`codes`) is counted and carries the address's limit. One hook
   * rather than three, since every request of the API passes through it.
   */
  guard(authenticate: (request: FastifyRequest) => Promise<void>, codes: ReadonlySet<string>) {
    return async (request: FastifyRequest) => {
      await this.check(request.ip);
      try {
        await authenticate(request);
      } catch (error) {
        if (!(error instanceof ApiError) || !codes.has(error.code)) throw error;
        const headers = await this.record(request.ip);
        throw new ApiError(error.code, error.message, { param: error.param, headers: { ...error.headers, ...headers } });
      }
    };
  }

  /**
   * Hooks for a scope whose failures surface in its routes (an unknown capture token): `onRequest`
   * refuses an address out of failures, `onError` counts a failure (`codes`) and puts the address's
   * limit on the answer.
   */
  hooks(codes: ReadonlySet<string>) {
    return {
      onRequest: async (request: FastifyRequest) => this.check(request.ip),
      onError: async (request: FastifyRequest, reply: FastifyReply, error: Error) => {
        if (!(error instanceof ApiError) || !codes.has(error.code)) return;
        reply.headers(await this.record(request.ip));
      },
    };
  }
}
