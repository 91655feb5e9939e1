import type { Branding } from "../domain/branding.ts";
import type { ReviewPolicy } from "../domain/review.ts";
import type { Environment } from "../domain/ids.ts";
import type { Awaitable } from "./awaitable.ts";

export type ApiKeyRecord = {
  id: string;
  accountId: string;
  accountName: string;
  livemode: boolean;
  last4: string;
  createdAt: number;
  revokedAt: number | null;
};

/** An account as stored: API keys, webhook secrets, users and inspections name it by id. */
export type AccountRecord = { id: string; name: string; createdAt: number };

/** An account and environment's webhook signing secrets; times are Unix milliseconds. */
export type WebhookSecretRecord = {
  secret: string;
  createdAt: number;
  /** The secret rotated out, still signing beside `secret` until `previousExpiresAt`; both null once it has stopped. */
  previousSecret: string | null;
  previousExpiresAt: number | null;
};

/**
 * Webhook secrets as stored (a rotated-out one kept past its overlap) as they sign at `now`: the
 * rotated-out one only until its overlap ends.
 */
export function signingAt(stored: WebhookSecretRecord, now: number): WebhookSecretRecord {
  const overlapping = stored.previousSecret !== null && stored.previousExpiresAt !== null && stored.previousExpiresAt > now;
  return {
    secret: stored.secret,
    createdAt: stored.createdAt,
    previousSecret: overlapping ? stored.previousSecret : null,
    previousExpiresAt: overlapping ? stored.previousExpiresAt : null,
  };
}

/** `list()`'s order: oldest first, then by id. */
export const byCreation = (a: ApiKeyRecord, b: ApiKeyRecord) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
/** `listIn()`'s order: newest first, then by id. */
export const newestFirst = (a: ApiKeyRecord, b: ApiKeyRecord) => b.createdAt - a.createdAt || byCreation(a, b);

/** Accounts, their API keys (stored as hashes only) and their webhook signing secrets. */
export interface KeyStore {
  /** Creates the account on first use. Returns the key's record; the caller holds the only plaintext. */
  createKey(accountName: string, env: Environment, keyHash: string, last4: string, keyId: string, now: number): Promise<ApiKeyRecord>;
  /** Every request of the API asks this once: at once from an adapter that holds the key in this process (awaitable.ts). */
  findByHash(keyHash: string): Awaitable<ApiKeyRecord | null>;
  list(): Promise<ApiKeyRecord[]>;
  /** One account and environment's keys, revoked ones too, newest first. */
  listIn(accountId: string, livemode: boolean): Promise<ApiKeyRecord[]>;
  /** False when no such key exists. */
  revoke(keyId: string, now: number): Promise<boolean>;
  /** The account and environment's `whsec_` secret, made on first use. */
  webhookSecret(accountName: string, env: Environment, make: () => string, now: number): Promise<string>;
  /**
   * The same, by account id, with the secret rotated out while it still signs at `now`; made on
   * first use too, so every delivery can be signed.
   */
  webhookSecretFor(accountId: string, livemode: boolean, make: () => string, now: number): Promise<WebhookSecretRecord>;
  /**
   * Makes `make()` the current secret; the one it replaces keeps signing until `now + overlapMs`
   * (0: stops at once), taking the place of any earlier one still in its overlap.
   */
  rotateWebhookSecret(
    accountId: string,
    livemode: boolean,
    make: () => string,
    now: number,
    overlapMs: number,
  ): Promise<WebhookSecretRecord>;
  /** The account and environment's review policy (core/domain/review.ts): `when_unsure` until set. */
  reviewPolicy(accountId: string, livemode: boolean): Promise<ReviewPolicy>;
  /** Sets it; inspections completed from then on follow it, unless created with a policy of their own. */
  setReviewPolicy(accountId: string, livemode: boolean, policy: ReviewPolicy): Promise<void>;
  /** The account's branding (core/domain/branding.ts), for its test and live capture pages alike: NO_BRANDING until set. */
  branding(accountId: string): Promise<Branding>;
  /** Replaces it whole; capture sessions loaded from then on show it. */
  setBranding(accountId: string, branding: Branding): Promise<void>;
  /** The account's id, the account made on first use (as createKey and webhookSecret do). */
  accountId(accountName: string, now: number): Promise<string>;

  // Migration (bin/commands/migrate.ts): what another store holds, copied with its ids and hashes.
  /** Every account, oldest first, then by id. */
  accounts(): Promise<AccountRecord[]>;
  /**
   * Makes the account under the id another store gave it, where its name has none yet. The id the
   * name has after the call: another id means the name was taken there, and nothing was written.
   */
  adoptAccount(account: AccountRecord): Promise<string>;
  /** The stored hash of every key, revoked ones too, by key id (the keys themselves are never stored). */
  keyHashes(): Promise<Map<string, string>>;
}

/** `accounts()`'s order. */
export const accountsByCreation = (a: AccountRecord, b: AccountRecord) =>
  a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
