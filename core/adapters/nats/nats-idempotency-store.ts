import type { KV, KvEntry, Kvm } from "@nats-io/kv";
import { sha256 } from "../../domain/ids.ts";
import { type BeginResult, type IdempotencyStore, STALE_IN_FLIGHT_MS, type StoredResponse } from "../../ports/idempotency-store.ts";
import type { Scope } from "../../ports/records.ts";
import { firstWriter, natsCall, storedValue } from "./nats-connection.ts";

/** A key's value in the bucket; times are the callers' Unix milliseconds. */
type Entry = { fingerprint: string; createdAt: number; response: StoredResponse | null };

/** Rounds of read-then-write a call may lose to other writers of the same key before it gives up. */
const MAX_ROUNDS = 8;
const WHAT = "The idempotency key store";

/**
 * KV keys allow only `[-/_=.a-zA-Z0-9]`, and a client's key is any printable text up to 255
 * characters: its hash stands for it, under the account (base64url) and environment.
 */
const kvKey = (scope: Scope, key: string) =>
  `${Buffer.from(scope.accountId).toString("base64url")}.${scope.livemode ? "live" : "test"}.${sha256(key)}`;

const encode = (entry: Entry) => JSON.stringify(entry);

/**
 * Idempotency keys in a NATS JetStream KV bucket, shared by every API replica. The bucket's TTL
 * (max age) is the retention, so the server drops old keys itself. First writer wins: every write
 * is checked on the server against the revision it was decided on (0: never written), so of many
 * concurrent begins exactly one gets `started`, whichever replica each runs on.
 */
export class NatsIdempotencyStore implements IdempotencyStore {
  readonly #kv: KV;

  private constructor(kv: KV) {
    this.#kv = kv;
  }

  /** Opens the bucket, made on first use with file storage, one value per key and `retentionMs` as its TTL. */
  static async open(kvm: Kvm, options: { bucket?: string; retentionMs: number }): Promise<NatsIdempotencyStore> {
    const kv = await natsCall(WHAT, () => kvm.create(options.bucket ?? "idempotency", { history: 1, ttl: options.retentionMs }));
    return new NatsIdempotencyStore(kv);
  }

  async begin(scope: Scope, key: string, fingerprint: string, now: number, retentionMs: number): Promise<BeginResult> {
    const k = kvKey(scope, key);
    const mine = encode({ fingerprint, createdAt: now, response: null });
    return natsCall(WHAT, async () => {
      // Most keys are new: one write that succeeds only where the key has never been written.
      // (kv.create would read the key again after a conflict, and wait out a second timeout in an outage.)
      if (await firstWriter(this.#kv.put(k, mine, { previousSeq: 0 }))) return { kind: "started" };
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const current = await this.#kv.get(k);
        const entry = storedValue<Entry>(current);
        // Abandoned (a delete marker), past retention (gone even before the TTL drops it), or in flight
        // for longer than any request runs (its replica died mid-request): the key is free. Written on
        // the revision read, so of two racers only one takes it.
        const free =
          !entry || entry.createdAt <= now - retentionMs || (entry.response === null && entry.createdAt <= now - STALE_IN_FLIGHT_MS);
        if (free) {
          if (await firstWriter(this.#kv.put(k, mine, { previousSeq: current?.revision ?? 0 }))) return { kind: "started" };
          continue;
        }
        if (entry.fingerprint !== fingerprint) return { kind: "mismatch" };
        return entry.response ? { kind: "replay", response: entry.response } : { kind: "in_flight" };
      }
      throw new Error(`idempotency key ${k} kept changing under ${MAX_ROUNDS} attempts to begin it`);
    });
  }

  async complete(scope: Scope, key: string, response: StoredResponse): Promise<void> {
    const k = kvKey(scope, key);
    await natsCall(WHAT, async () => {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const current = await this.#kv.get(k);
        const entry = storedValue<Entry>(current);
        if (!entry) return;
        if (await firstWriter(this.#kv.update(k, encode({ ...entry, response }), current!.revision))) return;
      }
      throw new Error(`idempotency key ${k} kept changing under ${MAX_ROUNDS} attempts to complete it`);
    });
  }

  async abandon(scope: Scope, key: string): Promise<void> {
    const k = kvKey(scope, key);
    await natsCall(WHAT, async () => {
      const current = await this.#kv.get(k);
      const entry = storedValue<Entry>(current);
      // Only a key still in flight: a stored response stays. A lost race means another begin took it.
      if (entry && entry.response === null) await firstWriter(this.#kv.delete(k, { previousSeq: current!.revision }));
    });
  }

  /**
   * What the bucket's TTL has not dropped yet: keys begun at or before `olderThan`. It reads the
   * whole bucket, so in cluster mode the TTL is the sweep, and this is for an explicit clean-up.
   */
  async purge(olderThan: number): Promise<number> {
    return natsCall(WHAT, async () => {
      const old: KvEntry[] = [];
      for await (const e of await this.#kv.history()) {
        if ((storedValue<Entry>(e)?.createdAt ?? Number.POSITIVE_INFINITY) <= olderThan) old.push(e);
      }
      let removed = 0;
      for (const e of old) {
        if (await firstWriter(this.#kv.delete(e.key, { previousSeq: e.revision }))) removed++;
      }
      return removed;
    });
  }
}
