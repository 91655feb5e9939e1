import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV, Kvm, KvWatchEntry } from "@nats-io/kv";
import { ClosedConnectionError, type QueuedIterator } from "@nats-io/transport-node";
import { type Allowance, peekAt, takeOne } from "../../domain/allowance.ts";
import type { RateLimitStore } from "../../ports/rate-limit-store.ts";
import { isRevisionConflict, natsCall } from "./nats-connection.ts";

type Held = { fullAt: number; revision: number };
type Waiting = { limit: number; windowMs: number; now: number; resolve(a: Allowance): void; reject(error: unknown): void };

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
 * none: what is held can only be behind the bucket, so a refusal from it stands. The takes of one key
 * that arrive while its write is out are counted together and written in one: a key's requests
 * cost a round trip per batch, not each (counted one by one, a busy key's requests waited on each
 * other's round trips: 3,333 a second through one replica), and never race their own revisions.
 */
export class NatsRateLimitStore implements RateLimitStore {
  readonly #kv: KV;
  readonly #watching: boolean;
  readonly #onWatchError: (error: unknown) => void;
  readonly #held = new Map<string, Held>();
  /** Takes of a key waiting for its write under way, counted together in the next one. */
  readonly #waiting = new Map<string, Waiting[]>();
  readonly #writing = new Set<string>();
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
    return new Promise((resolve, reject) => {
      const waiting = this.#waiting.get(k);
      if (waiting) waiting.push({ limit, windowMs, now, resolve, reject });
      else this.#waiting.set(k, [{ limit, windowMs, now, resolve, reject }]);
      if (!this.#writing.has(k)) void this.#write(k);
    });
  }

  /** Counts and writes the key's waiting takes, batch after batch, until none wait. Never rejects. */
  async #write(k: string): Promise<void> {
    this.#writing.add(k);
    try {
      for (let batch = this.#waiting.get(k); batch; batch = this.#waiting.get(k)) {
        this.#waiting.delete(k);
        try {
          const answers = await natsCall(WHAT, () => this.#takeAll(k, batch!));
          for (const [i, w] of batch.entries()) w.resolve(answers[i]!);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      this.#writing.delete(k);
    }
  }

  async peek(key: string, limit: number, windowMs: number, now: number): Promise<Allowance> {
    const k = kvKey(key);
    if (!this.#watching) await natsCall(WHAT, () => this.#read(k));
    return peekAt(this.#held.get(k)?.fullAt ?? null, limit, windowMs, now);
  }

  /** The batch's answers, in its order, once the key's new time is written (or nothing was allowed). */
  async #takeAll(k: string, batch: Waiting[]): Promise<Allowance[]> {
    if (this.#held.size >= PRUNE_AT) this.#prune(batch[0]!.now);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const held = this.#held.get(k);
      let fullAt = held?.fullAt ?? null;
      const answers = batch.map((w) => {
        const a = takeOne(fullAt, w.limit, w.windowMs, w.now);
        if (a.allowed) fullAt = a.fullAt;
        return a;
      });
      // All refused: nothing to write, and a refusal from what is held stands.
      if (fullAt === null || fullAt === held?.fullAt) return answers;
      const value = String(fullAt);
      try {
        const revision = await (held ? this.#kv.update(k, value, held.revision) : this.#kv.create(k, value));
        this.#see(k, fullAt, revision);
        return answers;
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
