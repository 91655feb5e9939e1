import { z } from "zod";
import { STATUSES } from "../domain/state-machine.ts";
import { CreateInspectionBody, Failure, Grade, Summary } from "./inspection.ts";
import { Quality, REVIEW_STATUSES } from "./report.ts";
import type { ReviewRecord } from "../domain/review.ts";

/** Where the resource lives in the Kubernetes API: the CRD's names, written once. */
export const INSPECTION_RESOURCE = { group: "inspection.dev", version: "v1", plural: "inspections", kind: "Inspection" } as const;
/**
 * Where the store keeps its own record of each inspection, beside the Inspection a person reads: the
 * capture record (spec, the api's) and the controller's bookkeeping (status), same name. Kept out of
 * the Inspection so that `kubectl describe inspection` shows what a person acts on, not the store's
 * data (issue 31), and so that neither object's size is the sum of both.
 */
export const INSPECTION_RECORD_RESOURCE = {
  group: "inspection.dev",
  version: "v1",
  plural: "inspectionrecords",
  kind: "InspectionRecord",
} as const;

/**
 * The `Inspection` custom resource of cluster mode. Its spec is the creation request (the same zod
 * schema the API validates with) plus the cancel intent; its status is written by the controller
 * only. crds/inspections.yaml is generated from these (npm run crd), never edited by hand.
 */
export const Condition = z
  .object({
    type: z.string().max(316).meta({ description: "Submitted, ReportReady, Reviewed or Recognized: one condition of each." }),
    status: z.enum(["True", "False", "Unknown"]).meta({ description: "Whether the condition holds." }),
    observedGeneration: z.number().int().min(0).optional().meta({ description: "The spec's generation it was written for." }),
    lastTransitionTime: z.iso.datetime().meta({ description: "When its status last changed." }),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
      .meta({ description: "Why, in one CamelCase word (AwaitingPhotos, Completed, ReviewRequired…)." }),
    message: z.string().max(32768).meta({ description: "Why, for a person." }),
  })
  .meta({ description: "A condition of the inspection, as metav1.Condition." });

export const InspectionSpec = CreateInspectionBody.extend({
  reference: CreateInspectionBody.shape.reference.meta({ description: "The customer's own reference for the inspection, as created." }),
  vehicle: CreateInspectionBody.shape.vehicle.meta({ description: "The vehicle inspected, by its VIN." }),
  accountId: z.string().meta({ description: "The account the inspection belongs to (acct_…)." }),
  livemode: z.boolean().meta({ description: "true for the live environment, false for test." }),
  cancelRequested: z
    .boolean()
    .optional()
    .meta({ description: "Set to true to cancel the inspection, as POST /v1/inspections/:id/cancel does; it cannot be set back." }),
}).meta({ description: "The creation request (POST /v1/inspections), immutable but for cancelRequested." });

const millis = z.number().int();
const maybeMillis = millis.nullable();

/** An event of the inspection's outbox, as its resource keeps it; `seq` orders every event (core/adapters/kubernetes/). */
export const StoredEvent = z.object({ id: z.string(), type: z.string(), createdAt: millis, seq: millis, data: z.string() });

export const StoredMedia = z.object({
  id: z.string(),
  accountId: z.string(),
  livemode: z.boolean(),
  inspectionId: z.string(),
  kind: z.enum(["photo", "evidence"]),
  blobKey: z.string(),
  bytes: millis,
  etag: z.string(),
  width: millis,
  height: millis,
  createdAt: millis,
});

/**
 * What the api keeps of an inspection: the rest of the record as created, the customer's intents
 * and photos, and the resends asked for. The spec of its InspectionRecord (INSPECTION_RECORD_RESOURCE),
 * the api's to write (its account may never write status). Releases before that kept it in the
 * Inspection's annotation CAPTURE_ANNOTATION, as JSON; the operator moves such records (`migrate`).
 */
export const CaptureRecord = z.object({
  createdStatus: z.enum(STATUSES),
  createdAt: millis,
  updatedAt: millis,
  expiresAt: millis,
  make: z.string().nullable(),
  model: z.string().nullable(),
  year: millis.nullable(),
  tokenHash: z.string(),
  createdEvent: StoredEvent,
  openedAt: maybeMillis,
  submitRequestedAt: maybeMillis,
  cancelRequestedAt: maybeMillis,
  vinObserved: z.string().nullable(),
  /** Intents recorded; the controller has reconciled `status.store.reconciledIntents` of them. */
  intents: millis,
  photos: z.array(
    z.object({
      angle: z.string(),
      /** A close-up's slot and part; absent on photos stored before close-ups, and on the other photos. */
      slot: millis.nullable().optional(),
      part: z.string().nullable().optional(),
      mediaId: z.string(),
      quality: Quality,
      tries: millis,
      capturedAt: millis,
      media: StoredMedia,
    }),
  ),
  /**
   * The latest review (core/domain/review.ts), written by the api as the rest of this record is,
   * and every review's `inspection.reviewed` event; absent before the first review.
   */
  review: z.custom<ReviewRecord>((v) => typeof v === "object" && v !== null).optional(),
  reviewEvents: z.array(StoredEvent).optional(),
  /** The `count`-th resend of an event, asked for at `at`, its schedule counted from `from` attempts. */
  resends: z.array(z.object({ eventId: z.string(), count: millis, at: millis, from: millis })),
});
export const CAPTURE_ANNOTATION = `${INSPECTION_RESOURCE.group}/capture`;
/**
 * On every resource where the resources are the store: a delete (`kubectl delete inspection`, or its
 * namespace) waits until the operator has archived the inspection, which the API then serves from the archive.
 */
