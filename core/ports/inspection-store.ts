import type { Status } from "../domain/state-machine.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord, Scope } from "./records.ts";

export type ListFilter = {
  limit: number;
  /** Keyset position: rows strictly after this (created_at, id) in descending order. */
  after?: { createdAt: number; id: string };
  status?: Status;
  reference?: string;
  vin?: string;
};

/** What the controller writes with a move, besides the status. */
export type TransitionPatch = Partial<Pick<InspectionRecord, "submittedAt" | "completedAt" | "canceledAt" | "summary" | "failure">> & {
  report?: string;
};

/** Builds the event body for the inspection as it is after the move, inside the same transaction. */
export type EventFactory = (after: InspectionRecord) => { id: string; type: string; data: string };

/**
 * Inspections, their photos, media and reports. Every write of status goes through `transition`,
 * which only the controller calls; it is a compare-and-set that also appends the state-change event
 * to the outbox atomically, so no move is ever without its event.
 */
export interface InspectionStore {
  /** Stores a new inspection with its first event; resolves once both are durable. */
  create(record: InspectionRecord, captureTokenHash: string, event: EventFactory): Promise<void>;
  get(scope: Scope, id: string): InspectionRecord | null;
  getById(id: string): InspectionRecord | null;
  getByCaptureTokenHash(hash: string): InspectionRecord | null;
  list(scope: Scope, filter: ListFilter): InspectionRecord[];

  // Intents (API and capture routes).
  recordOpened(id: string, at: number): void;
  recordSubmitRequested(id: string, at: number): void;
  recordCancelRequested(id: string, at: number): void;
  recordVinObserved(id: string, vin: string): void;

  // Controller.
  needingReconcile(now: number, limit: number): InspectionRecord[];
  clearReconcile(id: string, generation: number): void;
  transition(id: string, from: Status, to: Status, at: number, patch: TransitionPatch, event: EventFactory): InspectionRecord | null;
  scheduleProcessingRetry(id: string, attempts: number, dueAt: number): void;

  // Photos, media and reports.
  putPhoto(photo: PhotoRecord, media: MediaRecord): { replaced: MediaRecord | null };
  photos(inspectionId: string): PhotoRecord[];
  putMedia(media: MediaRecord): void;
  getMedia(scope: Scope, id: string): MediaRecord | null;
  getReport(inspectionId: string): string | null;
}
