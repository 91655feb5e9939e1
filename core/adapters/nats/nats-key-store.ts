import { type Branding, NO_BRANDING } from "../../domain/branding.ts";
import { DEFAULT_REVIEW_POLICY, type ReviewPolicy } from "../../domain/review.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV, Kvm, KvWatchEntry } from "@nats-io/kv";
import { ClosedConnectionError, type QueuedIterator } from "@nats-io/transport-node";
import { storeUnavailable } from "../../domain/errors.ts";
import type { Environment } from "../../domain/ids.ts";
import { kvToken, NatsAccounts } from "./nats-accounts.ts";
import {
  type AccountRecord,
  accountsByCreation,
  type ApiKeyRecord,
  byCreation,
  type KeyStore,
  newestFirst,
  signingAt,
  type WebhookSecretRecord,
} from "../../ports/key-store.ts";
import { firstWriter, natsCall, storedValue } from "./nats-connection.ts";

type Held = { record: ApiKeyRecord | null; revision: number };
/** An account and environment's settings, one KV value. */
type AccountSettings = { reviewPolicy: ReviewPolicy };

const WHAT = "The API key store";
const MAX_ROUNDS = 8;
/** How long a read waits for the keys that exist to be loaded before it fails (NATS out of reach at startup). */
const LOAD_TIMEOUT_MS = 10_000;
/** Pause before watching again once a watch has ended (the ordered consumer gave up; NATS gone for long). */
const REWATCH_MS = 1_000;

const token = kvToken;
const pairKey = (accountId: string, livemode: boolean) => `${token(accountId)}.${livemode ? "live" : "test"}`;

export type NatsKeyStoreOptions = {
  /** Put before each bucket's name (`accounts`, `api-keys`, `api-key-ids`, `webhook-secrets`, `account-settings`). */
  prefix?: string;
  /** Told when the watch that keeps the key cache fresh fails and is started again. */
  onWatchError?: (error: unknown) => void;
};

/**
 * Accounts, API key hashes and webhook secrets in NATS JetStream KV buckets, shared by every API
 * replica and the CLI. Every /v1 request looks its key up: the keys are held in memory, loaded and
 * kept fresh by a KV watch, so a lookup costs no round trip and a key revoked elsewhere is refused
 * as soon as the watch delivers the change (milliseconds; after a NATS outage, once the watch has
 * caught up). Writes are revision-checked, so two replicas racing make one account, not two.
 */
export class NatsKeyStore implements KeyStore {
  readonly #accounts: NatsAccounts;
  readonly #keys: KV;
  readonly #keyIds: KV;
  readonly #secrets: KV;
  readonly #settings: KV;
  readonly #onWatchError: (error: unknown) => void;
  /** By the key's KV key (its hash, encoded); a null record is a deleted key. */
  readonly #held = new Map<string, Held>();
  readonly #loaded = Promise.withResolvers<void>();
  #isLoaded = false;
  #watching = false;
  #closed = false;
  #watch: QueuedIterator<KvWatchEntry> | null = null;

