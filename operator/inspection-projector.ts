import { isDeepStrictEqual } from "node:util";
import type { CustomObjectsApi } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { apiStatus, CONFLICT, NOT_FOUND } from "../core/adapters/kubernetes/api-status.ts";
import type { ResourceCache } from "../core/adapters/kubernetes/resource-cache.ts";
import { isCancelable } from "../core/domain/state-machine.ts";
import type { InspectionStore } from "../core/ports/inspection-store.ts";
import { INSPECTION_RESOURCE } from "../core/schemas/inspection-resource.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import type { Clock } from "../core/runtime/time.ts";
import {
  desiredStatus,
  idOfResource,
  type InspectionResource,
  inspectionResource,
  prunedAt,
  resourceName,
} from "../core/adapters/kubernetes/inspection-resource.ts";
import { repeat } from "./repeat.ts";
import { WorkQueue } from "./work-queue.ts";

export type InspectionProjectorOptions = {
  store: InspectionStore;
  api: CustomObjectsApi;
  /** The namespace's Inspections, listed and watched: what exists, and what kubectl changed. */
  cache: ResourceCache<InspectionResource>;
  namespace: string;
  /** How long a finished inspection's resource stays before it is pruned. */
  retentionMs: number;
  /** How often the store's feed of changes is read. */
  pollMs: number;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
};

/** Records read from the feed at a time. */
const PAGE = 500;
/**
 * The feed is read again from this far behind its last position: a write by another process (the
 * API's create) may commit after a later one was read, its time from another clock.
 */
const OVERLAP_MS = 10_000;
/** Every resource is made right again this often, as informers resync: whatever a pass missed. */
const RESYNC_MS = 5 * 60_000;

/**
 * Keeps an `Inspection` resource for every inspection while the store holds the records: a
 * projection, so that `kubectl get inspections` shows them and a platform team can cancel one by
 * setting `spec.cancelRequested`. Run by the leading operator (or `start`), as controller-runtime
 * reconciles: level-driven, one key at a time from a rate-limited work queue (operator/work-queue.ts),
 * each pass making the resource what the record says (created, its status written through the
 * status subresource with the resourceVersion read, so a 409 retries with backoff once the cache has
 * caught up), a cancel set on the spec recorded as the cancel intent, and the resource of an
 * inspection finished more than `retentionMs` ago deleted, while its record and report stay readable
 * through the API.
 */
export class InspectionProjector {
  readonly #o: InspectionProjectorOptions;
  readonly #queue: WorkQueue;
  #cursor: { updatedAt: number; id: string } | null = null;
  #resyncAt = 0;
  #loop: { stop(): Promise<void> } | undefined;
  #stopped = false;
  readonly #stopping = Promise.withResolvers<void>();
  /** The last write of each resource, for a cache that has not seen it yet: `from` the resourceVersion it replaced. */
  readonly #written = new Map<string, { from: string | undefined; resource: InspectionResource }>();
  /** The resourceVersion each resource had when it was last made right: another version is someone else's change. */
  readonly #reconciled = new Map<string, string | undefined>();
  /** The record's updatedAt each inspection's resource was last made right from, within the feed's overlap. */
  readonly #projected = new Map<string, number>();