export const ARCHIVE_FINALIZER = `${INSPECTION_RESOURCE.group}/archive`;

export const StoredDelivery = z.object({
  eventId: z.string(),
  status: z.enum(["pending", "succeeded", "failed", "none"]),
  nextAttemptAt: maybeMillis,
  attemptCount: millis,
  scheduleFrom: millis,
  /** The schedule start it was published to the bus at; published while this equals scheduleFrom. */
  publishedFrom: maybeMillis,
  /** The api's resends of it (CaptureRecord.resends) already taken into this delivery. */
  resendsSeen: millis,
  attempts: z.array(
    // `attempt`, not the port's `n`: YAML 1.1 (kubectl's) reads a key `n` as false.
    z.object({ attempt: millis, attemptedAt: millis, statusCode: millis.nullable(), latencyMs: millis, error: z.string().nullable() }),
  ),
});

/** What the controller keeps in the status besides what `kubectl get` shows: the record's moves, the outbox, evidence. */
export const StoreStatus = z.object({
  status: z.enum(STATUSES),
  updatedAt: millis,
  submittedAt: maybeMillis,
  completedAt: maybeMillis,
  canceledAt: maybeMillis,
  // needs_review and new_findings are absent from resources written before they existed.
  summary: Summary.partial({ needs_review: true, new_findings: true }).nullable(),
  failure: Failure.nullable(),
  processingAttempts: millis,
  processingDueAt: maybeMillis,
  reconciledIntents: millis,
  /** The spec's generation reconciled (a cancel set with kubectl raises the generation). */
  reconciledGeneration: millis,
  events: z.array(StoredEvent),
  deliveries: z.array(StoredDelivery),
  media: z.array(StoredMedia),
});

/** Seconds since the epoch are not what kubectl prints: times in the status are RFC 3339. */
const time = (description: string) => z.iso.datetime().optional().meta({ description });

export const InspectionStatus = z
  .object({
    phase: z.enum(STATUSES).optional().meta({ description: "Where the inspection is in its life: the API's status." }),
    observedGeneration: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ description: "The spec's generation this status was written for (a cancel set with kubectl raises it)." }),
    conditions: z
      .array(Condition)
      .max(8)
      .optional()
      .meta({
        description:
          "Submitted (the customer's photos are in), ReportReady (the report can be read) and Reviewed (a person reviewed it); Recognized=False on an Inspection the service did not make. One condition of each type.",
        // As metav1.Condition lists are: keyed by type, so the API server refuses two of one type.
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
      }),
    grade: Grade.optional().meta({ description: "The report's grade, once completed: the worst damage found." }),
    findings: z.number().int().min(0).optional().meta({ description: "How many damages the report lists, once completed." }),
    reportKey: z.string().max(1024).optional().meta({ description: "Where the report is in the blob store." }),
    failure: Failure.optional().meta({ description: "Why it failed, when phase is failed." }),
    submittedAt: time("When the customer submitted the photos."),
    completedAt: time("When the report was made."),
    canceledAt: time("When it was canceled."),
    expiresAt: time("When the capture link stops working."),
    review: z
      .enum(REVIEW_STATUSES)
      .optional()
      .meta({ description: "A completed inspection's review: required, completed or not_required (kubectl get's Review column)." }),
    reviewedBy: z.string().max(320).optional().meta({ description: "Who reviewed the report, once reviewed." }),
    store: z.looseObject({}).optional().meta({
      description:
        "Deprecated, read only to move it: the store's bookkeeping as releases before the InspectionRecord wrote it here. The operator moves it to the InspectionRecord of the same name and removes it.",
      "x-kubernetes-preserve-unknown-fields": true,
    }),
  })
  .meta({ description: "What the operator says of the inspection; written by the service only." });

/** The store's own record of an inspection (an InspectionRecord's spec): a copy of the creation request, and the capture record. */
export const RecordSpec = z.object({ request: InspectionSpec.omit({ cancelRequested: true }), capture: CaptureRecord });
/** The controller's part of an InspectionRecord: its bookkeeping, written through the status subresource. */
export const RecordStatus = z.object({ store: StoreStatus.optional() });

export type Condition = z.infer<typeof Condition>;
export type InspectionSpec = z.infer<typeof InspectionSpec>;
export type InspectionStatus = z.infer<typeof InspectionStatus>;
export type CaptureRecord = z.infer<typeof CaptureRecord>;
export type StoreStatus = z.infer<typeof StoreStatus>;
export type StoredEvent = z.infer<typeof StoredEvent>;
export type StoredDelivery = z.infer<typeof StoredDelivery>;
export type RecordSpec = z.infer<typeof RecordSpec>;
export type RecordStatus = z.infer<typeof RecordStatus>;
