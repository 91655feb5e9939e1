import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import type { Clock } from "../../core/runtime/time.ts";

type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;

/**
 * A `store` for @fastify/rate-limit over the RateLimitStore port, so its limits count in the
 * service's store (in a cluster, shared by every API replica) rather than in the plugin's own LRU.
 * `current` above `max` is how the plugin knows a request is refused; `ttl` becomes RateLimit-Reset
 * and, when refused, Retry-After. A route with its own limit (`child`) counts under its own keys.
 */
export function sharedRateLimitStore(store: RateLimitStore, clock: Clock, namespace: string) {
  return class SharedRateLimitStore {
    readonly #prefix: string;

    constructor(_params?: unknown, prefix = namespace) {
      this.#prefix = prefix;
    }

    incr(key: string, done: Callback, timeWindow: number, max: number): void {
      store.take(`${this.#prefix}:${key}`, max, timeWindow, clock.now()).then(
        (a) => done(null, { current: a.used, ttl: a.resetMs }),
        (error: Error) => done(error),
      );
    }

    read(key: string, done: Callback, timeWindow: number, max: number): void {
      store.peek(`${this.#prefix}:${key}`, max, timeWindow, clock.now()).then(
        (a) => done(null, { current: a.used, ttl: a.resetMs }),
        (error: Error) => done(error),
      );
    }

    // The plugin passes the route's merged limit options, the route itself under `routeInfo` (as its RedisStore reads it).
    child(options: object): SharedRateLimitStore {
      const route = (options as { routeInfo?: { method?: string | string[]; url?: string } }).routeInfo;
      return new SharedRateLimitStore(undefined, `${this.#prefix}:${[route?.method ?? ""].flat().join(",")}:${route?.url ?? ""}`);
    }
  };
}
