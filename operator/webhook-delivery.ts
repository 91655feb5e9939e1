import type { Logger } from "pino";
import { nextAttemptAt } from "../core/domain/delivery-schedule.ts";
import { webhookHeaders } from "../core/domain/webhook-signature.ts";
import { newWebhookSecret } from "../core/domain/ids.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import type { WebhookClient } from "../core/net/webhook-client.ts";
import type { EventStore } from "../core/ports/event-store.ts";
import type { KeyStore } from "../core/ports/key-store.ts";
import type { EventRecord } from "../core/ports/records.ts";
import type { Clock } from "../core/runtime/time.ts";

export type DeliveryParts = {
  events: EventStore;
  keys: KeyStore;
  clock: Clock;
  log: Logger;
  retryScheduleMs: number[];
  client: WebhookClient;
  /** Where each attempt's outcome is counted. */
  metrics?: Metrics;
};

/**
 * One attempt at an event's delivery, whoever schedules it (the outbox poller of the embedded mode,
 * the bus consumer of the cluster): sign, POST, record the attempt, and move the delivery on.
 * Returns when the next attempt is due, or null once the delivery is settled: succeeded, or failed
 * for good because the schedule's attempts are used up or `last` says no other attempt will come.
 */
export async function attemptDelivery(p: DeliveryParts, event: EventRecord, last = false): Promise<number | null> {
  const started = p.clock.now();
  const secrets = await p.keys.webhookSecretFor(event.accountId, event.livemode, newWebhookSecret, started);
  const headers = webhookHeaders(secrets, event.id, Math.floor(started / 1000), event.data);
  const { statusCode, latencyMs, error } = await p.client.post(event.notifyUrl!, headers, event.data);
  const n = event.attemptCount + 1;
  const attempt = { eventId: event.id, n, attemptedAt: started, statusCode, latencyMs, error };
  if (error === null) {
    await p.events.recordAttempt(attempt, { status: "succeeded" });
    p.metrics?.webhookAttempts.inc({ outcome: "succeeded" });
    return null;
  }
  // A resend starts the schedule again: its attempts are counted from the resend.
  const next = last ? null : nextAttemptAt(p.clock.now(), n - event.scheduleFrom, p.retryScheduleMs);
  p.metrics?.webhookAttempts.inc({ outcome: next === null ? "failed" : "retry" });
  if (next === null) {
    await p.events.recordAttempt(attempt, { status: "failed" });
    p.log.warn({ event_id: event.id, attempts: n, error }, "webhook delivery failed for good: attempts used up");
  } else {
    await p.events.recordAttempt(attempt, { nextAttemptAt: next });
    p.log.info(
      { event_id: event.id, attempt: n, error, next_attempt_at: new Date(next).toISOString() },
      "webhook delivery failed; will retry",
    );
  }
  return next;
}
