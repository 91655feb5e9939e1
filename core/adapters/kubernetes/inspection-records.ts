import { isDeepStrictEqual } from "node:util";
import { CustomObjectsApi, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
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
  INSPECTION_RECORD_RESOURCE,
  INSPECTION_RESOURCE,
  type RecordSpec,
  type RecordStatus,
  type StoreStatus,
  type StoredDelivery,
  type StoredEvent,
} from "../../schemas/inspection-resource.ts";
import { apiStatus, CONFLICT, NOT_FOUND } from "./api-status.ts";
import { retryOnConflict } from "./retry-on-conflict.ts";
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
 * The store's own record of an inspection (INSPECTION_RECORD_RESOURCE), beside its Inspection: the
 * creation request and the api's capture record in its spec, the controller's bookkeeping in its status.
 */
export type KeptRecord = KubernetesObject & { spec: RecordSpec; status?: RecordStatus };

/**
 * One inspection read as the store's data: the api's part (the spec and the capture record) and the
 * controller's (the store status), with the record they make. `object` is the Inspection a person
 * reads (or, once it is gone, one made up from the record, read as being deleted); `kept` the
 * store's record object, absent for an archived inspection and for one a release before the
 * InspectionRecord kept in its Inspection (its annotation and status.store), until `migrate`.
 */
export type InspectionView = {
  readonly object: InspectionResource;
  readonly capture: CaptureRecord;
  readonly store: StoreStatus;
  readonly record: InspectionRecord;
  readonly kept?: KeptRecord;
  /** The Inspection, where there is one. */
  readonly inspection?: InspectionResource;
  /** Whether the Inspection's status says what the record does (nothing to write). */
  readonly shown: boolean;
};

/** An event of the outbox with its delivery as it stands, the api's resends taken in. */
export type EventView = { readonly event: StoredEvent; readonly delivery: StoredDelivery; readonly view: InspectionView };

/** The api's write: the capture record replaced, and with `cancel` the Inspection's spec.cancelRequested set too. */
export type CaptureWrite = { capture: CaptureRecord; cancel?: true };

/** Where a kind of the service's is in the Kubernetes API. */
type Resource = typeof INSPECTION_RESOURCE | typeof INSPECTION_RECORD_RESOURCE;

/** What a change decides: what to write (or nothing), and what the caller is answered. */
export type Change<R> = { write?: CaptureWrite; answer: R };

/** What the api writes: the capture record replaced by `capture`; `cancel` asks for the spec's cancelRequested too. */
export const withCapture = (capture: CaptureRecord, cancel = false): CaptureWrite => (cancel ? { capture, cancel } : { capture });

/**
 * An Inspection made by hand, or whose create was cut off between the Inspection and its record, is
 * told it is not recognized only after this long: the api makes the record right after the Inspection.
 */
const UNRECOGNIZED_AFTER_MS = 10_000;

/** The Inspection of a record whose Inspection is gone (deleted with its finalizer taken off by hand, or its CRD deleted): being deleted. */
function goneInspection(kept: KeptRecord, store: StoreStatus): InspectionResource {
  return {
    apiVersion: `${INSPECTION_RESOURCE.group}/${INSPECTION_RESOURCE.version}`,
    kind: INSPECTION_RESOURCE.kind,
    metadata: {
      name: kept.metadata?.name,
      namespace: kept.metadata?.namespace,
      labels: kept.metadata?.labels,
      generation: store.reconciledGeneration,
      creationTimestamp: kept.metadata?.creationTimestamp,
      deletionTimestamp: kept.metadata?.deletionTimestamp ?? kept.metadata?.creationTimestamp ?? new Date(0),
      finalizers: [ARCHIVE_FINALIZER],
    },
    spec: kept.spec.request,
  };
}

/** The creation request of a spec: all of it but the cancel intent, which kubectl may set. */
function requestOf(spec: InspectionResource["spec"]): RecordSpec["request"] {
  const { cancelRequested: _, ...request } = spec;
  return request;
}

