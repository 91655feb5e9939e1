import type { Logger } from "pino";
import { WebhookClient } from "../core/net/webhook-client.ts";
import type { EventStore } from "../core/ports/event-store.ts";
import type { KeyStore } from "../core/ports/key-store.ts";
import type { EventRecord } from "../core/ports/records.ts";
import type { Clock } from "../core/runtime/time.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import { attemptDelivery } from "./webhook-delivery.ts";

export type DispatcherOptions = {
  events: EventStore;
  keys: KeyStore;
  clock: Clock;
  log: Logger;
  retryScheduleMs: number[];
  timeoutMs: number;
  allowPrivateTargets: boolean;
  pollMs: number;
  concurrency?: number;
  metrics?: Metrics;
};

/**
 * Delivers events from the outbox: signed per Standard Webhooks, one attempt at a time per event,
 * retried on the configured schedule, every attempt recorded. Nothing is kept in memory that a
 * restart would lose: due deliveries are read from the store on every pass.
 */
export class WebhookDispatcher {
  readonly #o: DispatcherOptions;
  readonly #client: WebhookClient;
  readonly #inFlight = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #passing = false;
  #again = false;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#client = new WebhookClient(options);
  }

  start(): void {
    this.#tick();
  }

  /** Wakes the dispatcher now (a new event was written). */
  nudge(): void {
    if (!this.#stopped) this.#tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    while (this.#inFlight.size || this.#passing) await new Promise((r) => setTimeout(r, 10));
    await this.#client.close();
  }

  /** Coalesces wake-ups: one pass at a time, and one more at once if woken during it. */
  #tick(): void {
    clearTimeout(this.#timer);
    if (this.#passing) {
      this.#again = true;
      return;
    }
    this.#passing = true;
    this.#pass()
      .catch((error) => this.#o.log.error({ err: error }, "dispatcher pass failed"))
      .finally(() => {
        this.#passing = false;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          setImmediate(() => this.#tick());
        } else this.#timer = setTimeout(() => this.#tick(), this.#o.pollMs).unref();
      });
  }

  async #pass(): Promise<void> {
    const concurrency = this.#o.concurrency ?? 16;
    if (this.#inFlight.size >= concurrency) return;
    for (const event of await this.#o.events.due(this.#o.clock.now(), concurrency)) {
      if (this.#inFlight.has(event.id) || this.#inFlight.size >= concurrency) continue;
      this.#inFlight.add(event.id);
      this.deliver(event)
        .catch((error) => this.#o.log.error({ err: error, event_id: event.id }, "delivery bookkeeping failed"))
        .finally(() => {
          this.#inFlight.delete(event.id);
          if (!this.#stopped) setImmediate(() => this.#tick());
        });
    }
  }

  /** One attempt: sign, POST, record, and schedule the next attempt or settle the event. */
  async deliver(event: EventRecord): Promise<void> {
    await attemptDelivery({ ...this.#o, client: this.#client }, event);
  }
}
