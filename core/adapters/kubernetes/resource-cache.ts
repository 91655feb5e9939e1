import type { KubernetesObject, Watch } from "@kubernetes/client-node";
import { Listeners } from "../../runtime/listeners.ts";

type Listed<T> = { items: T[]; resourceVersion: string };

export type ResourceCacheOptions<T extends KubernetesObject> = {
  /** Lists every object (no resourceVersion: the latest, from etcd). */
  list(): Promise<Listed<T>>;
  watch: Watch;
  /** The collection's path, e.g. /apis/inspection.dev/v1/namespaces/<ns>/inspections. */
  path: string;
  /** A full relist this often besides the watch, as informers resync: what a watch might miss is repaired. */
  relistMs: number;
  /** Backoff after a failed list or watch: doubling from this, up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (error: unknown, retryInMs: number) => void;
  /**
   * Applied to every object before it is held (listed, watched or written), as client-go's
   * informers' SetTransform: to leave out what no reader needs (managedFields), so it takes no memory.
   */
  transform?: (object: T) => T;
};

const GONE = 410;
/** How many delivered versions are remembered: far more than can arrive between a write and its answer. */
const DELIVERED_WINDOW = 4096;
const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
const statusOf = (error: unknown): number | undefined => (error as { statusCode?: number; code?: number } | null)?.statusCode;

/**
 * A list-watch cache of one kind of object, the reads of the Kubernetes inspection store: what
 * @kubernetes/client-node's informer lacks, done here. Its informer stops on any error but 410, asks
 * for no bookmarks and has no resync, and the client's Watch ends a stream quiet for 30 s (2.0.1:
 * an inactivity timeout; 2.0.0 ended every watch after 30 s, its issue #3020). So: a watch that ends
 * for any reason is started again from the last resourceVersion seen, at once when it ended cleanly
 * or timed out, with backoff (doubling to maxBackoffMs) when it failed; bookmarks are asked for, so
 * that resourceVersion stays recent while nothing changes; a 410 (the version compacted away, in the
 * watch's response or as an ERROR event) relists; and a full relist every relistMs repairs anything a
 * watch missed. `staleMs()` says how long since the cache last heard from the API server, for the
 * informer-staleness metric and readiness.
 */
export class ResourceCache<T extends KubernetesObject> {
  readonly #o: ResourceCacheOptions<T>;
  readonly #objects = new Map<string, T>();
  /** Objects this process wrote, by key, until the watch shows that very version (see `wrote`). */
  readonly #written = new Map<string, T>();
  /** `key@resourceVersion` of the latest versions the watch delivered, oldest first (a bounded window). */
  readonly #delivered = new Set<string>();
  #changes = 0;
  readonly #events = new Listeners<{ type: "ADDED" | "MODIFIED" | "DELETED"; object: T }>();
  #resourceVersion = "";
  #heardAt = 0;
  #synced = Promise.withResolvers<void>();
  #stopped = false;
  #abort: AbortController | null = null;
  #relistTimer: NodeJS.Timeout | undefined;
  #wake: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #relistDue = false;
  /** What the cache has done, for the log and the tests: lists made, watches started, 410s met. */
  readonly stats = { lists: 0, watches: 0, gone: 0 };

  constructor(options: ResourceCacheOptions<T>) {
    this.#o = options;
  }

  /** Starts listing and watching; resolves once the first list is held. */
  start(): Promise<void> {
    this.#loop ??= this.#run();
    return this.#synced.promise;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#relistTimer);
    this.#abort?.abort();
    this.#wake?.();
    await this.#loop;
  }

  get(namespace: string, name: string): T | undefined {
    const key = `${namespace}/${name}`;
    return this.#written.get(key) ?? this.#objects.get(key);
  }

