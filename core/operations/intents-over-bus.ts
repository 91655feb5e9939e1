import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Bus, Subscription } from "../ports/bus.ts";
import type { Signals } from "../runtime/signals.ts";

/*
 * Capture intents between workloads. An intent (a link opened, a submit, a cancel) is recorded in
 * the store by the api; the controller, in the operator, must hear of it. In one process the
 * Signals nudge does that; across processes the api publishes the inspection's id on the bus's
 * `intents` topic and the leading operator nudges its own controller with it. The store stays the
 * source of truth and the controller still polls it, so a message lost costs only latency.
 */

/** In the api: every nudge naming an inspection is published. Answers a function that stops it. */
export function publishIntents(signals: Signals, bus: Bus, log: Logger): () => void {
  return signals.onNudge((inspectionId) => {
    if (!inspectionId) return;
    // Each intent is its own message: two intents of one inspection are two wake-ups.
    bus
      .publish("intents", randomUUID(), inspectionId)
      .catch((err) => log.warn({ err, inspection_id: inspectionId }, "publishing an intent failed; the controller's poll will find it"));
  });
}

/** In the leading operator: each intent wakes the controller for its inspection. */
export function consumeIntents(bus: Bus, signals: Signals): Promise<Subscription> {
  return bus.consume(
    "intents",
    "controller",
    async (message) => {
      signals.nudgeController(message.body);
      await message.ack();
    },
    { maxDeliver: 3, ackWaitMs: 30_000 },
  );
}
