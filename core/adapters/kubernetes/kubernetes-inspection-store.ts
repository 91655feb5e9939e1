import { byChange, inScope, listed, moved, needsReconcile, newestFirst, takesPhotos } from "../../domain/inspection-queries.ts";
import type { Status } from "../../domain/state-machine.ts";
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
import type { CaptureRecord } from "../../schemas/inspection-resource.ts";
import { eventStamp, type InspectionRecords, withCapture } from "./inspection-records.ts";

/**
 * The inspection store of cluster mode: every inspection is an `Inspection` resource (its name the
 * id with `_` as `-`, labelled with account and environment) and the store's own record beside it,
 * an `InspectionRecord` of the same name, read through list-watch caches and written as
 * compare-and-set replaces (core/adapters/kubernetes/inspection-records.ts). The api's writes
 * (create, intents, photos) go to the record, the controller's (moves, retries, evidence) to its
 * status; each is atomic against every other write of that inspection, as the port asks.
 * Lists, filters and the reconcile scan are answered from the cache, in the port's order; a read by
 * id that the cache misses asks the API server (another replica's create) and then the archive (an
 * inspection whose resource was pruned: InspectionRecords.prune).
 */
export class KubernetesInspectionStore implements InspectionStore {
  readonly #records: InspectionRecords;

  constructor(records: InspectionRecords) {
    this.#records = records;
  }

