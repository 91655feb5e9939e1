import type { Status } from "../domain/state-machine.ts";
import type { Grade } from "../domain/grading.ts";
import type { Quality } from "../schemas/report.ts";
import type { ReviewPolicy, ReviewRecord } from "../domain/review.ts";
import type { CapturePlan } from "../domain/capture-plan.ts";

/** Whose data a request may see: one account, one environment. */
export type Scope = { accountId: string; livemode: boolean };

/** An inspection as stored; times are Unix milliseconds. The public shape is built by core/views/. */
export type InspectionRecord = {
  id: string;
  accountId: string;
  livemode: boolean;
  status: Status;
  reference: string | null;
  vin: string;
  make: string | null;
  model: string | null;
  year: number | null;
  notifyUrl: string | null;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
  submittedAt: number | null;
  completedAt: number | null;
  canceledAt: number | null;
  summary: { findings: number; grade: Grade; needs_review: boolean; new_findings: number | null } | null;
  failure: { code: "photos_unusable" | "processing_error"; message: string } | null;
  /** The completed inspection this one is compared with (its report's comparison); null: none. */
  baselineInspectionId: string | null;
  /** What the customer is asked to photograph (capture at creation, but expires_in: expiresAt); DEFAULT_CAPTURE_PLAN where stored before it existed. */
  capture: CapturePlan;
  /** The review policy asked for at creation; null: the account's. */
  reviewPolicy: ReviewPolicy | null;
  /** The latest review of the completed inspection, which replaced any earlier; null before one. */
  review: ReviewRecord | null;
  // Intents recorded by the API and capture routes; only the controller turns them into status.
  openedAt: number | null;
  submitRequestedAt: number | null;
  cancelRequestedAt: number | null;
  vinObserved: string | null;
  processingAttempts: number;
  processingDueAt: number | null;
  /** Counts intents not yet reconciled; the controller clears it only if no new intent came meanwhile. */
  reconcileGeneration: number;
};

/**
 * A photo of the walkaround, or a close-up (angle `closeup`): an inspection has one photo per angle,
 * and one per close-up slot.
 */
export type PhotoRecord = {
  inspectionId: string;
  angle: string;
  /** A close-up's slot (1 to MAX_CLOSEUPS); null for the other photos. */
  slot: number | null;
  /** The part a close-up shows, where the customer named one; null for the other photos. */
  part: string | null;
  mediaId: string;
  width: number;
  height: number;
  quality: Quality;
  tries: number;
  capturedAt: number;
};

export type MediaRecord = {
  id: string;
  accountId: string;
  livemode: boolean;
  inspectionId: string;
  kind: "photo" | "evidence";
  blobKey: string;
  bytes: number;
  etag: string;
  width: number;
  height: number;
  createdAt: number;
};

export type EventRecord = {
  id: string;
  accountId: string;
  livemode: boolean;
  inspectionId: string;
  type: string;
  createdAt: number;
  /** The public inspection object at that moment, as JSON. */
  data: string;
  notifyUrl: string | null;
  deliveryStatus: "pending" | "succeeded" | "failed" | "none";
  nextAttemptAt: number | null;
  attemptCount: number;
  /** The attempt count when the retry schedule last began (0, or the count at the last resend). */
  scheduleFrom: number;
};

export type DeliveryAttemptRecord = {
  eventId: string;
  n: number;
  attemptedAt: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
};