  list(): T[] {
    if (this.#written.size === 0) return [...this.#objects.values()];
    return [...new Map([...this.#objects, ...this.#written]).values()];
  }

  /**
   * Calls `listener` with each object the watch delivers (added, modified, deleted), once the cache
   * holds it: an informer's event handler. A relist tells nothing; what it changes is found by
   * those that list (a controller's resync). Answers a function that stops the calls.
   */
  onEvent(listener: (event: { type: "ADDED" | "MODIFIED" | "DELETED"; object: T }) => void): () => void {
    return this.#events.add(listener);
  }

  /**
   * Counts the changes the cache has taken in (events, lists, writes), so that a reader can keep
   * what it derives from the objects (an index) until the next change.
   */
  get changes(): number {
    return this.#changes;
  }

  /**
   * An object as the API server answered a write of this process: reads show it at once, not when
   * the watch gets to it, so a caller reads its own writes. It stands until the watch delivers that
   * same resourceVersion (events before it are older; after it, newer), the object is deleted, or a
   * list replaces it (see #relist). Only equality of versions is used, never their order, which
   * Kubernetes leaves opaque.
   */
  wrote(object: T): void {
    const key = keyOf(object);
    // The watch may deliver a version before the write's answer arrives: then it is held already.
    if (this.#delivered.has(`${key}@${object.metadata?.resourceVersion}`)) return;
    this.#written.set(key, this.#held(object));
    this.#changes++;
  }

  /** Milliseconds since the API server last told this cache anything (an event, a bookmark, a list). */
  staleMs(now = Date.now()): number {
    return this.#heardAt === 0 ? Number.POSITIVE_INFINITY : now - this.#heardAt;
  }

  async #run(): Promise<void> {
    let backoff = 0;
    let mustList = true;
    while (!this.#stopped) {
      try {
        if (mustList) {
          await this.#relist();
          mustList = false;
        }
        const began = Date.now();
        const ended = await this.#watchOnce();
        backoff = 0;
        if (ended === "gone") this.stats.gone++;
        if (ended !== "ended") mustList = true;
        // A server that ends watches as soon as they start must not be asked again in a tight loop.
        else if (Date.now() - began < 1_000) await this.#sleep(100);
      } catch (error) {
        if (this.#stopped) break;
        if (statusOf(error) === GONE) {
          this.stats.gone++;
          mustList = true;
          continue;
        }
        const min = this.#o.minBackoffMs ?? 100;
        backoff = backoff === 0 ? min : Math.min(backoff * 2, this.#o.maxBackoffMs ?? 30_000);
        this.#o.onError?.(error, backoff);
        await this.#sleep(backoff);
      }
    }
  }

  #held(object: T): T {
    return this.#o.transform ? this.#o.transform(object) : object;
  }

  async #relist(): Promise<void> {
    // The writes held when the list was asked for: any made later was made while it was in flight.
    const heldBefore = new Set(this.#written.values());
    const { items, resourceVersion } = await this.#o.list();
    this.stats.lists++;
    const seen = new Set<string>();
    for (const item of items) {
      const key = keyOf(item);
      seen.add(key);
      this.#objects.set(key, this.#held(item));
    }
    for (const key of [...this.#objects.keys()]) if (!seen.has(key)) this.#objects.delete(key);
    // The list replaces this process's writes, but for one made while the list was in flight of an
    // object the list lacks: created after the list's snapshot, its creation is among what the watch,
    // from the list's version, delivers next, and until then reads would not find what this process
    // just made (an inspection created, its capture link "not found"). Had it been deleted between
    // the write and the list instead (a race of milliseconds), the watch never tells, and reads show
    // it until the next relist (relistMs). One the list holds goes, whichever is newer: the versions'
    // order is not known, and a newer one of this process's comes by the watch.
    for (const [key, mine] of this.#written) if (heldBefore.has(mine) || seen.has(key)) this.#written.delete(key);
    this.#changes++;
    this.#resourceVersion = resourceVersion;
    this.#heardAt = Date.now();
    this.#synced.resolve();
    clearTimeout(this.#relistTimer);
    // The periodic relist: the watch is ended, and the loop lists before watching again.
    this.#relistTimer = setTimeout(() => {
      this.#relistDue = true;
      this.#abort?.abort();
    }, this.#o.relistMs).unref();
  }

  /** One watch from the held resourceVersion, until it ends: "gone" on a 410, "relist" when the periodic relist is due, "ended" otherwise. */
  async #watchOnce(): Promise<"gone" | "relist" | "ended"> {
    const { promise, resolve, reject } = Promise.withResolvers<"gone" | "relist" | "ended">();
    let gone = false;
    const query = { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300 };
    this.stats.watches++;
    this.#abort = await this.#o.watch.watch(
      this.#o.path,
      query,
      (type: string, object: T & { code?: number }) => {
        this.#heardAt = Date.now();
        if (type === "ERROR") {
          if (object.code === GONE) gone = true;
          this.#abort?.abort();
          return;
        }
        const resourceVersion = object.metadata?.resourceVersion;
        if (resourceVersion) this.#resourceVersion = resourceVersion;
        if (type === "BOOKMARK") return;
        const key = keyOf(object);
        if (type === "DELETED") this.#objects.delete(key);
        else this.#objects.set(key, this.#held(object));
        this.#delivered.add(`${key}@${resourceVersion}`);
        if (this.#delivered.size > DELIVERED_WINDOW) this.#delivered.delete(this.#delivered.values().next().value!);
        const mine = this.#written.get(key);
        if (mine && (type === "DELETED" || mine.metadata?.resourceVersion === resourceVersion)) this.#written.delete(key);
        this.#changes++;
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.#events.emit({ type, object });
      },
      (error: unknown) => {
        if (this.#relistDue) {
          this.#relistDue = false;
          return resolve("relist");
        }
        if (gone || statusOf(error) === GONE) return resolve("gone");
        // Closed by the server (its timeoutSeconds), or quiet past the client's inactivity timeout: not failures.
        const name = (error as { name?: string } | null)?.name;
        if (!error || name === "TimeoutError" || this.#stopped) return resolve("ended");
        reject(error);
      },
    );
    // Stopped while the watch was being made: stop() found none to end, and this one would run on
    // until the client's inactivity timeout, holding stop() (and a command's end) 30 s.
    if (this.#stopped) this.#abort.abort();
    return promise;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