/** The store's data as one object, as releases before the InspectionRecord kept it: what the archive holds. */
function archivedForm(v: InspectionView): InspectionResource {
  const { managedFields: _, ...metadata } = v.object.metadata ?? {};
  const annotations = { ...metadata.annotations, [CAPTURE_ANNOTATION]: JSON.stringify(v.capture) };
  return { ...v.object, metadata: { ...metadata, annotations }, status: { ...v.object.status, store: v.store } };
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

/**
 * A delete was asked for (kubectl, a namespace's deletion) of the Inspection or its record, and waits
 * for the archive finalizer; a record whose Inspection is gone reads so too.
 */
const isBeingDeleted = (v: InspectionView): boolean =>
  [v.object, v.kept].some((o) => o?.metadata?.deletionTimestamp != null && (o.metadata.finalizers ?? []).includes(ARCHIVE_FINALIZER));

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
 * The Inspection resources of a namespace as the inspection store's data, for
 * KubernetesInspectionStore and KubernetesEventStore: reads from a list-watch cache (with this
 * process's own writes seen at once), writes as compare-and-set replaces on the resourceVersion
 * read, made again on the newer version after a 409 (`retryOnConflict`, the one conflict policy of
 * every in-line write). The api writes the resource (spec and the capture annotation) and the
 * controller only its status, so RBAC can keep status to the operator's account.
 */
export class InspectionRecords {
  readonly namespace: string;
  readonly #api: CustomObjectsApi;
  /** The Inspections, and the store's records beside them (the InspectionRecords). */
  readonly #cache: ResourceCache<InspectionResource>;
  readonly #kept: ResourceCache<KeptRecord>;
  readonly #archive: BlobStore | null;
  readonly #views = new WeakMap<InspectionResource, InspectionView | null>();
  /** A record's view, with the Inspection it was read with: made again when either changes. */
  readonly #joined = new WeakMap<KeptRecord, { inspection: InspectionResource | undefined; view: InspectionView | null }>();
  #ordered: { at: number; events: EventView[] } | null = null;
  #newest: { at: number; records: InspectionRecord[] } | null = null;
  #index: { at: number; tokens: Map<string, string>; media: Map<string, string>; events: Map<string, string> } | null = null;
  /** Conflicts met and written through, for the tests and the log. */
  conflicts = 0;
  /** Inspections' status writes that failed after their record's write: the upkeep writes them again (`unshown`). */
  showFailures = 0;

  private constructor(
    api: CustomObjectsApi,
    caches: { inspections: ResourceCache<InspectionResource>; kept: ResourceCache<KeptRecord> },
    namespace: string,
    archive: BlobStore | null,
  ) {
    this.#api = api;
    this.#cache = caches.inspections;
    this.#kept = caches.kept;
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
    const inspections = inspectionCache(kc, namespace, { onError: options.onError });
    const kept = inspectionCache<KeptRecord>(kc, namespace, { onError: options.onError }, INSPECTION_RECORD_RESOURCE);
    await Promise.all([inspections.start(), kept.start()]);
    return new InspectionRecords(kc.makeApiClient(CustomObjectsApi), { inspections, kept }, namespace, options.archive ?? null);
  }

  async close(): Promise<void> {
    await Promise.all([this.#cache.stop(), this.#kept.stop()]);
  }

  /** How long since the API server last told the caches anything (informer staleness): the staler of the two. */
  staleMs(): number {
    return Math.max(this.#cache.staleMs(), this.#kept.staleMs());
  }

  /** Changes either cache has taken in, for what is derived from them until the next. */
  #changes(): number {
    return this.#cache.changes + this.#kept.changes;
  }

  /** Every inspection's view; a resource that is not one of the store's (made by hand) is left out. */
  all(): InspectionView[] {
    const views: InspectionView[] = [];
    for (const kept of this.#kept.list()) {
      const v = this.#viewOf(kept.metadata!.name!);
      if (v) views.push(v);
    }
    // Those a release before kept in the Inspection alone, not yet moved.
    for (const o of this.#cache.list()) {
      if (this.#kept.get(this.namespace, o.metadata!.name!)) continue;
      const v = this.view(o);
      if (v) views.push(v);
    }
    return views;
  }

  /**
   * Calls `listener` with the id of each inspection whose Inspection or record the watch delivers
   * added or changed, whoever wrote it (another replica, kubectl): what the caches hear, as an
   * informer's handlers do. Deletions are left out (an inspection being deleted is changed first: its
   * deletionTimestamp). Answers a function that stops the calls.
   */
  onChange(listener: (id: string) => void): () => void {
    const tell = (e: { type: string; object: KubernetesObject }) => {
      const name = e.object.metadata?.name;
      if (e.type !== "DELETED" && name) listener(idOfResource(name));
    };
    const stops = [this.#cache.onEvent(tell), this.#kept.onEvent(tell)];
    return () => {
      for (const stop of stops) stop();
    };
  }

  byId(id: string): InspectionView | null {
    return this.#viewOf(resourceName(id));
  }

  /**
   * The view of the named inspection from the caches: an Inspection still carrying a release before's
   * capture annotation is read from it (its record, if `migrate` has begun, is not complete until the
   * annotation goes); else its record with its Inspection, if any.
   */
  #viewOf(name: string): InspectionView | null {
    const inspection = this.#cache.get(this.namespace, name);
    if (inspection?.metadata?.annotations?.[CAPTURE_ANNOTATION] !== undefined) return this.view(inspection);
    const kept = this.#kept.get(this.namespace, name);
    if (!kept) return null;
    const joined = this.#joined.get(kept);
    if (joined && joined.inspection === inspection) return joined.view;
    const view = this.#join(kept, inspection);
    this.#joined.set(kept, { inspection, view });
    return view;
  }

  /** A record with its Inspection read as the store's data; null for a record the service cannot read. */
  #join(kept: KeptRecord, inspection: InspectionResource | undefined): InspectionView | null {
    const parsed = CaptureRecord.safeParse(kept.spec?.capture);
    if (!parsed.success || !kept.spec?.request) return null;
    const capture = parsed.data;
    const store = kept.status?.store ?? unmoved(capture);
    const object = inspection ?? goneInspection(kept, store);
    const record = recordOf(object, capture, store);
    // Compared at time 0: a condition whose status changed gets a new lastTransitionTime, and differs anyway.
    const shown =
      !inspection ||
      isDeepStrictEqual(inspection.status, desiredStatus(record, store.reconciledGeneration, inspection.status?.conditions, 0));
    return { object, capture, store, record, kept, inspection, shown };
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
    const fetched = await this.#fetchView(resourceName(id));
    return fetched ?? this.archived(id);
  }

  /**
   * Reads the resource from the API server and takes it into the cache: for a write whose
   * precondition the cached version fails, where the cache may not have the latest move yet.
   */
  async refresh(id: string): Promise<void> {
    const name = resourceName(id);
    const [inspection, kept] = await Promise.all([this.#fetch(name), this.#fetchKept(name)]);
    if (inspection) this.#cache.wrote(inspection);
    if (kept) this.#kept.wrote(kept);
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

  /**
   * Inspections whose status does not say what their record does: made by the api (whose account
   * may not write status) and not shown yet, or whose status write after a move failed.
   */
  unshown(): InspectionView[] {
    return this.all().filter((v) => !v.shown);
  }

  /** Inspections a release before kept in the Inspection alone (its capture annotation and status.store): for `migrate`. */
  unmigrated(): InspectionView[] {
    return this.all().filter((v) => v.kept === undefined);
  }

  /**
   * Inspections the service did not make (by hand with kubectl, or with the api's record torn off):
   * no record to serve, so none is; not told so yet in their status. One made a moment ago may be
   * the api's, its record on the way: only those older than UNRECOGNIZED_AFTER_MS.
   */
  unrecognized(now = Date.now()): InspectionResource[] {
    return this.#cache.list().filter((o) => {
      const name = o.metadata!.name!;
      if (this.#viewOf(name) !== null || this.#kept.get(this.namespace, name)) return false;
      if (o.status?.conditions?.some((c) => c.type === "Recognized" && c.status === "False")) return false;
      const made = o.metadata?.creationTimestamp ? new Date(o.metadata.creationTimestamp).getTime() : 0;
      return made + UNRECOGNIZED_AFTER_MS <= now;
    });
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
        "Inspections are made with POST /v1/inspections, which keeps their record in the InspectionRecord of the same name; this one has none the service can read, so it is ignored. Delete it.",
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

  /**
   * Writes the Inspection's status from its record, if it does not say that already: what `kubectl
   * get` and `describe` show. On the Inspection's version read; a 409 reads it again and decides
   * again (the status is made from the record, so the last write says the latest).
   */
  async show(id: string): Promise<void> {
    const name = resourceName(id);
    await retryOnConflict(
      `status of Inspection ${name}`,
      async (attempt) => {
        if (attempt > 0) {
          const fetched = await this.#fetch(name);
          if (fetched) this.#cache.wrote(fetched);
        }
        return this.byId(id);
      },
      async (v) => {
        if (!v || v.shown || !v.inspection || !v.kept) return;
        const status = desiredStatus(v.record, v.store.reconciledGeneration, v.inspection.status?.conditions, Date.now());
        const body = { ...v.inspection, status };
        this.#cache.wrote((await this.#api.replaceNamespacedCustomObjectStatus({ ...this.#where(), name, body })) as InspectionResource);
      },
      { onConflict: () => this.conflicts++ },
    ).catch(unlessNotFound(undefined));
  }

  /**
   * Moves an inspection a release before kept in its Inspection alone (the capture annotation and
   * status.store) to its InspectionRecord, then takes the annotation off the Inspection on the
   * version it was read from (status.store goes with the next status write, `show`). A write since
   * (an api of that release, mid-rollout) is a 409, and the record is written again from the newer
   * version: until the annotation is gone, the Inspection is what is read.
   */
  async migrate(id: string): Promise<void> {
    const name = resourceName(id);
    const moved = await retryOnConflict(
      `move of Inspection ${name} to its InspectionRecord`,
      async () => {
        const inspection = await this.#fetch(name);
        return inspection && this.view(inspection);
      },
      async (v) => {
        if (!v) return false;
        const kept = await this.#writeKept(name, v, await this.#fetchKept(name));
        const { [CAPTURE_ANNOTATION]: _, ...annotations } = v.object.metadata?.annotations ?? {};
        const body = { ...v.object, metadata: { ...v.object.metadata, annotations } };
        this.#cache.wrote((await this.#api.replaceNamespacedCustomObject({ ...this.#where(), name, body })) as InspectionResource);
        this.#kept.wrote(kept);
        return true;
      },
      { onConflict: () => this.conflicts++ },
    );
    if (moved) await this.show(id);
  }

  /** The record of `v` written as it stands (spec, then status), made if there is none. */
  async #writeKept(name: string, v: InspectionView, current: KeptRecord | undefined): Promise<KeptRecord> {
    const spec: RecordSpec = { request: requestOf(v.object.spec), capture: v.capture };
    const where = this.#where(INSPECTION_RECORD_RESOURCE);
    const body: KeptRecord = current
      ? { ...current, spec }
      : {
          apiVersion: `${INSPECTION_RECORD_RESOURCE.group}/${INSPECTION_RECORD_RESOURCE.version}`,
          kind: INSPECTION_RECORD_RESOURCE.kind,
          metadata: {
            name,
            namespace: this.namespace,
            labels: v.object.metadata?.labels,
            ...(this.#archive ? { finalizers: [ARCHIVE_FINALIZER] } : {}),
          },
          spec,
        };
    const written = (
      current
        ? await this.#api.replaceNamespacedCustomObject({ ...where, name, body })
        : await this.#api.createNamespacedCustomObject({ ...where, body })
    ) as KeptRecord;
    return (await this.#api.replaceNamespacedCustomObjectStatus({
      ...where,
      name,
      body: { ...written, status: { store: v.store } },
    })) as KeptRecord;
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
    await this.#archive.put(ARCHIVE.inspection(id), text(JSON.stringify(archivedForm(v))), "application/json");
    try {
      // The object that holds the data goes on the version archived: a write since is a 409, and a
      // later pass archives that. Once the record is gone, its Inspection has nothing more to keep.
      if (!v.kept) return await this.#release(INSPECTION_RESOURCE, v.object);
      await this.#release(INSPECTION_RECORD_RESOURCE, v.kept);
      if (v.inspection) await this.#releaseInspection(v.inspection.metadata!.name!);
      return true;
    } catch (error) {
      const status = apiStatus(error);
      if (status === NOT_FOUND) return true;
      if (status === CONFLICT) return false;
      throw error;
    }
  }

  /**
   * Deletes the Inspection of `id` where the store holds no record of it: the copy that releases
   * before kept of an SQLite store's inspection (the retired projector), deleted so that the
   * inspection can be made again with its record when `start` moves it here. False: none to delete.
   */
  async dropUnrecorded(id: string): Promise<boolean> {
    const name = resourceName(id);
    const o = this.#cache.get(this.namespace, name);
    if (!o || this.#viewOf(name) !== null || this.#kept.get(this.namespace, name)) return false;
    try {
      await this.#release(INSPECTION_RESOURCE, o);
      return true;
    } catch (error) {
      if (apiStatus(error) === NOT_FOUND) return false;
      throw error;
    }
  }

  /**
   * Makes an archived inspection live again (the restore after `kubectl delete crd`,
   * bin/commands/restore.ts), as `create` makes one: its Inspection first (the spec as archived,
   * with the archive finalizer), then its record with the store's data as archived, then its status
   * shown. In that order, an Inspection whose record is not written yet is left alone (for
   * UNRECOGNIZED_AFTER_MS) and a re-run finishes a restore cut off between them. False where it is
   * live already, or not in the archive.
   */
  async restore(id: string, read?: InspectionView): Promise<boolean> {
    const name = resourceName(id);
    if (this.#kept.get(this.namespace, name)) return false;
    // `read`: the archived inspection as the caller has read it already (archived(id)).
    const v = read ?? (await this.archived(id));
    if (!v) return false;
    if (!this.#cache.get(this.namespace, name)) {
      const body: InspectionResource = {
        apiVersion: v.object.apiVersion,
        kind: v.object.kind,
        metadata: { name, namespace: this.namespace, labels: v.object.metadata?.labels, finalizers: [ARCHIVE_FINALIZER] },
        spec: v.object.spec,
      };
      try {
        this.#cache.wrote((await this.#api.createNamespacedCustomObject({ ...this.#where(), body })) as InspectionResource);
      } catch (error) {
        if (apiStatus(error) !== CONFLICT) throw error;
      }
    }
    try {
      this.#kept.wrote(await this.#writeKept(name, v, undefined));
    } catch (error) {
      if (apiStatus(error) === CONFLICT) return false;
      throw error;
    }
    await this.show(id);
    // Out of the archive's list, which would show it as it was when archived; its next pruning lists it again.
    await this.#archive!.delete(archiveFolder(v.record) + entryName(v.record));
    return true;
  }

  /** Deletes an Inspection whose record is archived and gone, whatever was written to it since. */
  async #releaseInspection(name: string): Promise<void> {
    await retryOnConflict(
      `delete of Inspection ${name}`,
      (attempt) => (attempt === 0 ? this.#cache.get(this.namespace, name) : this.#fetch(name)),
      async (o) => {
        if (o) await this.#release(INSPECTION_RESOURCE, o);
      },
      { onConflict: () => this.conflicts++ },
    ).catch(unlessNotFound(undefined));
  }

  /**
   * Archived as it is now: the finalizer goes, on this version only (a write since is a 409), and
   * the object is deleted on the version that leaves. A delete under way (kubectl's) then completes
   * by itself.
   */
  async #release(resource: Resource, o: KubernetesObject): Promise<boolean> {
    const where = { ...this.#where(resource), name: o.metadata!.name! };
    let resourceVersion = o.metadata?.resourceVersion;
    const finalizers = o.metadata?.finalizers ?? [];
    if (finalizers.includes(ARCHIVE_FINALIZER)) {
      const body = { ...o, metadata: { ...o.metadata, finalizers: finalizers.filter((f) => f !== ARCHIVE_FINALIZER) } };
      const released = (await this.#api.replaceNamespacedCustomObject({ ...where, body })) as KubernetesObject;
      if (o.metadata?.deletionTimestamp != null) return true;
      resourceVersion = released.metadata?.resourceVersion;
    }
    await this.#api.deleteNamespacedCustomObject({ ...where, body: { preconditions: { resourceVersion } } });
    return true;
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
    if (this.#newest?.at !== this.#changes()) {
      this.#newest = {
        at: this.#changes(),
        records: this.all()
          .map((v) => v.record)
          .sort(newestFirst),
      };
    }
    return this.#newest.records;
  }

  /** Every event of every inspection in the order appended (by stamp), sorted again only after the cache has changed. */
  eventsInOrder(): readonly EventView[] {
    if (this.#ordered?.at !== this.#changes()) {
      const events = this.all()
        .flatMap((v) => this.events(v))
        .sort((a, b) => a.event.seq - b.event.seq);
      this.#ordered = { at: this.#changes(), events };
    }
    return this.#ordered.events;
  }

  /** The indexes by capture token, media and event, made again only after the cache has changed. */
  #indexes() {
    if (this.#index?.at === this.#changes()) return this.#index;
    const index = {
      at: this.#changes(),
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

  /**
   * An Inspection that holds the store's data itself (the capture annotation and status.store): as
   * the archive keeps them, and as releases before the InspectionRecord wrote them. Kept for the
   * object, which the cache replaces, never edits.
   */
  view(o: InspectionResource): InspectionView | null {
    let v = this.#views.get(o);
    if (v !== undefined) return v;
    const raw = o.metadata?.annotations?.[CAPTURE_ANNOTATION];
    const parsed = raw === undefined ? null : CaptureRecord.safeParse(parseJson(raw));
    if (!parsed?.success) v = null;
    else {
      const capture = parsed.data;
      const store = (o.status?.store as StoreStatus | undefined) ?? unmoved(capture);
      v = { object: o, capture, store, record: recordOf(o, capture, store), inspection: o, shown: true };
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

  /**
   * Creates a new inspection: its Inspection, then its record; false when the id is taken. An
   * Inspection left without its record by a create cut off between the two is taken up by the next
   * create of that id (the id of a retried create is the same: it comes from its Idempotency-Key).
   */
  async create(r: InspectionRecord, capture: CaptureRecord): Promise<boolean> {
    const body = inspectionResource(r, this.namespace);
    // Where there is an archive, nothing deletes the inspection before it is in it.
    const finalizers = this.#archive ? [ARCHIVE_FINALIZER] : undefined;
    body.metadata!.finalizers = finalizers;
    try {
      this.#cache.wrote((await this.#api.createNamespacedCustomObject({ ...this.#where(), body })) as InspectionResource);
    } catch (error) {
      if (apiStatus(error) !== CONFLICT) throw error;
      const there = await this.#fetch(body.metadata!.name!);
      if (!there || !isDeepStrictEqual(requestOf(there.spec), requestOf(body.spec))) return false;
    }
    const kept: KeptRecord = {
      apiVersion: `${INSPECTION_RECORD_RESOURCE.group}/${INSPECTION_RECORD_RESOURCE.version}`,
      kind: INSPECTION_RECORD_RESOURCE.kind,
      metadata: { name: body.metadata!.name, namespace: this.namespace, labels: body.metadata!.labels, finalizers },
      spec: { request: requestOf(body.spec), capture },
    };
    try {
      this.#kept.wrote(
        (await this.#api.createNamespacedCustomObject({ ...this.#where(INSPECTION_RECORD_RESOURCE), body: kept })) as KeptRecord,
      );
      return true;
    } catch (error) {
      if (apiStatus(error) === CONFLICT) return false;
      throw error;
    }
  }

  /**
   * The api's write: `change` is given the inspection as it stands and answers the capture record to
   * write (status is not the api's) or nothing to write. Made again on the newer version after a
   * 409. `missing` is the answer for an inspection that does not exist.
   */
  updateResource<R>(id: string, missing: R, change: (v: InspectionView) => Change<R>): Promise<R> {
    return this.#update(id, missing, change, async (v, { capture, cancel }) => {
      const name = resourceName(id);
      if (!v.kept) {
        // Not moved to its record yet (a release before's): written where that release wrote it.
        const annotations = { ...v.object.metadata?.annotations, [CAPTURE_ANNOTATION]: JSON.stringify(capture) };
        const spec = cancel ? { ...v.object.spec, cancelRequested: true } : v.object.spec;
        const body = { ...v.object, metadata: { ...v.object.metadata, annotations }, spec };
        this.#cache.wrote((await this.#api.replaceNamespacedCustomObject({ ...this.#where(), name, body })) as InspectionResource);
        return;
      }
      const body = { ...v.kept, spec: { ...v.kept.spec, capture } };
      this.#kept.wrote(
        (await this.#api.replaceNamespacedCustomObject({ ...this.#where(INSPECTION_RECORD_RESOURCE), name, body })) as KeptRecord,
      );
      // The intent is recorded; the spec says it too, for kubectl (what a kubectl user would set).
      if (cancel) await this.#cancelOnInspection(name);
    });
  }

  /** Sets the Inspection's spec.cancelRequested, on the latest version (it only ever goes from unset to true). */
  async #cancelOnInspection(name: string): Promise<void> {
    await retryOnConflict(
      `spec.cancelRequested of Inspection ${name}`,
      (attempt) => (attempt === 0 ? this.#cache.get(this.namespace, name) : this.#fetch(name)),
      async (o) => {
        if (!o || o.spec.cancelRequested) return;
        const body = { ...o, spec: { ...o.spec, cancelRequested: true } };
        this.#cache.wrote((await this.#api.replaceNamespacedCustomObject({ ...this.#where(), name, body })) as InspectionResource);
      },
      { onConflict: () => this.conflicts++ },
    ).catch(unlessNotFound(undefined));
  }

  /**
   * The controller's write of the store status (the record's status subresource), then of the
   * Inspection's status made from it (`show`). The record is what counts: a failed Inspection write
   * is counted (showFailures) and made again by the upkeep, not the move's failure.
   */
  updateStatus<R>(id: string, missing: R, change: (v: InspectionView) => { store?: StoreStatus; answer: R }): Promise<R> {
    return this.#update(
      id,
      missing,
      (v) => {
        const { store, answer } = change(v);
        return store ? { answer, write: store } : { answer };
      },
      async (v, store) => {
        const name = resourceName(id);
        if (!v.kept) {
          // Not moved to its record yet (a release before's): written where that release wrote it.
          const record = recordOf(v.object, v.capture, store);
          const shown = desiredStatus(record, store.reconciledGeneration, v.object.status?.conditions, Date.now());
          const body = { ...v.object, status: { ...shown, store } };
          this.#cache.wrote((await this.#api.replaceNamespacedCustomObjectStatus({ ...this.#where(), name, body })) as InspectionResource);
          return;
        }
        const body = { ...v.kept, status: { store } };
        this.#kept.wrote(
          (await this.#api.replaceNamespacedCustomObjectStatus({ ...this.#where(INSPECTION_RECORD_RESOURCE), name, body })) as KeptRecord,
        );
        await this.show(id).catch(() => this.showFailures++);
      },
    );
  }

  async #update<R, W>(
    id: string,
    missing: R,
    change: (v: InspectionView) => { write?: W; answer: R },
    write: (v: InspectionView, w: W) => Promise<void>,
  ): Promise<R> {
    const name = resourceName(id);
    let v: InspectionView | null = null;
    return retryOnConflict(
      `write of inspection ${id}`,
      async (attempt) => {
        // After a 409 the cache may not have the newer version yet: read it from the API server. A
        // record's write met a newer record, not a newer Inspection: only the record is read again.
        if (attempt === 0) v = this.byId(id) ?? (await this.#fetchView(name));
        else v = v?.kept ? await this.#refetchKept(name, v) : await this.#fetchView(name);
        return v;
      },
      async (current) => {
        if (!current) return missing;
        const { write: w, answer } = change(current);
        if (w === undefined) return answer;
        await write(current, w);
        return answer;
      },
      { onConflict: () => this.conflicts++ },
    ).catch(unlessNotFound(missing));
  }

  /** The inspection with its record as the API server has it now, and its Inspection as the cache does (or as `v` had it). */
  async #refetchKept(name: string, v: InspectionView): Promise<InspectionView | null> {
    const kept = await this.#fetchKept(name);
    if (!kept) return this.#fetchView(name);
    return this.#join(kept, this.#cache.get(this.namespace, name) ?? v.inspection);
  }

  /** The inspection as the API server has it now (its Inspection and record), not as the caches do. */
  async #fetchView(name: string): Promise<InspectionView | null> {
    const [inspection, kept] = await Promise.all([this.#fetch(name), this.#fetchKept(name)]);
    if (inspection?.metadata?.annotations?.[CAPTURE_ANNOTATION] !== undefined) return this.view(inspection);
    return kept ? this.#join(kept, inspection) : null;
  }

  /** The named object (an Inspection, or of `resource`) as the API server has it; undefined when there is none. */
  async #fetch<T = InspectionResource>(name: string, resource: Resource = INSPECTION_RESOURCE): Promise<T | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject({ ...this.#where(resource), name })) as T;
    } catch (error) {
      if (apiStatus(error) === NOT_FOUND) return undefined;
      throw error;
    }
  }

  #fetchKept(name: string): Promise<KeptRecord | undefined> {
    return this.#fetch<KeptRecord>(name, INSPECTION_RECORD_RESOURCE);
  }

  #where(resource: Resource = INSPECTION_RESOURCE) {
    const { group, version, plural } = resource;
    return { group, version, plural, namespace: this.namespace };
  }
}

/** A catch that answers `value` for a 404 (the object is gone) and throws anything else on. */
const unlessNotFound =
  <T>(value: T) =>
  (error: unknown): T => {
    if (apiStatus(error) === NOT_FOUND) return value;
    throw error;
  };