  constructor(options: InspectionProjectorOptions) {
    this.#o = options;
    this.#queue = new WorkQueue({
      clock: options.clock,
      handle: (id) => this.reconcile(id),
      onError: (id, err, retryInMs) => {
        // A conflict is the resource changing under the write, met and handled as designed: not an error.
        if (apiStatus(err) === CONFLICT) {
          options.log.debug({ inspection_id: id, retry_in_ms: retryInMs }, "inspection resource changed since read; again");
          return;
        }
        options.metrics?.reconcileErrors.inc({ controller: "projector" });
        options.log.warn({ err, inspection_id: id, retry_in_ms: retryInMs }, "keeping the inspection resource failed; again");
      },
    });
  }

  /** Starts the passes, the first once the cache holds its first list (not before: it would take every resource for missing). */
  start(): void {
    this.#loop = repeat(
      async () => {
        await Promise.race([this.#o.cache.start(), this.#stopping.promise]);
        if (!this.#stopped) await this.#readFeed();
      },
      this.#o.pollMs,
      (err) => this.#o.log.warn({ err }, "reading the inspections' feed failed; again"),
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.resolve();
    await this.#loop?.stop();
    await this.#queue.stop();
  }

  /**
   * Queues every inspection created or moved since the last read (all of them at the first read,
   * but those whose resource is already due for pruning), and every resource someone else changed;
   * every RESYNC_MS, every resource, as informers resync.
   */
  async #readFeed(): Promise<void> {
    const now = this.#o.clock.now();
    let from = this.#cursor && { updatedAt: this.#cursor.updatedAt - OVERLAP_MS, id: "" };
    for (;;) {
      const changed = await this.#o.store.changedSince(from, PAGE);
      for (const r of changed) {
        const pruneAt = prunedAt(r, this.#o.retentionMs);
        // Read again within the overlap, unchanged since it was made right: nothing to do.
        if (this.#projected.get(r.id) === r.updatedAt || (pruneAt !== null && pruneAt <= now)) continue;
        this.#queue.add(r.id);
      }
      const last = changed.at(-1);
      if (last) this.#cursor = from = { updatedAt: last.updatedAt, id: last.id };
      if (changed.length < PAGE) break;
    }
    // Only what the overlap may read again needs remembering.
    const forgetBefore = (from?.updatedAt ?? 0) - OVERLAP_MS;
    for (const [id, updatedAt] of this.#projected) if (updatedAt < forgetBefore) this.#projected.delete(id);
    const resync = now >= this.#resyncAt;
    if (resync) this.#resyncAt = now + RESYNC_MS;
    // A resource changed by someone else (a cancel set with kubectl, a status written over) is made right again.
    const names = new Set<string>();
    for (const resource of this.#o.cache.list()) {
      const name = resource.metadata!.name!;
      names.add(name);
      const changedByOthers = this.#reconciled.get(name) !== resource.metadata?.resourceVersion && this.#current(name) === resource;
      if (resync || changedByOthers) this.#queue.add(idOfResource(name));
    }
    for (const name of this.#reconciled.keys()) if (!names.has(name)) this.#reconciled.delete(name);
  }

  /** One inspection's resource made what its record says; when to look again (its pruning), or null. */
  async reconcile(id: string): Promise<number | null> {
    const { store, namespace, retentionMs, clock } = this.#o;
    const r = await store.getById(id);
    if (!r) return null;
    const name = resourceName(id);
    const now = clock.now();
    let resource = this.#current(name);
    const pruneAt = prunedAt(r, retentionMs);
    if (pruneAt !== null && now >= pruneAt) {
      if (resource) await this.#delete(name);
      return null;
    }
    resource ??= await this.#create(inspectionResource(r, namespace));
    if (resource.spec.cancelRequested && isCancelable(r.status) && r.cancelRequestedAt === null) {
      await store.recordCancelRequested(id, now);
      this.#o.log.info({ inspection_id: id }, "cancel requested on the inspection resource");
    }
    const status = desiredStatus(r, resource.metadata!.generation ?? 1, resource.status?.conditions, now);
    if (!isDeepStrictEqual(status, resource.status ?? {})) resource = await this.#writeStatus(name, { ...resource, status });
    this.#reconciled.set(name, resource.metadata?.resourceVersion);
    this.#projected.set(id, r.updatedAt);
    return pruneAt === null ? null : Math.max(0, pruneAt - now);
  }

  /** The resource as last known: the cache's, or this projector's own write where the cache is behind it. */
  #current(name: string): InspectionResource | undefined {
    const cached = this.#o.cache.get(this.#o.namespace, name);
    const written = this.#written.get(name);
    if (written && (cached === undefined || cached.metadata?.resourceVersion === written.from)) return written.resource;
    this.#written.delete(name);
    return cached;
  }

  async #create(resource: InspectionResource): Promise<InspectionResource> {
    const name = resource.metadata!.name!;
    try {
      const made = (await this.#o.api.createNamespacedCustomObject({ ...this.#where(), body: resource })) as InspectionResource;
      this.#written.set(name, { from: undefined, resource: made });
      return made;
    } catch (error) {
      // Made already (by an earlier leader, or before the cache saw it): take it as it is.
      if (apiStatus(error) !== CONFLICT) throw error;
      return (await this.#o.api.getNamespacedCustomObject({ ...this.#where(), name })) as InspectionResource;
    }
  }

  async #writeStatus(name: string, resource: InspectionResource): Promise<InspectionResource> {
    const written = (await this.#o.api.replaceNamespacedCustomObjectStatus({
      ...this.#where(),
      name,
      body: resource,
    })) as InspectionResource;
    this.#written.set(name, { from: resource.metadata?.resourceVersion, resource: written });
    this.#o.log.debug({ inspection_id: idOfResource(name), phase: resource.status?.phase }, "inspection resource status written");
    return written;
  }

  async #delete(name: string): Promise<void> {
    try {
      await this.#o.api.deleteNamespacedCustomObject({ ...this.#where(), name });
      this.#o.log.info({ inspection_id: idOfResource(name) }, "finished inspection's resource pruned");
    } catch (error) {
      if (apiStatus(error) !== NOT_FOUND) throw error;
    }
    this.#written.delete(name);
  }

  #where() {
    return {
      group: INSPECTION_RESOURCE.group,
      version: INSPECTION_RESOURCE.version,
      plural: INSPECTION_RESOURCE.plural,
      namespace: this.#o.namespace,
    };
  }
}
