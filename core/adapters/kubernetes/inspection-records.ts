import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { newestFirst } from "../../domain/inspection-queries.ts";
import { isTerminal } from "../../domain/state-machine.ts";
import { isId } from "../../domain/ids.ts";
import type { BlobStore } from "../../ports/blob-store.ts";
import type { ListFilter } from "../../ports/inspection-store.ts";
import type { InspectionRecord, Scope } from "../../ports/records.ts";
import { archiveFolder, entryMatches, entryName, parseEntry, pastTheEnd, startAfter } from "./archive-index.ts";
import {
  ARCHIVE_FINALIZER,
  CAPTURE_ANNOTATION,
  CaptureRecord,
  INSPECTION_RESOURCE,
  type StoreStatus,
  type StoredDelivery,
  type StoredEvent,
} from "../../schemas/inspection-resource.ts";
import { apiStatus, CONFLICT, NOT_FOUND } from "./api-status.ts";
import { inspectionCache } from "./inspection-cache.ts";
import {
  capturePlanOf,
  desiredStatus,
  idOfResource,
  type InspectionResource,
  inspectionResource,
  resourceName,
} from "./inspection-resource.ts";
import type { ResourceCache } from "./resource-cache.ts";

/**
 * One Inspection resource read as the store's data: the api's part (the capture annotation and the
 * spec) and the controller's (status.store), with the record they make.
 */
export type InspectionView = {
  readonly object: InspectionResource;
  readonly capture: CaptureRecord;
  readonly store: StoreStatus;
  readonly record: InspectionRecord;
};

/** An event of the outbox with its delivery as it stands, the api's resends taken in. */
export type EventView = { readonly event: StoredEvent; readonly delivery: StoredDelivery; readonly view: InspectionView };

/** What a change decides: the resource to write (or none), and what the caller is answered. */
export type Change<R> = { write?: InspectionResource; answer: R };

/** The resource with its capture annotation replaced by `capture` (and its spec by `spec`, if given): what the api writes. */
export function withCapture(v: InspectionView, capture: CaptureRecord, spec = v.object.spec): InspectionResource {
  const annotations = { ...v.object.metadata?.annotations, [CAPTURE_ANNOTATION]: JSON.stringify(capture) };
  return { ...v.object, metadata: { ...v.object.metadata, annotations }, spec };
}

/** The controller's part of a resource no controller has written yet. */
function unmoved(c: CaptureRecord): StoreStatus {
  return {
    status: c.createdStatus,
    updatedAt: c.updatedAt,
    submittedAt: null,
    completedAt: null,
    canceledAt: null,
    summary: null,
    failure: null,
    processingAttempts: 0,
    processingDueAt: null,
    reconciledIntents: 0,
    reconciledGeneration: 1,
    events: [],
    deliveries: [],
    media: [],
  };
}

function recordOf(o: InspectionResource, c: CaptureRecord, s: StoreStatus): InspectionRecord {
  const spec = o.spec;
  const generation = o.metadata?.generation ?? 1;
  return {
    id: idOfResource(o.metadata!.name!),
    accountId: spec.accountId,
    livemode: spec.livemode,
    status: s.status,
    reference: spec.reference ?? null,
    vin: spec.vehicle.vin,
    make: c.make,
    model: c.model,
    year: c.year,
    notifyUrl: spec.notify_url ?? null,
    expiresAt: c.expiresAt,
    createdAt: c.createdAt,
    // A review is the api's write, recorded in the capture record: it moves updatedAt too.
    updatedAt: Math.max(s.updatedAt, c.review?.at ?? 0),
    submittedAt: s.submittedAt,
    completedAt: s.completedAt,
    canceledAt: s.canceledAt,
    // A review (the api's) replaces the summary the controller wrote on completion. Resources written
    // before needs_review existed lack it.
    summary: c.review
      ? { new_findings: null, ...c.review.summary }
      : s.summary
        ? { ...s.summary, needs_review: s.summary.needs_review ?? false, new_findings: s.summary.new_findings ?? null }
        : null,
    failure: s.failure,
    capture: capturePlanOf(spec),
    reviewPolicy: spec.review ?? null,
    baselineInspectionId: spec.baseline_inspection ?? null,
    review: c.review ?? null,
    openedAt: c.openedAt,
    submitRequestedAt: c.submitRequestedAt,
    // A cancel set on the spec with kubectl carries no time of its own: it reads as asked at creation
    // (what reads it asks only whether there is one; the controller cancels at its own clock).
    cancelRequestedAt: c.cancelRequestedAt ?? (spec.cancelRequested ? c.createdAt : null),
    vinObserved: c.vinObserved,
    processingAttempts: s.processingAttempts,
    processingDueAt: s.processingDueAt,
    reconcileGeneration: c.intents - s.reconciledIntents + (generation - s.reconciledGeneration),
  };
}

