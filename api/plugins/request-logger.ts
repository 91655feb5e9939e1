import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
type Level = (typeof LEVELS)[number];

/**
 * A request's logger, made only when the request logs something: Fastify gives every request a
 * child of the app's logger (bound to its request_id), and pino's child() serializes its bindings
 * through the redaction paths each time: a cost on every request, which only the few that log need
 * (its share of a GET's CPU: docs/benchmarks.md). Logs what that child would, the same way.
 */
class RequestLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #made: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #logger(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options);
    return this.#made;
  }

  get level(): string {
    return this.#made?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  #log(level: Level, args: unknown[]): void {
    const logger = this.#logger;
    (logger[level] as (...a: unknown[]) => void).apply(logger, args);
  }

  static {
    for (const level of LEVELS) {
      Object.defineProperty(RequestLogger.prototype, level, {
        value(this: RequestLogger, ...args: unknown[]): void {
          this.#log(level, args);
        },
      });
    }
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
}

/** Fastify's childLoggerFactory option: each request's logger, made on its first line. */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  // Its log methods take what pino's do and hand them on unchanged.
  return new RequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