  async create(r: InspectionRecord, captureTokenHash: string, event: EventFactory): Promise<void> {
    const stored: InspectionRecord = { ...r, ...UNSTARTED };
    const e = event(stored);
    const capture: CaptureRecord = {
      createdStatus: stored.status,
      createdAt: stored.createdAt,
      updatedAt: stored.updatedAt,
      expiresAt: stored.expiresAt,
      make: stored.make,
      model: stored.model,
      year: stored.year,
      tokenHash: captureTokenHash,
      createdEvent: { id: e.id, type: e.type, data: e.data, createdAt: stored.createdAt, seq: eventStamp() },
      openedAt: null,
      submitRequestedAt: null,
      cancelRequestedAt: null,
      vinObserved: null,
      intents: 0,
      photos: [],
      resends: [],
    };
    if (!(await this.#records.create(stored, capture))) throw new Error("constraint failed: inspections.id");
  }

  async get(scope: Scope, id: string): Promise<InspectionRecord | null> {
    const r = await this.getById(id);
    return r && inScope(r, scope) ? r : null;
  }

  async getById(id: string): Promise<InspectionRecord | null> {
    const r = (await this.#records.find(id))?.record;
    return r ? structuredClone(r) : null;
  }

  async getByCaptureTokenHash(hash: string): Promise<InspectionRecord | null> {
    const r = this.#records.byTokenHash(hash)?.record;
    return r ? structuredClone(r) : null;
  }

  /**
   * What is in the cluster and what was pruned (the archive's index), merged in the list's order;
   * only the page's pruned inspections are read from the archive. One both live and archived (its
   * prune under way) is the live one.
   */
  async list(scope: Scope, filter: ListFilter): Promise<InspectionRecord[]> {
    const live: InspectionRecord[] = [];
    for (const r of this.#records.newestFirst()) {
      if (live.length >= filter.limit) break;
      if (listed(r, scope, filter)) live.push(r);
    }
    const liveIds = new Set(live.map((r) => r.id));
    const archived = (await this.#records.archivedPage(scope, filter)).filter((a) => !liveIds.has(a.id));
    const page: ({ createdAt: number; id: string } | InspectionRecord)[] = [...live, ...archived].sort(newestFirst).slice(0, filter.limit);
    const records = await Promise.all(page.map(async (p) => ("status" in p ? p : (await this.#records.archived(p.id))?.record)));
    return records.filter((r): r is InspectionRecord => r !== undefined).map((r) => structuredClone(r));
  }

  async countByStatus(): Promise<Map<Status, number>> {
    const counts = new Map<Status, number>();
    for (const { record } of this.#records.all()) counts.set(record.status, (counts.get(record.status) ?? 0) + 1);
    return counts;
  }

  async changedSince(after: { updatedAt: number; id: string } | null, limit: number): Promise<InspectionRecord[]> {
    return this.#records
      .all()
      .map((v) => v.record)
      .filter((r) => after === null || byChange(r, after) > 0)
      .sort(byChange)
      .slice(0, limit)
      .map((r) => structuredClone(r));
  }

  recordOpened(id: string, at: number): Promise<void> {
    return this.#intent(id, (c) => ({ openedAt: c.openedAt ?? at }));
  }

  recordSubmitRequested(id: string, at: number): Promise<void> {
    return this.#intent(id, (c) => ({ submitRequestedAt: c.submitRequestedAt ?? at }));
  }

  /** Sets the spec's cancelRequested too: what kubectl shows, and what a kubectl user would set. */
  recordCancelRequested(id: string, at: number): Promise<void> {
    return this.#records.updateResource(id, undefined, (v) => ({
      answer: undefined,
      write: withCapture({ ...v.capture, cancelRequestedAt: v.capture.cancelRequestedAt ?? at, intents: v.capture.intents + 1 }, true),
    }));
  }

  /** Records an intent, the first one of its kind kept, and marks the inspection for reconcile. */
  #intent(id: string, change: (c: CaptureRecord) => Partial<CaptureRecord>): Promise<void> {
    return this.#records.updateResource(id, undefined, (v) => ({
      answer: undefined,
      write: withCapture({ ...v.capture, ...change(v.capture), intents: v.capture.intents + 1 }),
    }));
  }

  recordVinObserved(id: string, vin: string): Promise<void> {
    return this.#records.updateResource(id, undefined, (v) => ({
      answer: undefined,
      write: withCapture({ ...v.capture, vinObserved: vin }),
    }));
  }

  /**
   * Written only on a record this replica's cache holds: its own creates (but for a relist's window:
   * a list sent before the create and answered after it drops the create's own write until the watch
   * delivers it), and every other live record once watched. One it does not hold is most often
   * pruned, with nothing live to write on: looking it up on the API server would cost every read of
   * an archived inspection with no make (each read decodes again, findInspection) two 404s more. One
   * made by another replica and not yet watched is recorded by the next read that finds it cached.
   */
  recordVehicle(id: string, vehicle: Pick<InspectionRecord, "make" | "model" | "year">): Promise<void> {
    if (!this.#records.byId(id)) return Promise.resolve();
    return this.#records.updateResource(id, undefined, (v) =>
      v.capture.make === null
        ? { answer: undefined, write: withCapture({ ...v.capture, make: vehicle.make, model: vehicle.model, year: vehicle.year }) }
        : { answer: undefined },
    );
  }

  /**
   * The api's write, on the resource as its other writes are: the review and its event in the
   * capture record, counted as an intent so that the controller writes the status it makes (the
   * `Reviewed` condition). Two replicas' reviews of one inspection are compare-and-set writes one
   * after the other: both events are kept, the later review stands. The bound is counted on the
   * version each write is made on, so a review that met a newer version (409) is counted again on
   * it: past MAX_REVIEWS, it is refused.
   */
  async recordReview(id: string, review: ReviewRecord, events: EventsFactory): Promise<InspectionRecord | TooManyReviews | null> {
    const written = await this.#writeReview(id, review, events);
    if (written) return written;
    // Not completed in this replica's cache, which may not have the controller's move yet: ask the API server.
    await this.#records.refresh(id);
    return this.#writeReview(id, review, events);
  }

  #writeReview(id: string, review: ReviewRecord, events: EventsFactory): Promise<InspectionRecord | TooManyReviews | null> {
    return this.#records.updateResource(id, null as InspectionRecord | TooManyReviews | null, (v) => {
      if (v.record.status !== "completed") return { answer: null };
      // Reviews are never taken back: a cache's version that counts MAX_REVIEWS is right to refuse.
      const reviews = v.capture.reviewEvents?.length ?? 0;
      if (reviews >= MAX_REVIEWS) return { answer: tooManyReviews(reviews) };
      const after: InspectionRecord = { ...v.record, review, summary: { new_findings: null, ...review.summary }, updatedAt: review.at };
      const made = eventsMade(events(after)).map((e) => ({
        id: e.id,
        type: e.type,
        data: e.data,
        createdAt: review.at,
        seq: eventStamp(),
      }));
      const capture = { ...v.capture, review, reviewEvents: [...(v.capture.reviewEvents ?? []), ...made], intents: v.capture.intents + 1 };
      return { answer: after, write: withCapture(capture) };
    });
  }

  /** Every writer's changes, from the list-watch caches: another replica's intents, kubectl's edits. */
  readonly watchReach = "cluster";

  watch(listener: (inspectionId: string) => void): () => void {
    return this.#records.onChange(listener);
  }

  async needingReconcile(now: number, limit: number): Promise<InspectionRecord[]> {
    const due: InspectionRecord[] = [];
    for (const { record } of this.#records.all()) {
      if (due.length >= limit) break;
      if (needsReconcile(record, now)) due.push(structuredClone(record));
    }
    return due;
  }

  clearReconcile(id: string, generation: number): Promise<void> {
    // Only clears when no intent arrived since the controller read it; else it stays due.
    return this.#records.updateStatus(id, undefined, (v) => ({
      answer: undefined,
      store:
        v.record.reconcileGeneration === generation && generation > 0
          ? { ...v.store, reconciledIntents: v.capture.intents, reconciledGeneration: v.object.metadata?.generation ?? 1 }
          : undefined,
    }));
  }

  transition(
    id: string,
    from: Status,
    to: Status,
    at: number,
    patch: TransitionPatch,
    events: EventsFactory,
  ): Promise<InspectionRecord | null> {
    return this.#records.updateStatus(id, null, (v) => {
      if (v.record.status !== from) return { answer: null };
      const after: InspectionRecord = { ...v.record, status: to, updatedAt: at, ...moved(patch) };
      const made = eventsMade(events(after)).map((e) => ({ id: e.id, type: e.type, data: e.data, createdAt: at, seq: eventStamp() }));
      const { submittedAt, completedAt, canceledAt, summary, failure } = after;
      return {
        answer: after,
        store: {
          ...v.store,
          status: to,
          updatedAt: at,
          submittedAt,
          completedAt,
          canceledAt,
          summary,
          failure,
          events: [...v.store.events, ...made],
        },
      };
    });
  }

  scheduleProcessingRetry(id: string, attempts: number, dueAt: number): Promise<void> {
    return this.#records.updateStatus(id, undefined, (v) => ({
      answer: undefined,
      store: { ...v.store, processingAttempts: attempts, processingDueAt: dueAt },
    }));
  }

  putPhoto(p: PhotoRecord, m: MediaRecord): Promise<PutPhotoResult> {
    return this.#records.updateResource(p.inspectionId, { accepted: false } as PutPhotoResult, (v) => {
      if (!takesPhotos(v.record, p.capturedAt)) return { answer: { accepted: false } };
      if (this.#records.byMediaId(m.id)) throw new Error("constraint failed: media.id");
      const earlier = v.capture.photos.find((x) => x.angle === p.angle && (x.slot ?? null) === p.slot);
      // A retake counts one more try than the photo it replaces, whatever it says.
      const photo = {
        angle: p.angle,
        ...(p.slot === null ? {} : { slot: p.slot, part: p.part }),
        mediaId: p.mediaId,
        quality: p.quality,
        tries: earlier ? earlier.tries + 1 : p.tries,
        capturedAt: p.capturedAt,
        media: m,
      };
      const photos = earlier ? v.capture.photos.map((x) => (x === earlier ? photo : x)) : [...v.capture.photos, photo];
      return {
        answer: { accepted: true, replaced: earlier ? { ...earlier.media } : null },
        write: withCapture({ ...v.capture, photos }),
      };
    });
  }

  async photos(inspectionId: string): Promise<PhotoRecord[]> {
    const v = await this.#records.find(inspectionId);
    if (!v) return [];
    return v.capture.photos
      .map(({ media, ...p }) => ({
        ...p,
        inspectionId,
        slot: p.slot ?? null,
        part: p.part ?? null,
        quality: structuredClone(p.quality),
        width: media.width,
        height: media.height,
      }))
      .sort((a, b) => a.capturedAt - b.capturedAt);
  }

  putMedia(m: MediaRecord): Promise<void> {
    return this.#records.updateStatus(m.inspectionId, undefined, (v) => {
      const held = v.store.media.find((x) => x.id === m.id);
      if (held && sameMedia(held, m)) return { answer: undefined };
      if (this.#records.byMediaId(m.id)) throw new Error("constraint failed: media.id");
      return { answer: undefined, store: { ...v.store, media: [...v.store.media, m] } };
    });
  }

  async getMedia(scope: Scope, id: string): Promise<MediaRecord | null> {
    const v = await this.#records.findByMediaId(id);
    const m = v && (v.capture.photos.find((p) => p.mediaId === id)?.media ?? v.store.media.find((x) => x.id === id));
    return m && inScope(m, scope) ? { ...m } : null;
  }
}
