import { byChange, listed, moved, needsReconcile, newestFirst, takesPhotos } from "../../domain/inspection-queries.ts";
import { REVIEWED, type Status } from "../../domain/state-machine.ts";
import {
  UNSTARTED,
  type EventFactory,
  type EventsFactory,
  eventsMade,
  type InspectionStore,
  sameMedia,
  type ListFilter,
  type PutPhotoResult,
  type TooManyReviews,
  tooManyReviews,
  type TransitionPatch,
} from "../../ports/inspection-store.ts";
import { MAX_REVIEWS, type ReviewRecord } from "../../domain/review.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord, Scope } from "../../ports/records.ts";
import { appendEvent } from "./memory-event-store.ts";
import { constraint, photoPlace, snapshot, type MemoryState, type StoredPhoto } from "./memory-state.ts";

/** Inspections, photos and media in memory; moves append their events to the same state. */
export class MemoryInspectionStore implements InspectionStore {
  readonly #state: MemoryState;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  async create(r: InspectionRecord, captureTokenHash: string, event: EventFactory): Promise<void> {
    const stored = snapshot({ ...r, ...UNSTARTED });
    const e = event(stored);
    constraint(!this.#state.inspections.has(r.id), "inspections.id");
    constraint(!this.#state.captureTokens.has(captureTokenHash), "inspections.capture_token_hash");
    appendEvent(this.#state, stored, r.createdAt, e);
    this.#state.inspections.set(r.id, stored);
    this.#state.captureTokens.set(captureTokenHash, r.id);
    this.#state.inspectionWrites.emit(r.id);
  }

  get(scope: Scope, id: string): InspectionRecord | null {
    const found = this.#state.inspections.get(id);
    return found && found.accountId === scope.accountId && found.livemode === scope.livemode ? found : null;
  }

  async getById(id: string): Promise<InspectionRecord | null> {
    return this.#state.inspections.get(id) ?? null;
  }

  async getByCaptureTokenHash(hash: string): Promise<InspectionRecord | null> {
    const id = this.#state.captureTokens.get(hash);
    return id === undefined ? null : this.#state.inspections.get(id)!;
  }

  async list(scope: Scope, f: ListFilter): Promise<InspectionRecord[]> {
    return [...this.#state.inspections.values()]
      .filter((r) => listed(r, scope, f))
      .sort(newestFirst)
      .slice(0, f.limit);
  }

  async countByStatus(): Promise<Map<Status, number>> {
    const counts = new Map<Status, number>();
    for (const r of this.#state.inspections.values()) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    return counts;
  }

  async changedSince(after: { updatedAt: number; id: string } | null, limit: number): Promise<InspectionRecord[]> {
    return [...this.#state.inspections.values()]
      .filter((r) => after === null || byChange(r, after) > 0)
      .sort(byChange)
      .slice(0, limit);
  }

  async recordOpened(id: string, at: number): Promise<void> {
    this.#intent(id, (r) => ({ openedAt: r.openedAt ?? at }));
  }

  async recordSubmitRequested(id: string, at: number): Promise<void> {
    this.#intent(id, (r) => ({ submitRequestedAt: r.submitRequestedAt ?? at }));
  }

  async recordCancelRequested(id: string, at: number): Promise<void> {
    this.#intent(id, (r) => ({ cancelRequestedAt: r.cancelRequestedAt ?? at }));
  }

  /** Records an intent, the first one of its kind kept, and marks the inspection for reconcile. */
  #intent(id: string, change: (r: InspectionRecord) => Partial<InspectionRecord>): void {
    this.#update(id, (r) => ({ ...change(r), reconcileGeneration: r.reconcileGeneration + 1 }));
    this.#state.inspectionWrites.emit(id);
  }

  async recordVinObserved(id: string, vin: string): Promise<void> {
    this.#update(id, () => ({ vinObserved: vin }));
  }

  async recordVehicle(id: string, vehicle: Pick<InspectionRecord, "make" | "model" | "year">): Promise<void> {
    this.#update(id, (r) => (r.make === null ? { make: vehicle.make, model: vehicle.model, year: vehicle.year } : {}));
  }

  #update(id: string, change: (r: InspectionRecord) => Partial<InspectionRecord>): void {
    const r = this.#state.inspections.get(id);
    if (r) this.#state.inspections.set(id, snapshot({ ...r, ...change(r) }));
  }

  /** Every adapter over this state hears the writes of every other: the state is all there is. */
  readonly watchReach = "process";

  watch(listener: (inspectionId: string) => void): () => void {
    return this.#state.inspectionWrites.add(listener);
  }

  async needingReconcile(now: number, limit: number): Promise<InspectionRecord[]> {
    const due: InspectionRecord[] = [];
    for (const r of this.#state.inspections.values()) {
      if (due.length >= limit) break;
      if (needsReconcile(r, now)) due.push(r);
    }
    return due;
  }

  async clearReconcile(id: string, generation: number): Promise<void> {
    // Only clears when no intent arrived since the controller read it; else it stays due.
    this.#update(id, (r) => (r.reconcileGeneration === generation ? { reconcileGeneration: 0 } : {}));
  }

  async transition(
    id: string,
    from: Status,
    to: Status,
    at: number,
    patch: TransitionPatch,
    events: EventsFactory,
  ): Promise<InspectionRecord | null> {
    const r = this.#state.inspections.get(id);
    if (!r || r.status !== from) return null;
    return this.#write(snapshot({ ...r, status: to, updatedAt: at, ...moved(patch) }), at, events);
  }

  async recordReview(id: string, review: ReviewRecord, events: EventsFactory): Promise<InspectionRecord | TooManyReviews | null> {
    // Counted and written with no await between: no other write of this state lands in between.
    const r = this.#state.inspections.get(id);
    if (r?.status !== "completed") return null;
    const reviews = this.#state.events.filter((e) => e.inspectionId === id && e.type === REVIEWED).length;
    if (reviews >= MAX_REVIEWS) return tooManyReviews(reviews);
    return this.#write(
      snapshot({ ...r, review, summary: { new_findings: null, ...review.summary }, updatedAt: review.at }),
      review.at,
      events,
    );
  }

  #write(after: InspectionRecord, at: number, events: EventsFactory): InspectionRecord {
    const made = eventsMade(events(after));
    for (const e of made) constraint(!this.#state.eventSeq.has(e.id), "events.id");
    for (const e of made) appendEvent(this.#state, after, at, e);
    this.#state.inspections.set(after.id, after);
    return after;
  }

  async scheduleProcessingRetry(id: string, attempts: number, dueAt: number): Promise<void> {
    this.#update(id, () => ({ processingAttempts: attempts, processingDueAt: dueAt }));
  }

  async putPhoto(p: PhotoRecord, m: MediaRecord): Promise<PutPhotoResult> {
    const r = this.#state.inspections.get(p.inspectionId);
    if (!r || !takesPhotos(r, p.capturedAt)) return { accepted: false };
    constraint(!this.#state.media.has(m.id), "media.id");
    const places = this.#state.photos.get(p.inspectionId) ?? new Map<string, StoredPhoto>();
    const place = photoPlace(p);
    const earlier = places.get(place);
    const replaced = earlier ? (this.#state.media.get(earlier.mediaId) ?? null) : null;
    // A retake counts one more try than the photo it replaces, whatever it says.
    const tries = earlier ? earlier.tries + 1 : p.tries;
    places.set(
      place,
      snapshot({
        inspectionId: p.inspectionId,
        angle: p.angle,
        slot: p.slot,
        part: p.part,
        mediaId: p.mediaId,
        quality: p.quality,
        tries,
        capturedAt: p.capturedAt,
      }),
    );
    this.#state.photos.set(p.inspectionId, places);
    this.#state.media.set(m.id, snapshot(m));
    if (replaced) this.#state.media.delete(replaced.id);
    return { accepted: true, replaced };
  }

  async photos(inspectionId: string): Promise<PhotoRecord[]> {
    const photos: PhotoRecord[] = [];
    for (const p of this.#state.photos.get(inspectionId)?.values() ?? []) {
      // Its size is its media's; a photo whose media is gone is not listed.
      const m = this.#state.media.get(p.mediaId);
      if (m) photos.push({ ...p, width: m.width, height: m.height });
    }
    return photos.sort((a, b) => a.capturedAt - b.capturedAt);
  }

  async putMedia(m: MediaRecord): Promise<void> {
    const held = this.#state.media.get(m.id);
    if (held && sameMedia(held, m)) return;
    constraint(!held, "media.id");
    this.#state.media.set(m.id, snapshot(m));
  }

  async getMedia(scope: Scope, id: string): Promise<MediaRecord | null> {
    const m = this.#state.media.get(id);
    return m && m.accountId === scope.accountId && m.livemode === scope.livemode ? m : null;
  }
}
