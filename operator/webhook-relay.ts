import type { Logger } from "pino";
import type { Bus } from "../core/ports/bus.ts";
import type { EventStore } from "../core/ports/event-store.ts";
import type { EventRecord } from "../core/ports/records.ts";
import type { Clock } from "../core/runtime/time.ts";

/** A `webhooks` message: where to find the event. Its delivery state is read from the store, never from here. */
export type WebhookMessage = { eventId: string; accountId: string; livemode: boolean; scheduleFrom: number };

/**
 * The message id: the event's id and its schedule start. Publishing an event again (after a crash
 * between publishing and marking it) is stored once; a resend, which starts a new schedule, is a
 * message of its own.
 */
export const webhookMessageId = (e: Pick<EventRecord, "id" | "scheduleFrom">): string => `${e.id}.${e.scheduleFrom}`;

const BATCH = 100;
/**
 * How often the relay looks for overdue events. An event is overdue only past the ack wait and the
 * duplicate window (minutes): looking every poll would repeat the last look's answer four times a second.
 */
const SWEEP_EVERY_MS = 60_000;

export type WebhookRelayOptions = {
  events: EventStore;
  bus: Bus;
  log: Logger;
  clock: Clock;
  pollMs: number;
  /**
   * How long past its next attempt a published pending event may wait before its message is
   * presumed lost from the bus and published again. Longer than a message can be held by the bus
   * without a delivery (a consumer's ack wait, plus a nak's delay being late), and than the bus's
   * duplicate window, so the new publish is not dropped as a duplicate of the lost one.
   */
  stalledAfterMs: number;
};

/**
 * Cluster mode's outbox relay: the outbox (EventStore) stays the source of truth, appended with the
 * move it describes; this loop publishes each pending event not yet published to the `webhooks`
 * topic, then marks it published. A crash between the two publishes it again, deduplicated by its
 * message id; an event resent through the API is unpublished again and published as a new message.
 * An event whose message the bus lost (dead-lettered because the store failed on its last delivery,
 * or purged) is found overdue and published again, so none stays pending for good.
 */
export class WebhookRelay {
  readonly #o: WebhookRelayOptions;
  #loop: Promise<void> | undefined;
  #stopped = false;
  #nudged = false;
  #wake: (() => void) | undefined;
  #sweptAt = Number.NEGATIVE_INFINITY;

  constructor(options: WebhookRelayOptions) {
    this.#o = options;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Looks now rather than at the next poll (an event was resent in this process). */
  nudge(): void {
    this.#nudged = true;
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let full = false;
      try {
        full = (await this.#pass()) === BATCH;
      } catch (err) {
        this.#o.log.warn({ err }, "relaying webhook events to the bus failed; trying again at the next poll");
      }
      if (!full) await this.#sleep();
    }
  }

  /** Publishes one batch, and what has stalled; returns how many it found. */
  async #pass(): Promise<number> {
    const { events, log, clock, stalledAfterMs } = this.#o;
    const pending = await events.unpublished(BATCH);
    for (const e of pending) {
      if (this.#stopped) break;
      await this.#publish(e);
      await events.markPublished(e.id, e.scheduleFrom);
      log.debug({ event_id: e.id, schedule_from: e.scheduleFrom }, "webhook event published to the bus");
    }
    const now = clock.now();
    if (now - this.#sweptAt < Math.min(stalledAfterMs, SWEEP_EVERY_MS)) return pending.length;
    const stalled = await events.stalled(now - stalledAfterMs, BATCH);
    // A full batch is looked at again on the next pass; otherwise not before the next sweep is due.
    if (stalled.length < BATCH) this.#sweptAt = now;
    for (const e of stalled) {
      if (this.#stopped) break;
      await this.#publish(e);
      log.warn(
        { event_id: e.id, next_attempt_at: new Date(e.nextAttemptAt ?? 0).toISOString() },
        "webhook event overdue: its message was lost from the bus; published again",
      );
    }
    return Math.max(pending.length, stalled.length);
  }

  async #publish(e: EventRecord): Promise<void> {
    const message: WebhookMessage = { eventId: e.id, accountId: e.accountId, livemode: e.livemode, scheduleFrom: e.scheduleFrom };
    await this.#o.bus.publish("webhooks", webhookMessageId(e), JSON.stringify(message));
  }

  /** Until the next poll, a nudge or stop. */
  async #sleep(): Promise<void> {
    if (!this.#nudged && !this.#stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.#wake?.(), this.#o.pollMs);
        this.#wake = () => {
          clearTimeout(timer);
          this.#wake = undefined;
          resolve();
        };
      });
    }
    this.#nudged = false;
  }
}
