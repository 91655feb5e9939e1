import { EventEmitter, once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { systemClock, type Clock } from "./time.ts";

/**
 * In-process wake-ups between the routes and the controller. They only shorten waits: the
 * controller also polls the store, and waiters re-read it, so processes that share the store
 * without sharing memory (the CLI, split api and operator processes) behave the same, just slower.
 */
export class Signals {
  readonly #emitter = new EventEmitter().setMaxListeners(0);
  readonly #clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** An intent was recorded on `inspectionId` (or on something unnamed): the controller should reconcile soon. */
  nudgeController(inspectionId?: string): void {
    this.#emitter.emit("nudge", inspectionId);
  }

  onNudge(listener: (inspectionId: string | undefined) => void): () => void {
    this.#emitter.on("nudge", listener);
    return () => this.#emitter.off("nudge", listener);
  }

  /** An event was put back to pending delivery (a resend): the dispatcher should look now, not at its next poll. */
  deliveryDue(): void {
    this.#emitter.emit("delivery-due");
  }

  onDeliveryDue(listener: () => void): () => void {
    this.#emitter.on("delivery-due", listener);
    return () => this.#emitter.off("delivery-due", listener);
  }

  /** The controller moved an inspection. */
  changed(inspectionId: string): void {
    this.#emitter.emit(`changed:${inspectionId}`);
  }

  /** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
  async waitFor<T>(inspectionId: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number, pollMs = 100): Promise<T> {
    const deadline = this.#clock.now() + timeoutMs;
    let value = await read();
    while (!done(value) && this.#clock.now() < deadline) {
      const ac = new AbortController();
      await Promise.race([
        once(this.#emitter, `changed:${inspectionId}`, { signal: ac.signal }).catch(() => {}),
        sleep(Math.min(pollMs, Math.max(0, deadline - this.#clock.now())), undefined, { signal: ac.signal }).catch(() => {}),
      ]);
      ac.abort();
      value = await read();
    }
    return value;
  }
}
