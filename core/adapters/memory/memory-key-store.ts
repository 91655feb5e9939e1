import { type Branding, NO_BRANDING } from "../../domain/branding.ts";
import { DEFAULT_REVIEW_POLICY, type ReviewPolicy } from "../../domain/review.ts";
import type { Environment } from "../../domain/ids.ts";
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
import { constraint, pairKey, snapshot, type MemoryState } from "./memory-state.ts";

/** Accounts, API key hashes and webhook secrets in memory. */
export class MemoryKeyStore implements KeyStore {
  readonly #state: MemoryState;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  async createKey(
    accountName: string,
    env: Environment,
    keyHash: string,
    last4: string,
    keyId: string,
    now: number,
  ): Promise<ApiKeyRecord> {
    constraint(!this.#state.apiKeys.has(keyId), "api_keys.id");
    constraint(!this.#state.keyHashes.has(keyHash), "api_keys.hash");
    const accountId = this.#state.account(accountName, now);
    const key = snapshot({ id: keyId, accountId, accountName, livemode: env === "live", last4, createdAt: now, revokedAt: null });
    this.#state.apiKeys.set(keyId, key);
    this.#state.keyHashes.set(keyHash, keyId);
    return key;
  }

  findByHash(keyHash: string): ApiKeyRecord | null {
    const id = this.#state.keyHashes.get(keyHash);
    return id === undefined ? null : this.#state.apiKeys.get(id)!;
  }

  async list(): Promise<ApiKeyRecord[]> {
    return [...this.#state.apiKeys.values()].sort(byCreation);
  }

  async listIn(accountId: string, livemode: boolean): Promise<ApiKeyRecord[]> {
    return [...this.#state.apiKeys.values()].filter((k) => k.accountId === accountId && k.livemode === livemode).sort(newestFirst);
  }

  async revoke(keyId: string, now: number): Promise<boolean> {
    const key = this.#state.apiKeys.get(keyId);
    if (!key) return false;
    if (key.revokedAt === null) this.#state.apiKeys.set(keyId, snapshot({ ...key, revokedAt: now }));
    return true;
  }

  async accounts(): Promise<AccountRecord[]> {
    return [...this.#state.accounts].map(([name, a]) => ({ id: a.id, name, createdAt: a.createdAt })).sort(accountsByCreation);
  }

  async adoptAccount(a: AccountRecord): Promise<string> {
    const held = this.#state.accounts.get(a.name);
    if (held) return held.id;
    constraint(!this.#state.accountNames.has(a.id), "accounts.id");
    this.#state.accounts.set(a.name, { id: a.id, createdAt: a.createdAt });
    this.#state.accountNames.set(a.id, a.name);
    return a.id;
  }

  async keyHashes(): Promise<Map<string, string>> {
    return new Map([...this.#state.keyHashes].map(([hash, id]) => [id, hash]));
  }

  async reviewPolicy(accountId: string, livemode: boolean): Promise<ReviewPolicy> {
    return this.#state.reviewPolicies.get(pairKey(accountId, livemode)) ?? DEFAULT_REVIEW_POLICY;
  }

  async setReviewPolicy(accountId: string, livemode: boolean, policy: ReviewPolicy): Promise<void> {
    this.#state.reviewPolicies.set(pairKey(accountId, livemode), policy);
  }

  async branding(accountId: string): Promise<Branding> {
    return this.#state.brandings.get(accountId) ?? NO_BRANDING;
  }

  async setBranding(accountId: string, branding: Branding): Promise<void> {
    this.#state.brandings.set(accountId, snapshot(branding));
  }

  async accountId(accountName: string, now: number): Promise<string> {
    return this.#state.account(accountName, now);
  }

  async webhookSecret(accountName: string, env: Environment, make: () => string, now: number): Promise<string> {
    return this.#secrets(this.#state.account(accountName, now), env === "live", make, now).secret;
  }

  async webhookSecretFor(accountId: string, livemode: boolean, make: () => string, now: number): Promise<WebhookSecretRecord> {
    return this.#secrets(accountId, livemode, make, now);
  }

  async rotateWebhookSecret(
    accountId: string,
    livemode: boolean,
    make: () => string,
    now: number,
    overlapMs: number,
  ): Promise<WebhookSecretRecord> {
    const secret = make();
    const held = this.#state.webhookSecrets.get(pairKey(accountId, livemode));
    // With no secret yet there is nothing to overlap with: it becomes the first, as on first use.
    if (!held) return this.#secrets(accountId, livemode, () => secret, now);
    const rotated = { secret, createdAt: now, previousSecret: held.secret, previousExpiresAt: now + overlapMs };
    this.#state.webhookSecrets.set(pairKey(accountId, livemode), snapshot(rotated));
    return signingAt(rotated, now);
  }

  #secrets(accountId: string, livemode: boolean, make: () => string, now: number): WebhookSecretRecord {
    const held = this.#state.webhookSecrets.get(pairKey(accountId, livemode));
    if (held) return signingAt(held, now);
    constraint(this.#state.accountNames.has(accountId), "webhook_secrets.account_id references accounts");
    const made = { secret: make(), createdAt: now, previousSecret: null, previousExpiresAt: null };
    this.#state.webhookSecrets.set(pairKey(accountId, livemode), snapshot(made));
    return made;
  }
}