  private constructor(accounts: NatsAccounts, buckets: KV[], onWatchError: (error: unknown) => void) {
    this.#accounts = accounts;
    [this.#keys, this.#keyIds, this.#secrets, this.#settings] = buckets as [KV, KV, KV, KV];
    this.#onWatchError = onWatchError;
  }

  /** Opens the buckets, made on first use (file storage, one value per key). The watch starts with the first read. */
  static async open(kvm: Kvm, options: NatsKeyStoreOptions = {}): Promise<NatsKeyStore> {
    const names = ["api-keys", "api-key-ids", "webhook-secrets", "account-settings"].map((n) => `${options.prefix ?? ""}${n}`);
    const buckets = await natsCall(WHAT, () => Promise.all(names.map((n) => kvm.create(n, { history: 1 }))));
    return new NatsKeyStore(await NatsAccounts.open(kvm, options.prefix), buckets, options.onWatchError ?? (() => {}));
  }

  /** Stops the watch; the connection is the caller's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.stop();
  }

  async createKey(
    accountName: string,
    env: Environment,
    keyHash: string,
    last4: string,
    keyId: string,
    now: number,
  ): Promise<ApiKeyRecord> {
    return natsCall(WHAT, async () => {
      const accountId = await this.#accounts.id(accountName, now);
      const record: ApiKeyRecord = { id: keyId, accountId, accountName, livemode: env === "live", last4, createdAt: now, revokedAt: null };
      // The id first: an id left without its key (a crash between the two) revokes nothing and lists nothing.
      if (!(await firstWriter(this.#keyIds.create(token(keyId), keyHash)))) throw new Error(`API key id ${keyId} exists`);
      let revision: number;
      try {
        revision = await this.#keys.create(token(keyHash), JSON.stringify(record));
      } catch (error) {
        await this.#keyIds.delete(token(keyId));
        throw error;
      }
      this.#see(token(keyHash), record, revision);
      return record;
    });
  }

  async findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    if (!this.#isLoaded) await this.#load();
    const k = token(keyHash);
    const held = this.#held.get(k);
    if (held) return held.record;
    // Not held: a wrong key (failed authentications are rate limited), or one made elsewhere an
    // instant ago that the watch has not delivered yet, which a client may use at once.
    const entry = await natsCall(WHAT, () => this.#keys.get(k));
    if (entry?.operation !== "PUT") return null;
    this.#see(k, entry.json<ApiKeyRecord>(), entry.revision);
    return this.#held.get(k)!.record;
  }

  async list(): Promise<ApiKeyRecord[]> {
    await this.#load();
    return this.#records().sort(byCreation);
  }

  async listIn(accountId: string, livemode: boolean): Promise<ApiKeyRecord[]> {
    await this.#load();
    return this.#records()
      .filter((k) => k.accountId === accountId && k.livemode === livemode)
      .sort(newestFirst);
  }

  async revoke(keyId: string, now: number): Promise<boolean> {
    return natsCall(WHAT, async () => {
      const hash = (await this.#keyIds.get(token(keyId)))?.string();
      if (!hash) return false;
      const k = token(hash);
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const current = await this.#keys.get(k);
        const record = storedValue<ApiKeyRecord>(current);
        if (!record) return false;
        // Revoked once, revoked at that time: a second revoke changes nothing.
        if (record.revokedAt !== null) return true;
        const revoked = { ...record, revokedAt: now };
        const write = this.#keys.update(k, JSON.stringify(revoked), current!.revision);
        if (await firstWriter(write)) {
          this.#see(k, revoked, await write);
          return true;
        }
      }
      throw new Error(`API key ${keyId} kept changing under ${MAX_ROUNDS} attempts to revoke it`);
    });
  }

  async accountId(accountName: string, now: number): Promise<string> {
    return natsCall(WHAT, () => this.#accounts.id(accountName, now));
  }

  async accounts(): Promise<AccountRecord[]> {
    return natsCall(WHAT, async () => (await this.#accounts.all()).sort(accountsByCreation));
  }

  async adoptAccount(account: AccountRecord): Promise<string> {
    return natsCall(WHAT, () => this.#accounts.adopt(account));
  }

  /** From the `api-key-ids` bucket, which holds each key id's hash. */
  async keyHashes(): Promise<Map<string, string>> {
    return natsCall(WHAT, async () => {
      const ids: string[] = [];
      for await (const k of await this.#keyIds.keys()) ids.push(k);
      const hashes = await Promise.all(ids.map(async (k) => [k, await this.#keyIds.get(k)] as const));
      return new Map(
        hashes.filter(([, e]) => e?.operation === "PUT").map(([k, e]) => [Buffer.from(k, "base64url").toString(), e!.string()]),
      );
    });
  }

  async webhookSecret(accountName: string, env: Environment, make: () => string, now: number): Promise<string> {
    return natsCall(WHAT, async () => (await this.#signing(await this.#accounts.id(accountName, now), env === "live", make, now)).secret);
  }

  async reviewPolicy(accountId: string, livemode: boolean): Promise<ReviewPolicy> {
    return natsCall(WHAT, async () => {
      const settings = storedValue<AccountSettings>(await this.#settings.get(pairKey(accountId, livemode)));
      return settings?.reviewPolicy ?? DEFAULT_REVIEW_POLICY;
    });
  }

  async setReviewPolicy(accountId: string, livemode: boolean, policy: ReviewPolicy): Promise<void> {
    const settings: AccountSettings = { reviewPolicy: policy };
    await natsCall(WHAT, () => this.#settings.put(pairKey(accountId, livemode), JSON.stringify(settings)));
  }

  /** In the account-settings bucket beside the review policies, under `<account>.branding`. */
  async branding(accountId: string): Promise<Branding> {
    return natsCall(WHAT, async () => storedValue<Branding>(await this.#settings.get(`${token(accountId)}.branding`)) ?? NO_BRANDING);
  }

  async setBranding(accountId: string, branding: Branding): Promise<void> {
    await natsCall(WHAT, () => this.#settings.put(`${token(accountId)}.branding`, JSON.stringify(branding)));
  }

  async webhookSecretFor(accountId: string, livemode: boolean, make: () => string, now: number): Promise<WebhookSecretRecord> {
    return natsCall(WHAT, () => this.#signing(accountId, livemode, make, now));
  }

  async rotateWebhookSecret(
    accountId: string,
    livemode: boolean,
    make: () => string,
    now: number,
    overlapMs: number,
  ): Promise<WebhookSecretRecord> {
    const secret = make();
    const k = pairKey(accountId, livemode);
    return natsCall(WHAT, async () => {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const current = await this.#secrets.get(k);
        const was = storedValue<WebhookSecretRecord>(current);
        // With no secret yet there is nothing to overlap with: it becomes the first, as on first use.
        const next: WebhookSecretRecord = was
          ? { secret, createdAt: now, previousSecret: was.secret, previousExpiresAt: now + overlapMs }
          : { secret, createdAt: now, previousSecret: null, previousExpiresAt: null };
        const write = current
          ? this.#secrets.update(k, JSON.stringify(next), current.revision)
          : this.#secrets.create(k, JSON.stringify(next));
        if (await firstWriter(write)) return signingAt(next, now);
      }
      throw new Error(`the webhook secret of ${accountId} kept changing under ${MAX_ROUNDS} attempts to rotate it`);
    });
  }

  /** The account and environment's secrets as they sign at `now`, the first made on first use. */
  async #signing(accountId: string, livemode: boolean, make: () => string, now: number): Promise<WebhookSecretRecord> {
    const k = pairKey(accountId, livemode);
    const ours = storedValue<WebhookSecretRecord>(await this.#secrets.get(k));
    if (ours) return signingAt(ours, now);
    const first: WebhookSecretRecord = { secret: make(), createdAt: now, previousSecret: null, previousExpiresAt: null };
    if (await firstWriter(this.#secrets.create(k, JSON.stringify(first)))) return signingAt(first, now);
    // Another replica made it first: theirs is the secret.
    const theirs = storedValue<WebhookSecretRecord>(await this.#secrets.get(k));
    if (!theirs) throw new Error(`the webhook secret of ${accountId} was removed while it was being made`);
    return signingAt(theirs, now);
  }

  #records(): ApiKeyRecord[] {
    const out: ApiKeyRecord[] = [];
    for (const { record } of this.#held.values()) if (record) out.push(record);
    return out;
  }

  /** Keeps what a revision says of a key, unless a later one is held. Frozen: every caller gets the same object. */
  #see(k: string, record: ApiKeyRecord | null, revision: number): void {
    const held = this.#held.get(k);
    if (!held || held.revision < revision) this.#held.set(k, { record: record && Object.freeze(record), revision });
  }

  /** Resolves once every key that existed when the watch started is held (at once after that). */
  async #load(): Promise<void> {
    if (!this.#watching) {
      this.#watching = true;
      void this.#follow();
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      const late = new Error(`API keys were not loaded from NATS within ${LOAD_TIMEOUT_MS} ms`);
      timer = setTimeout(() => reject(storeUnavailable(WHAT, late)), LOAD_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.#loaded.promise, timeout]);
      this.#isLoaded = true;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Watches the keys bucket for as long as the store is open. The ordered consumer under the watch
   * recreates itself after a reconnect; should it give up, the watch starts again from the last
   * revision seen. Never rejects: failures go to onWatchError.
   */
  async #follow(): Promise<void> {
    let last = 0;
    while (!this.#closed) {
      try {
        const watch = await this.#keys.watch(last > 0 ? { resumeFromRevision: last + 1 } : {});
        this.#watch = watch;
        if (this.#closed) watch.stop();
        // An empty bucket delivers nothing to say the load is done; writes made since come as updates.
        if ((await this.#keys.status()).values === 0) this.#loaded.resolve();
        for await (const e of watch) {
          this.#see(e.key, storedValue<ApiKeyRecord>(e), e.revision);
          last = e.revision;
          if (e.delta === 0) this.#loaded.resolve();
        }
      } catch (error) {
        if (error instanceof ClosedConnectionError) return;
        this.#onWatchError(error);
      }
      if (!this.#closed) await sleep(REWATCH_MS, undefined, { ref: false });
    }
  }
}
