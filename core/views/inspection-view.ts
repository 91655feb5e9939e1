import type { Inspection } from "../schemas/inspection.ts";
import type { InspectionRecord } from "../ports/records.ts";
import { formatTimestamp } from "../runtime/time.ts";
import type { ReviewRecord } from "../domain/review.ts";
import { REVIEWED } from "../domain/state-machine.ts";

/** An open inspection's capture link: the URL the customer opens, and its token (the URL's last segment). */
export type CaptureLink = { url: string; token: string };

/** The public inspection object of the contract, from a stored record. */
export function inspectionView(r: InspectionRecord, publicUrl: string, capture: CaptureLink | null): Inspection {
  return {
    id: r.id,
    object: "inspection",
    status: r.status,
    livemode: r.livemode,
    reference: r.reference,
    vehicle: { vin: r.vin, make: r.make, model: r.model, year: r.year },
    notify_url: r.notifyUrl,
    baseline_inspection: r.baselineInspectionId,
    capture: { ...r.capture, expires_in: Math.round((r.expiresAt - r.createdAt) / 1000) },
    capture_url: capture?.url ?? null,
    capture_token: capture?.token ?? null,
    expires_at: formatTimestamp(r.expiresAt)!,
    created_at: formatTimestamp(r.createdAt)!,
    updated_at: formatTimestamp(r.updatedAt)!,
    submitted_at: formatTimestamp(r.submittedAt),
    completed_at: formatTimestamp(r.completedAt),
    canceled_at: formatTimestamp(r.canceledAt),
    report_url: r.status === "completed" ? `${publicUrl}/v1/inspections/${r.id}/report` : null,
    summary: r.summary,
    failure: r.failure,
  };
}

/**
 * Event payloads carry the inspection without its capture_url and capture_token: events are kept
 * and re-sent for days, and the capture token must not sit in the outbox in the clear.
 */
export function eventPayload(id: string, type: string, r: InspectionRecord, publicUrl: string): string {
  return JSON.stringify({
    id,
    object: "event",
    type,
    created_at: formatTimestamp(r.updatedAt),
    livemode: r.livemode,
    data: inspectionView(r, publicUrl, null),
    ...(type === REVIEWED && r.review ? { review: eventReview(r.review) } : {}),
  });
}

/** A stored review as its event tells it. */
const eventReview = (review: ReviewRecord) => ({
  reviewed_by: review.by,
  reviewed_at: formatTimestamp(review.at),
  note: review.note,
  decisions: review.decisions,
  added: review.added,
});
