import type { Status } from "../domain/state-machine.ts";
import type { ReviewRecord } from "../domain/review.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord, Scope } from "./records.ts";
import type { Awaitable } from "./awaitable.ts";

export type ListFilter = {
  limit: number;
  /** Keyset position: rows strictly after this (created_at, id) in descending order. */
  after?: { createdAt: number; id: string };
  status?: Status;
  reference?: string;
  vin?: string;
  /** Created at or after this instant (ms; compared by the whole second, as lists order). */
  createdFrom?: number;
  /** Created before this instant (ms; compared by the whole second). */
  createdBefore?: number;
};

/** What the controller writes with a move, besides the status. */
export type TransitionPatch = Partial<Pick<InspectionRecord, "submittedAt" | "completedAt" | "canceledAt" | "summary" | "failure">>;

/**
 * What putPhoto did: stored the photo, with the media it replaced (whose blobs the caller deletes
 * now, and only now, since the row pointing at them is gone), or refused it because the capture had
 * closed, storing nothing.
 */
export type PutPhotoResult = { accepted: true; replaced: MediaRecord | null } | { accepted: false };

/**
 * recordReview's refusal of a review of an inspection that keeps MAX_REVIEWS already (`reviews`,
 * how many it keeps): nothing written, its last review stands.
 */
export type TooManyReviews = { readonly refused: "too_many_reviews"; readonly reviews: number };
export const tooManyReviews = (reviews: number): TooManyReviews => ({ refused: "too_many_reviews", reviews });

/**
 * What every inspection starts with, whatever the record given to `create` says: no move recorded,
 * no intent, no processing yet.
 */
export const UNSTARTED = {
  submittedAt: null,
  completedAt: null,
  canceledAt: null,
  summary: null,
  failure: null,
  review: null,
  openedAt: null,
  submitRequestedAt: null,
  cancelRequestedAt: null,
  vinObserved: null,
  processingAttempts: 0,
  processingDueAt: null,
  reconcileGeneration: 0,
} as const satisfies Partial<InspectionRecord>;

/** Whether a media row stored is the one given again (a replayed write): same inspection, kind and blob. */
export const sameMedia = (a: MediaRecord, b: MediaRecord): boolean =>
  a.inspectionId === b.inspectionId && a.kind === b.kind && a.blobKey === b.blobKey && a.etag === b.etag;

export type EventBody = { id: string; type: string; data: string };
/** Builds the event body for the inspection as it is after the write, inside the same transaction. */
export type EventFactory = (after: InspectionRecord) => EventBody;
/** The same, for a write that may append several events, in their order (`inspection.completed`, then `inspection.review_required`). */
export type EventsFactory = (after: InspectionRecord) => EventBody | readonly EventBody[];

/** The events an EventFactory made, as a list. */
export const eventsMade = (made: EventBody | readonly EventBody[]): readonly EventBody[] =>
  Array.isArray(made) ? made : [made as EventBody];

/**
 * Inspections, their photos and media (reports are blobs: core/operations/reports.ts). Every write of status goes through `transition`,
 * which only the controller calls; it is a compare-and-set that also appends the state-change event
 * to the outbox atomically, so no move is ever without its event.
 */
export interface InspectionStore {
  /** Stores a new inspection, UNSTARTED, with its first event; resolves once both are durable. */
  create(record: InspectionRecord, captureTokenHash: string, event: EventFactory): Promise<void>;
  /** At once from an adapter that holds the record in this process (awaitable.ts): most of an API's traffic. */
  get(scope: Scope, id: string): Awaitable<InspectionRecord | null>;
  getById(id: string): Promise<InspectionRecord | null>;
  getByCaptureTokenHash(hash: string): Promise<InspectionRecord | null>;
  list(scope: Scope, filter: ListFilter): Promise<InspectionRecord[]>;
  /** How many inspections are in each status, every account's (for the `inspections` metric); a status with none is absent. */
  countByStatus(): Promise<Map<Status, number>>;
  /**
   * Every account's inspections created or moved after `after` (a position in (updatedAt, id)
   * order; null: from the start), in that order, at most `limit`: how `migrate` and the move of an
   * SQLite store into the Inspection resources (bin/commands/move-sqlite-inspections.ts) list them all.
   */
  changedSince(after: { updatedAt: number; id: string } | null, limit: number): Promise<InspectionRecord[]>;

