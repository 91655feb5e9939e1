import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../../core/errors.ts";
import type { Clock } from "../../core/time.ts";

/**
 * Failed authentications per client address, in fixed windows: an address that has failed `limit`
 * times in the current window is refused (429) before its credentials are even looked at, so API
 * keys and capture tokens cannot be guessed at full speed. Only failures count: a busy integration
 * behind one address is limited per key, not here.
 *
 * Counters live in this process and are dropped when their window ends, so memory is bounded by the
 * addresses that failed within one window.
 */
export class FailedAuthLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  #windowStart = 0;
  #failures = new Map<string, number>();

  constructor(options: { limit: number; windowMs: number; clock: Clock }) {
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#clock = options.clock;
  }

  #roll(): number {
    const now = this.#clock.now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now - ((now - this.#windowStart) % this.#windowMs);
      this.#failures = new Map();
    }
    return now;
  }

  /** The RateLimit-* headers (IETF draft, as the per-key limiter sends them) for this address now. */
  headers(address: string): Record<string, string> {
    const now = this.#roll();
    const used = this.#failures.get(address) ?? 0;
    const reset = Math.max(1, Math.ceil((this.#windowStart + this.#windowMs - now) / 1000));
    return {
      "ratelimit-limit": String(this.#limit),
      "ratelimit-remaining": String(Math.max(0, this.#limit - used)),
      "ratelimit-reset": String(reset),
    };
  }

  /** Throws 429 when the address has no failures left in this window. */
  check(address: string): void {
    this.#roll();
    if ((this.#failures.get(address) ?? 0) < this.#limit) return;
    const headers = this.headers(address);
    throw new ApiError("rate_limited", `Too many failed authentications from this address; retry after ${headers["ratelimit-reset"]} s.`, {
      headers: { ...headers, "retry-after": headers["ratelimit-reset"]! },
    });
  }

  record(address: string): void {
    this.#roll();
    this.#failures.set(address, (this.#failures.get(address) ?? 0) + 1);
  }

  /**
   * An authenticating onRequest hook, guarded: an address out of failures is refused before
   * `authenticate` runs, and a failure (`codes`) is counted and carries the address's limit. One hook
   * rather than three, since every request of the API passes through it.
   */
  guard(authenticate: (request: FastifyRequest) => Promise<void>, codes: ReadonlySet<string>) {
    return async (request: FastifyRequest) => {
      this.check(request.ip);
      try {
        await authenticate(request);
      } catch (error) {
        if (!(error instanceof ApiError) || !codes.has(error.code)) throw error;
        this.record(request.ip);
        throw new ApiError(error.code, error.message, { param: error.param, headers: { ...error.headers, ...this.headers(request.ip) } });
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
        this.record(request.ip);
        reply.headers(this.headers(request.ip));
      },
    };
  }
}
