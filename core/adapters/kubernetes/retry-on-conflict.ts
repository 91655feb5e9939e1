import { ApiException } from "@kubernetes/client-node";
import { apiStatus, CONFLICT } from "./api-status.ts";

/**
 * The conflict policy of every write made in-line (an api request's, a store operation's) on an
 * Inspection or InspectionRecord, after client-go's retry.RetryOnConflict: the object is read, the
 * change applied to it and written on the resourceVersion read; a 409 (someone wrote it since)
 * waits a jittered pause, reads it again and applies the change again, until `budgetMs` has
 * passed, then gives up with ConflictRetriesExhausted. Any other failure ends it at once. The
 * pauses double from `firstPauseMs` up to `maxPauseMs`, each a random part of that (full jitter),
 * so that writers racing on one object spread out instead of colliding again at once. The budget
 * is a time, not client-go's 5 steps: 27 writers racing on one inspection can each lose 26 times.
 * Reconcilers (the work-queue path) do not use it: a 409 there is queued again with the queue's
 * backoff, as controller-runtime does (operator/work-queue.ts).
 */
export type ConflictBackoff = {
  readonly firstPauseMs: number;
  readonly factor: number;
  readonly maxPauseMs: number;
  readonly budgetMs: number;
};

export const INLINE_WRITE_BACKOFF: ConflictBackoff = { firstPauseMs: 10, factor: 2, maxPauseMs: 200, budgetMs: 15_000 };

/** A write that met a newer version on every try of its budget. A 409 still (`apiStatus`), the last conflict its cause. */
export class ConflictRetriesExhausted extends ApiException<unknown> {
  constructor(what: string, tries: number, ms: number, last: unknown) {
    const body = last instanceof ApiException ? last.body : undefined;
    super(CONFLICT, `${what}: gave up after ${tries} writes refused with 409 Conflict in ${ms} ms`, body, {});
    this.name = "ConflictRetriesExhausted";
    this.message = `${what}: gave up after ${tries} writes refused with 409 Conflict in ${ms} ms`;
    this.cause = last;
  }
}

export type RetryOptions = {
  readonly backoff?: ConflictBackoff;
  /** Called on each 409 met (before its pause). */
  readonly onConflict?: () => void;
  /** For the tests: the pause, the jitter's source and the clock. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  readonly now?: () => number;
};

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `read` gives the object as it stands (`attempt` 0: the first read, which may be a cache's; from
 * 1, after a 409: it must be read from the API server, the cache may not have the newer version
 * yet); `apply` makes the change on it and writes it. Answers what `apply` answers.
 */
export async function retryOnConflict<V, R>(
  what: string,
  read: (attempt: number) => V | Promise<V>,
  apply: (current: V) => Promise<R>,
  options: RetryOptions = {},
): Promise<R> {
  const { backoff = INLINE_WRITE_BACKOFF, sleep = pause, random = Math.random, now = Date.now } = options;
  const started = now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await apply(await read(attempt));
    } catch (error) {
      if (apiStatus(error) !== CONFLICT) throw error;
      options.onConflict?.();
      const elapsed = now() - started;
      if (elapsed >= backoff.budgetMs) throw new ConflictRetriesExhausted(what, attempt + 1, elapsed, error);
      const ceiling = Math.min(backoff.firstPauseMs * backoff.factor ** attempt, backoff.maxPauseMs);
      await sleep(Math.min(random() * ceiling, backoff.budgetMs - elapsed));
    }
  }
}
