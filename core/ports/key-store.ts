import type { Environment } from "../ids.ts";

export type ApiKeyRecord = {
  id: string;
  accountId: string;
  accountName: string;
  livemode: boolean;
  last4: string;
  createdAt: number;
  revokedAt: number | null;
};

/** Accounts, their API keys (stored as hashes only) and their webhook signing secrets. */
export interface KeyStore {
  /** Creates the account on first use. Returns the key's record; the caller holds the only plaintext. */
  createKey(accountName: string, env: Environment, keyHash: string, last4: string, keyId: string, now: number): ApiKeyRecord;
  findByHash(keyHash: string): ApiKeyRecord | null;
  list(): ApiKeyRecord[];
  /** False when no such key exists. */
  revoke(keyId: string, now: number): boolean;
  /** The account and environment's `whsec_` secret, made on first use. */
  webhookSecret(accountName: string, env: Environment, make: () => string, now: number): string;
  /** The same, by account id; made on first use too, so every delivery can be signed. */
  webhookSecretFor(accountId: string, livemode: boolean, make: () => string, now: number): string;
}
