import type { Event } from "../schemas/event.ts";
import type { DeliveryAttemptRecord, EventRecord } from "../ports/records.ts";
import { formatTimestamp } from "../runtime/time.ts";

/** The public event: the body that was (or will be) delivered, plus its delivery record. */
export function eventView(e: EventRecord, attempts: DeliveryAttemptRecord[]): Event {
  const body = JSON.parse(e.data) as Omit<Event, "delivery">;
  return {
    ...body,
    // Events stored before the inspection object had capture_token: an event never carries one.
    data: { ...body.data, capture_token: null },
    delivery: {
      status: e.deliveryStatus,
      next_attempt_at: formatTimestamp(e.nextAttemptAt),
      attempts: attempts.map((a) => ({
        number: a.n,
        attempted_at: formatTimestamp(a.attemptedAt)!,
        status_code: a.statusCode,
        latency_ms: a.latencyMs,
        error: a.error,
      })),
    },
  };
}
