import type { ReconcileResult } from "../core/runtime/metrics.ts";
import type { Clock } from "../core/runtime/time.ts";

/** After an error a key waits 100 ms, then twice as long after each further error, up to 30 s. */
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 30_000;

/**
 * Keys to reconcile, each due at a time, handled one at a time, as controller-runtime's work queue
 * does: a key is never handled twice at once; added again while it is handled, it runs once more
 * after; a handler's error puts it back with exponential backoff without holding up other keys;
 * a handler's answer says when to look at it again.
 */
export class WorkQueue {
  readonly #due = new Map<string, number>();
  readonly #failures = new Map<string, number>();
  readonly #clock: Clock;
  readonly #handle: (key: string) => Promise<number | null>;
  readonly #onError: (key: string, error: unknown, retryInMs: number) => void;
  readonly #onResult: ((result: ReconcileResult, seconds: number) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  /** Set before a handler starts, since a handler may add keys before its promise exists. */
  #busy = false;
  #stopped = false;

  /**
   * `handle` answers in how many ms to handle the key again, or null for not unless added.
   * `onResult` is told of each run: how it ended, as controller-runtime counts reconciles, and how
   * long the handler took (wall time, whatever the clock).
   */
  constructor(options: {
    clock: Clock;
    handle: (key: string) => Promise<number | null>;
    onError: (key: string, error: unknown, retryInMs: number) => void;
    onResult?: (result: ReconcileResult, seconds: number) => void;
  }) {
    this.#clock = options.clock;
    this.#handle = options.handle;
    this.#onError = options.onError;
    this.#onResult = options.onResult;
  }

  /** Due at `at` (now unless given); a key already waiting keeps the earlier of its two times. */
  add(key: string, at = this.#clock.now()): void {
    if (this.#stopped) return;
    const waiting = this.#due.get(key);
    if (waiting === undefined || at < waiting) this.#due.set(key, at);
    this.#wake();
  }

  /** Keys due by now and not yet handled: the queue's depth, as a metric reports it. */
  dueNow(): number {
    const now = this.#clock.now();
    let due = 0;
    for (const at of this.#due.values()) if (at <= now) due++;
    return due;
  }

  /** Takes no more keys and resolves once the key being handled, if any, is done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #wake(): void {
    if (this.#busy || this.#stopped) return;
    clearTimeout(this.#timer);
    const next = this.#next();
    if (!next) {
      let earliest = Number.POSITIVE_INFINITY;
      for (const at of this.#due.values()) earliest = Math.min(earliest, at);
      if (Number.isFinite(earliest)) this.#timer = setTimeout(() => this.#wake(), Math.max(1, earliest - this.#clock.now())).unref();
      return;
    }
    this.#busy = true;
    this.#running = this.#run(next).finally(() => {
      this.#busy = false;
      this.#running = null;
      this.#wake();
    });
  }

  /** The key due first among those due now. */
  #next(): string | null {
    const now = this.#clock.now();
    let best: string | null = null;
    let bestAt = Number.POSITIVE_INFINITY;
    for (const [key, at] of this.#due) {
      if (at <= now && at < bestAt) {
        best = key;
        bestAt = at;
      }
    }
    return best;
  }

  async #run(key: string): Promise<void> {
    this.#due.delete(key);
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const again = await this.#handle(key);
      this.#onResult?.(again === null ? "success" : again > 0 ? "requeue_after" : "requeue", seconds());
      this.#failures.delete(key);
      if (again !== null) this.add(key, this.#clock.now() + again);
    } catch (error) {
      this.#onResult?.("error", seconds());
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      const wait = Math.min(BACKOFF_BASE_MS * 2 ** (failures - 1), BACKOFF_MAX_MS);
      this.#onError(key, error, wait);
      this.add(key, this.#clock.now() + wait);
    }
  }
}