  // Intents (API and capture routes).
  recordOpened(id: string, at: number): Promise<void>;
  recordSubmitRequested(id: string, at: number): Promise<void>;
  recordCancelRequested(id: string, at: number): Promise<void>;
  recordVinObserved(id: string, vin: string): Promise<void>;
  /**
   * Records the make, model and year decoded from the VIN after the inspection was created (the
   * decode ran past the create's time budget), only where none is recorded yet: never over a decode
   * stored before. Moves nothing else (no event, no reconcile). Best effort: a store may leave out
   * an inspection it would have to look up first (the Kubernetes store, one its replica's cache does
   * not hold: pruned, or another replica's not yet watched); its next read decodes again.
   */
  recordVehicle(id: string, vehicle: Pick<InspectionRecord, "make" | "model" | "year">): Promise<void>;

  // Controller.
  /**
   * Calls `listener` with an inspection's id after a write to it that the controller may have to act
   * on: at least every create and every intent (open, submit, cancel, a review where it counts as
   * one), written by anyone this store can see. The controller's watch, as controller-runtime's
   * informers feed its work queue: event → key → reconcile. What reaches it depends on the adapter
   * (`watchReach`); anything it misses, the controller's resync (needingReconcile) finds.
   * Answers a function that stops the calls. A listener must not throw.
   */
  watch(listener: (inspectionId: string) => void): () => void;
  /**
   * Whose writes `watch` tells of: "process", this store object's own (SQLite, memory: another
   * process's intents need another path, the bus in cluster mode); "cluster", every writer's (the
   * Kubernetes store, from its list-watch of the API server: another replica's, kubectl's).
   */
  readonly watchReach: "process" | "cluster";
  needingReconcile(now: number, limit: number): Promise<InspectionRecord[]>;
  clearReconcile(id: string, generation: number): Promise<void>;
  transition(
    id: string,
    from: Status,
    to: Status,
    at: number,
    patch: TransitionPatch,
    events: EventsFactory,
  ): Promise<InspectionRecord | null>;
  scheduleProcessingRetry(id: string, attempts: number, dueAt: number): Promise<void>;

  // Review (API and dashboard).
  /**
   * Stores a review of a completed inspection, replacing any earlier one, with the summary it makes
   * and its `inspection.reviewed` event, atomically; null (nothing written) unless the inspection is
   * completed; TooManyReviews (nothing written) where it has MAX_REVIEWS `inspection.reviewed`
   * events already. The count and the write are one atomic step against every other write, so the
   * bound holds of reviews racing (two api replicas, the API and the dashboard): of those past it,
   * each is refused. Of two reviews racing within it, both are stored and both events kept; the
   * later write stands.
   */
  recordReview(id: string, review: ReviewRecord, event: EventFactory): Promise<InspectionRecord | TooManyReviews | null>;

  // Photos, media and reports.
  /**
   * Stores a photo of an angle with its media, replacing (and deleting the media row of) an earlier
   * photo of that angle (and, for a close-up, of that slot), but only while the capture is open: the inspection `created` or
   * `in_progress`, no submit or cancel intent recorded, and `photo.capturedAt` before expires_at.
   * The check and the write are one atomic step against every other write (intents included), so a
   * photo is either stored before the submit intent, and processing, which reads `photos()` only
   * after that intent, sees it; or it is refused. Processing therefore never reads a photo that is
   * replaced later, and nothing a report references is ever deleted.
   */
  putPhoto(photo: PhotoRecord, media: MediaRecord): Promise<PutPhotoResult>;
  photos(inspectionId: string): Promise<PhotoRecord[]>;
  /**
   * Stores a media row (an evidence photo). Storing the same row again is a no-op: a new leader
   * resuming detection writes again the evidence rows its predecessor stored before it died. A
   * different row under a taken id is refused.
   */
  putMedia(media: MediaRecord): Promise<void>;
  getMedia(scope: Scope, id: string): Promise<MediaRecord | null>;
}
