import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV, Kvm, KvWatchEntry } from "@nats-io/kv";
import { ClosedConnectionError, type QueuedIterator } from "@nats-io/transport-node";
import { type Allowance, peekAt, takeOne } from "../../domain/allowance.ts";
import type { RateLimitStore } from "../../ports/rate-limit-store.ts";
import { isRevisionConflict, natsCall } from "./nats-connection.ts";

type Held = { fullAt: number; revision: number };

const WHAT = "The rate-limit store";
const MAX_ROUNDS = 8;
/** Past this many keys held, a take first forgets those whose buckets are full again. */
const PRUNE_AT = 10_000;
const REWATCH_MS = 1_000;

/** KV keys allow only `[-/_=.a-zA-Z0-9]`, and limit keys hold addresses and tokens: a digest is the key. */
const kvKey = (key: string) => createHash("sha256").update(key).digest("base64url").slice(0, 32);

export type NatsRateLimitStoreOptions = {
  bucket: string;
  /** How long an untouched key is kept: longer than any window counted in it. */
  ttlMs: number;
  /**
   * Follow every replica's writes with a KV watch, so `peek` answers from memory and sees them: for
   * limits checked on every request but counted rarely (failed authentications). Without it, `peek`
   * reads the bucket.
   */
  watch: boolean;
  onWatchError?: (error: unknown) => void;
};

/**
 * Rate-limit counters in a NATS JetStream KV bucket that every API replica shares: one value per
 * key (`core/domain/allowance.ts`), written by compare-and-set on the revision this replica last
 * saw. A take usually costs one round trip: the held revision is right unless another replica
 * counted the same key since, and then it reads the key and counts again. A refused request costs
 * none: what is held can only be behind the bucket, so a refusal from it stands. Takes of one key
 * in this process run one after another, so they do not race each other's revisions.
 */
export class NatsRateLimitStore implements RateLimitStore {
  readonly #kv: KV;
  readonly #watching: boolean;
  readonly #onWatchError: (error: unknown) => void;
  readonly #held = new Map<string, Held>();
  readonly #queues = new Map<string, Promise<unknown>>();
  #watch: QueuedIterator<KvWatchEntry> | null = null;
  #closed = false;

  private constructor(kv: KV, options: NatsRateLimitStoreOptions) {
    this.#kv = kv;
    this.#watching = options.watch;
    this.#onWatchError = options.onWatchError ?? (() => {});
    if (options.watch) void this.#follow();
  }

  /** Opens the bucket, made on first use (memory storage: counters need not outlive the servers). */
  static async open(kvm: Kvm, options: NatsRateLimitStoreOptions): Promise<NatsRateLimitStore> {
    const kv = await natsCall(WHAT, () => kvm.create(options.bucket, { history: 1, ttl: options.ttlMs, storage: "memory" }));
    return new NatsRateLimitStore(kv, options);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.stop();
  }

  take(key: string, limit: number, windowMs: number, now: number): Promise<Allowance> {
    const k = kvKey(key);
    // One take of a key at a time in this process: chained, so each starts from the last one's revision.
    const run = (this.#queues.get(k) ?? Promise.resolve()).then(() => natsCall(WHAT, () => this.#take(k, limit, windowMs, now)));
    const tail = run.catch(() => {});
    this.#queues.set(k, tail);
    void tail.then(() => {
      if (this.#queues.get(k) === tail) this.#queues.delete(k);
    });
    return run;
  }

  async peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance> {
    const k = kvKey(key);
    if (!this.#watching) await natsCall(WHAT, () => this.#read(k));
    return peekAt(this.#held.get(k)?.fullAt ?? null, limit, windowMs, now);
  }

  async #take(k: string, limit: number, windowMs: number, now: number): Promise<Allowance> {
    if (this.#held.size >= PRUNE_AT) this.#prune(now);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const held = this.#held.get(k);
      const allowance = takeOne(held?.fullAt ?? null, limit, windowMs, now);
      if (!allowance.allowed) return allowance;
      const value = String(allowance.fullAt);
      try {
        const revision = await (held ? this.#kv.update(k, value, held.revision) : this.#kv.create(k, value));
        this.#see(k, allowance.fullAt, revision);
        return allowance;
      } catch (error) {
        if (!isRevisionConflict(error)) throw error;
      }
      // Another replica counted this key since (or it expired): read it and count again.
      await this.#read(k);
    }
    throw new Error(`rate-limit key ${k} kept changing under ${MAX_ROUNDS} attempts to count it`);
  }

  async #read(k: string): Promise<void> {
    const entry = await this.#kv.get(k);
    if (entry?.operation === "PUT") this.#see(k, Number(entry.string()), entry.revision);
    else this.#held.delete(k);
  }

  /** Keeps what a revision says of a key, unless a later one is held. */
  #see(k: string, fullAt: number, revision: number): void {
    const held = this.#held.get(k);
    if (!held || held.revision < revision) this.#held.set(k, { fullAt, revision });
  }

  #prune(now: number): void {
    for (const [k, held] of this.#held) if (held.fullAt <= now) this.#held.delete(k);
  }

  /** Follows the bucket for as long as the store is open; never rejects (failures go to onWatchError). */
  async #follow(): Promise<void> {
    while (!this.#closed) {
      try {
        const watch = await this.#kv.watch();
        this.#watch = watch;
        if (this.#closed) watch.stop();
        for await (const e of watch) {
          if (e.operation === "PUT") this.#see(e.key, Number(e.string()), e.revision);
          else this.#held.delete(e.key);
        }
      } catch (error) {
        if (error instanceof ClosedConnectionError) return;
        this.#onWatchError(error);
      }
      if (!this.#closed) await sleep(REWATCH_MS, undefined, { ref: false });
    }
  }
}