/** A delete was asked for (kubectl, a namespace's deletion) and waits for the archive finalizer. */
const isBeingDeleted = (v: InspectionView): boolean =>
  v.object.metadata?.deletionTimestamp != null && (v.object.metadata.finalizers ?? []).includes(ARCHIVE_FINALIZER);

/** Every event of an inspection, oldest first: its creation's and its reviews' (the api's) and its moves' (the controller's). */
function storedEvents(v: Pick<InspectionView, "capture" | "store">): StoredEvent[] {
  const reviews = v.capture.reviewEvents ?? [];
  const all = [v.capture.createdEvent, ...v.store.events, ...reviews];
  return reviews.length === 0 ? all : all.sort((a, b) => a.seq - b.seq);
}

/** An event's delivery before the controller has recorded anything of it. */
function firstDelivery(e: StoredEvent, notifyUrl: string | null): StoredDelivery {
  const deliver = notifyUrl !== null;
  return {
    eventId: e.id,
    status: deliver ? "pending" : "none",
    nextAttemptAt: deliver ? e.createdAt : null,
    attemptCount: 0,
    scheduleFrom: 0,
    publishedFrom: null,
    resendsSeen: 0,
    attempts: [],
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

let lastStamp = 0;
/**
 * Orders events: the wall clock in microseconds, strictly rising within a process, so that events
 * appended one after another list in that order; across processes they order by their clocks.
 */
export function eventStamp(): number {
  lastStamp = Math.max(Date.now() * 1000, lastStamp + 1);
  return lastStamp;
}

/**
 * Where a pruned inspection's resource is kept (as JSON, in the blob store beside its photos and
 * report), and which inspection a media or event id belongs to once its resource is gone.
 */
export const ARCHIVE = {
  inspection: (id: string) => `records/inspections/${id}.json`,
  /** An event's delivery attempts moved out of its resource, one blob each, named so their order is the names'. */
  attempts: (eventId: string) => `records/attempts/${eventId}/`,
  attempt: (eventId: string, n: number) => `records/attempts/${eventId}/${String(n).padStart(8, "0")}.json`,
  media: (id: string) => `records/media/${id}`,
  event: (id: string) => `records/events/${id}`,
};

/** Names read from the archive's index at a time. */
const INDEX_PAGE = 1000;

/**
 * A write that meets a newer version (409) is made again on it after a jittered pause (up to
 * CONFLICT_PAUSE_MS, doubling from 10 ms), so that writers racing on one inspection spread out
 * instead of colliding again at once, as client-go's RetryOnConflict does; it gives up only once
 * CONFLICT_GIVE_UP_MS have passed. A count alone gave up: 27 writers racing on one inspection
 * can each lose 26 times.
 */
const CONFLICT_PAUSE_MS = 200;
const CONFLICT_GIVE_UP_MS = 15_000;

/**
 * The Inspection resources of a namespace as the inspection store's data, for
 * KubernetesInspectionStore and KubernetesEventStore: reads from a list-watch cache (with this
 * process's own writes seen at once), writes as compare-and-set replaces on the resourceVersion
 * read, made again on the newer version after a 409. The api writes the resource (spec and the
 * capture annotation) and the controller only its status, so RBAC can keep status to the
 * operator's account.
 */
export class InspectionRecords {
  readonly namespace: string;
  readonly #api: CustomObjectsApi;
  readonly #cache: ResourceCache<InspectionResource>;
  readonly #archive: BlobStore | null;
  readonly #views = new WeakMap<InspectionResource, InspectionView | null>();
  #ordered: { at: number; events: EventView[] } | null = null;
  #newest: { at: number; records: InspectionRecord[] } | null = null;
  #index: { at: number; tokens: Map<string, string>; media: Map<string, string>; events: Map<string, string> } | null = null;
  /** Conflicts met and written through, for the tests and the log. */
  conflicts = 0;

  private constructor(api: CustomObjectsApi, cache: ResourceCache<InspectionResource>, namespace: string, archive: BlobStore | null) {
    this.#api = api;
    this.#cache = cache;
    this.namespace = namespace;
    this.#archive = archive;
  }

  /**
   * Starts the namespace's cache; resolves once it holds the first list. With `archive`, pruned
   * inspections are kept there and read from there (`prune`, `find`).
   */
  static async open(
    kc: KubeConfig,
    namespace: string,
    options: { onError?: (error: unknown, retryInMs: number) => void; archive?: BlobStore } = {},
  ): Promise<InspectionRecords> {
    const cache = inspectionCache(kc, namespace, { onError: options.onError });
    await cache.start();
    return new InspectionRecords(kc.makeApiClient(CustomObjectsApi), cache, namespace, options.archive ?? null);
  }

  close(): Promise<void> {
    return this.#cache.stop();
  }

  /** How long since the API server last told the cache anything (informer staleness). */
  staleMs(): number {
    return this.#cache.staleMs();
  }

  /** Every inspection's view; a resource that is not one of the store's (made by hand) is left out. */
  all(): InspectionView[] {
    const views: InspectionView[] = [];
    for (const o of this.#cache.list()) {
      const v = this.view(o);
      if (v) views.push(v);
    }
    return views;
  }

  byId(id: string): InspectionView | null {
    const o = this.#cache.get(this.namespace, resourceName(id));
    return o ? this.view(o) : null;
  }

  /**
   * The inspection wherever it is: in the cache; else on the API server (made by another replica a
   * moment ago, its watch event not here yet); else in the archive (pruned).
   */
  async find(id: string): Promise<InspectionView | null> {
    const cached = this.byId(id);
    if (cached) return cached;
    // What is not an id names nothing: never a name for the API server or a key for the archive.
    if (!isId("insp", id)) return null;
    const fetched = await this.#fetch(resourceName(id));
    if (fetched) return this.view(fetched);
    return this.archived(id);
  }

  /**
   * Reads the resource from the API server and takes it into the cache: for a write whose
   * precondition the cached version fails, where the cache may not have the latest move yet.
   */
  async refresh(id: string): Promise<void> {
    const fetched = await this.#fetch(resourceName(id));
    if (fetched) this.#cache.wrote(fetched);
  }

  /** Whether delivery attempts can be moved out of the resources (there is an archive). */
  get keepsAttemptsAside(): boolean {
    return this.#archive !== null;
  }

  /** Writes delivery attempts to the archive (each once; writing one again writes the same bytes). */
  async putAttempts(eventId: string, attempts: readonly StoredDelivery["attempts"][number][]): Promise<void> {
    const archive = this.#archive;
    if (!archive) throw new Error("no archive to keep delivery attempts in");
    await Promise.all(
      attempts.map((a) => archive.put(ARCHIVE.attempt(eventId, a.attempt), Buffer.from(JSON.stringify(a)), "application/json")),
    );
  }

  /** An event's attempts kept in the archive, oldest first. */
  async archivedAttempts(eventId: string): Promise<StoredDelivery["attempts"]> {
    const archive = this.#archive;
    if (!archive) return [];
    const folder = ARCHIVE.attempts(eventId);
    const names: string[] = [];
    for (let after: string | null = null; ; ) {
      const page = await archive.list(folder, after, INDEX_PAGE);
      names.push(...page);
      if (page.length < INDEX_PAGE) break;
      after = page.at(-1)!;
    }
    const read = await Promise.all(names.map((name) => archive.get(folder + name)));
    return read.filter((b): b is Buffer => b !== null).map((b) => JSON.parse(b.toString("utf8")));
  }

  /** The inspection a media id belongs to, live or pruned. */
  async findByMediaId(mediaId: string): Promise<InspectionView | null> {
    return this.byMediaId(mediaId) ?? (isId("med", mediaId) ? this.#archivedBy(ARCHIVE.media(mediaId)) : null);
  }

  /** The inspection an event id belongs to, live or pruned. */
  async findByEventId(eventId: string): Promise<InspectionView | null> {
    return this.byEventId(eventId) ?? (isId("evt", eventId) ? this.#archivedBy(ARCHIVE.event(eventId)) : null);
  }

  /** The pruned inspection, from the archive. */
  async archived(id: string): Promise<InspectionView | null> {
    const bytes = await this.#archive?.get(ARCHIVE.inspection(id));
    return bytes ? this.view(JSON.parse(bytes.toString("utf8")) as InspectionResource) : null;
  }

  async #archivedBy(pointer: string): Promise<InspectionView | null> {
    const id = await this.#archive?.get(pointer);
    return id ? this.archived(id.toString("utf8")) : null;
  }

  /** Inspections whose resource has no status yet: made by the api, not yet written by the controller. */
  unshown(): InspectionView[] {
    return this.all().filter((v) => v.object.status === undefined);
  }

  /**
   * Inspections the service did not make (by hand with kubectl, or with the api's record torn off):
   * no record to serve, so none is; not told so yet in their status.
   */
  unrecognized(): InspectionResource[] {
    return this.#cache
      .list()
      .filter((o) => this.view(o) === null && !o.status?.conditions?.some((c) => c.type === "Recognized" && c.status === "False"));
  }

  /**
   * Says in an unrecognized resource's status why the service ignores it, and drops its finalizer
   * (there is nothing of it to archive), so kubectl can delete it.
   */
  async refuse(o: InspectionResource): Promise<void> {
    const name = o.metadata!.name!;
    const condition = {
      type: "Recognized",
      status: "False" as const,
      reason: "NotMadeByTheService",
      message:
        "Inspections are made with POST /v1/inspections, which keeps their record in the annotation inspection.dev/capture; this one has none the service can read, so it is ignored. Delete it.",
      lastTransitionTime: new Date().toISOString(),
      observedGeneration: o.metadata?.generation ?? 1,
    };
    const written = (await this.#api.replaceNamespacedCustomObjectStatus({
      ...this.#where(),
      name,
      body: { ...o, status: { conditions: [condition], observedGeneration: o.metadata?.generation ?? 1 } },
    })) as InspectionResource;
    const finalizers = written.metadata?.finalizers ?? [];
    if (finalizers.includes(ARCHIVE_FINALIZER)) {
      const body = { ...written, metadata: { ...written.metadata, finalizers: finalizers.filter((f) => f !== ARCHIVE_FINALIZER) } };
      await this.#api.replaceNamespacedCustomObject({ ...this.#where(), name, body });
    }
  }

  /** Writes the status of an inspection that has none: what `kubectl get` shows for it. */
  show(id: string): Promise<void> {
    return this.updateStatus(id, undefined, (v) => ({ answer: undefined, store: v.object.status === undefined ? v.store : undefined }));
  }

  /**
   * The pruned inspections a list of `scope` with `filter` shows, in its order, at most its limit:
   * their position (created, id) only, read from the archive's index by name, page by page.
   */
  async archivedPage(scope: Scope, filter: ListFilter): Promise<{ createdAt: number; id: string }[]> {
    if (!this.#archive) return [];
    const folder = archiveFolder(scope);
    const found: { createdAt: number; id: string }[] = [];
    for (let after = startAfter(filter); ; ) {
      const names = await this.#archive.list(folder, after, INDEX_PAGE);
      for (const name of names) {
        const entry = parseEntry(name);
        if (!entry) continue;
        if (pastTheEnd(entry, filter)) return found;
        if (entryMatches(entry, filter)) found.push({ createdAt: entry.second * 1000, id: entry.id });
        if (found.length >= filter.limit) return found;
      }
      if (names.length < INDEX_PAGE) return found;
      after = names.at(-1)!;
    }
  }

  /**
   * Finished inspections whose resources may go: finished `retentionMs` ago or more, with no
   * webhook still to deliver (its attempts are recorded in the resource).
   */
  prunable(now: number, retentionMs: number): InspectionView[] {
    return this.all().filter(
      (v) =>
        isBeingDeleted(v) ||
        (isTerminal(v.record.status) &&
          v.record.updatedAt + retentionMs <= now &&
          this.events(v).every((e) => e.delivery.status !== "pending")),
    );
  }

  /**
   * Keeps the inspection in the archive, then deletes its resource if it has not changed since:
   * what is archived is what was deleted. False when it had changed (a later pass tries again).
   * Pointers first, then the record, then the delete: a crash between leaves the resource, and a
   * later pass writes the same blobs again.
   */
  async prune(v: InspectionView): Promise<boolean> {
    if (!this.#archive) throw new Error("pruning needs an archive: the inspection's record must stay readable");
    const id = v.record.id;
    const text = (s: string) => Buffer.from(s, "utf8");
    const pointers = [
      ...v.capture.photos.map((p) => ARCHIVE.media(p.mediaId)),
      ...v.store.media.map((m) => ARCHIVE.media(m.id)),
      ...storedEvents(v).map((e) => ARCHIVE.event(e.id)),
    ];
    await Promise.all([
      ...pointers.map((key) => this.#archive!.put(key, text(id), "text/plain")),
      // Listed from here once pruned (archive-index.ts): the name is the entry.
      this.#archive.put(archiveFolder(v.record) + entryName(v.record), Buffer.alloc(0), "application/octet-stream"),
    ]);
    const { managedFields: _, ...metadata } = v.object.metadata ?? {};
    await this.#archive.put(ARCHIVE.inspection(id), text(JSON.stringify({ ...v.object, metadata })), "application/json");
    try {
      // Archived as it is now: the finalizer goes, on this version only (a write since is a 409, and
      // a later pass archives that). A delete under way (kubectl's) then completes by itself.
      let resourceVersion = v.object.metadata?.resourceVersion;
      if (v.object.metadata?.finalizers?.includes(ARCHIVE_FINALIZER)) {
        const finalizers = v.object.metadata.finalizers.filter((f) => f !== ARCHIVE_FINALIZER);
        const body = { ...v.object, metadata: { ...v.object.metadata, finalizers } };
        const released = (await this.#api.replaceNamespacedCustomObject({
          ...this.#where(),
          name: resourceName(id),
          body,
        })) as InspectionResource;
        if (isBeingDeleted(v)) return true;
        resourceVersion = released.metadata?.resourceVersion;
      }
      await this.#api.deleteNamespacedCustomObject({
        ...this.#where(),
        name: resourceName(id),
        body: { preconditions: { resourceVersion } },
      });
      return true;
    } catch (error) {
      const status = apiStatus(error);
      if (status === NOT_FOUND) return true;
      if (status === CONFLICT) return false;
      throw error;
    }
  }

  byTokenHash(hash: string): InspectionView | null {
    const id = this.#indexes().tokens.get(hash);
    return id === undefined ? null : this.byId(id);
  }

  byMediaId(mediaId: string): InspectionView | null {
    const id = this.#indexes().media.get(mediaId);
    return id === undefined ? null : this.byId(id);
  }

  byEventId(eventId: string): InspectionView | null {
    const id = this.#indexes().events.get(eventId);
    return id === undefined ? null : this.byId(id);
  }

  /** Every inspection in the list's order (newest first), sorted again only after the cache has changed. */
  newestFirst(): readonly InspectionRecord[] {
    if (this.#newest?.at !== this.#cache.changes) {
      this.#newest = {
        at: this.#cache.changes,
        records: this.all()
          .map((v) => v.record)
          .sort(newestFirst),
      };
    }
    return this.#newest.records;
  }

  /** Every event of every inspection in the order appended (by stamp), sorted again only after the cache has changed. */
  eventsInOrder(): readonly EventView[] {
    if (this.#ordered?.at !== this.#cache.changes) {
      const events = this.all()
        .flatMap((v) => this.events(v))
        .sort((a, b) => a.event.seq - b.event.seq);
      this.#ordered = { at: this.#cache.changes, events };
    }
    return this.#ordered.events;
  }

  /** The indexes by capture token, media and event, made again only after the cache has changed. */
  #indexes() {
    if (this.#index?.at === this.#cache.changes) return this.#index;
    const index = {
      at: this.#cache.changes,
      tokens: new Map<string, string>(),
      media: new Map<string, string>(),
      events: new Map<string, string>(),
    };
    for (const v of this.all()) {
      const id = v.record.id;
      index.tokens.set(v.capture.tokenHash, id);
      for (const p of v.capture.photos) index.media.set(p.mediaId, id);
      for (const m of v.store.media) index.media.set(m.id, id);
      for (const e of storedEvents(v)) index.events.set(e.id, id);
    }
    this.#index = index;
    return index;
  }

  /** The resource read as the store's data (kept for the object, which the cache replaces, never edits). */
  view(o: InspectionResource): InspectionView | null {
    let v = this.#views.get(o);
    if (v !== undefined) return v;
    const raw = o.metadata?.annotations?.[CAPTURE_ANNOTATION];
    const parsed = raw === undefined ? null : CaptureRecord.safeParse(parseJson(raw));
    if (!parsed?.success) v = null;
    else {
      const capture = parsed.data;
      const store = o.status?.store ?? unmoved(capture);
      v = { object: o, capture, store, record: recordOf(o, capture, store) };
    }
    this.#views.set(o, v);
    return v;
  }

  /** Each event of the inspection, oldest first, with its delivery; the api's resends not yet taken in count as made. */
  events(v: InspectionView): EventView[] {
    return storedEvents(v).map((event) => {
      let delivery = v.store.deliveries.find((d) => d.eventId === event.id) ?? firstDelivery(event, v.record.notifyUrl);
      const resend = v.capture.resends.find((r) => r.eventId === event.id);
      if (resend && resend.count > delivery.resendsSeen && delivery.status !== "none") {
        delivery = {
          ...delivery,
          status: "pending",
          nextAttemptAt: resend.at,
          scheduleFrom: resend.from,
          publishedFrom: null,
          resendsSeen: resend.count,
        };
      }
      return { event, delivery, view: v };
    });
  }

  /** Creates the resource of a new inspection; false when its name is taken. */
  async create(r: InspectionRecord, capture: CaptureRecord): Promise<boolean> {
    const body = inspectionResource(r, this.namespace);
    body.metadata!.annotations = { [CAPTURE_ANNOTATION]: JSON.stringify(capture) };
    // Where there is an archive, nothing deletes the resource before its inspection is in it.
    if (this.#archive) body.metadata!.finalizers = [ARCHIVE_FINALIZER];
    try {
      this.#cache.wrote((await this.#api.createNamespacedCustomObject({ ...this.#where(), body })) as InspectionResource);
      return true;
    } catch (error) {
      if (apiStatus(error) === CONFLICT) return false;
      throw error;
    }
  }

  /**
   * The api's write: `change` is given the inspection as it stands and answers the resource to
   * write (its spec and annotations; status is not the api's) or nothing to write. Made again on
   * the newer version after a 409. `missing` is the answer for an inspection that does not exist.
   */
  updateResource<R>(id: string, missing: R, change: (v: InspectionView) => Change<R>): Promise<R> {
    return this.#update(id, missing, change, (body, name) => this.#api.replaceNamespacedCustomObject({ ...this.#where(), name, body }));
  }

  /** The controller's write of status.store, the rest of the status made from the record it holds. */
  updateStatus<R>(id: string, missing: R, change: (v: InspectionView) => { store?: StoreStatus; answer: R }): Promise<R> {
    return this.#update(
      id,
      missing,
      (v) => {
        const { store, answer } = change(v);
        if (!store) return { answer };
        const record = recordOf(v.object, v.capture, store);
        const shown = desiredStatus(record, store.reconciledGeneration, v.object.status?.conditions, Date.now());
        return { answer, write: { ...v.object, status: { ...shown, store } } };
      },
      (body, name) => this.#api.replaceNamespacedCustomObjectStatus({ ...this.#where(), name, body }),
    );
  }

  async #update<R>(
    id: string,
    missing: R,
    change: (v: InspectionView) => Change<R>,
    replace: (body: InspectionResource, name: string) => Promise<unknown>,
  ): Promise<R> {
    const name = resourceName(id);
    let object = this.#cache.get(this.namespace, name) ?? (await this.#fetch(name));
    const giveUpAt = Date.now() + CONFLICT_GIVE_UP_MS;
    for (let conflicts = 0; ; conflicts++) {
      const v = object && this.view(object);
      if (!v) return missing;
      const { write, answer } = change(v);
      if (!write) return answer;
      try {
        this.#cache.wrote((await replace(write, name)) as InspectionResource);
        return answer;
      } catch (error) {
        const status = apiStatus(error);
        if (status === NOT_FOUND) return missing;
        if (status !== CONFLICT || Date.now() > giveUpAt) throw error;
        this.conflicts++;
        const pause = Math.min(10 * 2 ** conflicts, CONFLICT_PAUSE_MS);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * pause));
        // The cache may not have the newer version yet: read it from the API server.
        object = await this.#fetch(name);
      }
    }
  }

  async #fetch(name: string): Promise<InspectionResource | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject({ ...this.#where(), name })) as InspectionResource;
    } catch (error) {
      if (apiStatus(error) === NOT_FOUND) return undefined;
      throw error;
    }
  }

  #where() {
    const { group, version, plural } = INSPECTION_RESOURCE;
    return { group, version, plural, namespace: this.namespace };
  }
}
