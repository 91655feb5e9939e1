import { type Branding, NO_BRANDING, type StoredLogo } from "../../domain/branding.ts";
import { DEFAULT_REVIEW_POLICY, type ReviewPolicy } from "../../domain/review.ts";
import type { Environment } from "../../domain/ids.ts";
import { newId } from "../../domain/ids.ts";
import { type AccountRecord, type ApiKeyRecord, type KeyStore, signingAt, type WebhookSecretRecord } from "../../ports/key-store.ts";
import { sql, transaction, type Database } from "./database.ts";
import { ReadCache } from "./read-cache.ts";

type Row = Record<string, string | number | null>;

const toKey = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  accountId: r.account_id as string,
  accountName: r.name as string,
  livemode: r.livemode === 1,
  last4: r.last4 as string,
  createdAt: r.created_at as number,
  revokedAt: r.revoked_at as number | null,
});

const toSecrets = (r: Row, now: number): WebhookSecretRecord =>
  signingAt(
    {
      secret: r.secret as string,
      createdAt: r.created_at as number,
      previousSecret: r.previous_secret as string | null,
      previousExpiresAt: r.previous_expires_at as number | null,
    },
    now,
  );

export class SqliteKeyStore implements KeyStore {
  readonly #db: Database;
  /** Every /v1 request looks its key up. */
  readonly #byHash: ReadCache<ApiKeyRecord>;

  constructor(db: Database) {
    this.#db = db;
    this.#byHash = new ReadCache(db, ["api_keys", "accounts"], 1_000);
  }

  #account(name: string, now: number): string {
    const row = sql(this.#db, "SELECT id FROM accounts WHERE name = ?").get(name) as Row | undefined;
    if (row) return row.id as string;
    const id = newId("acct");
    sql(this.#db, "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)").run(id, name, now);
    return id;
  }

  async createKey(
    accountName: string,
    env: Environment,
    keyHash: string,
    last4: string,
    keyId: string,
    now: number,
  ): Promise<ApiKeyRecord> {
    return transaction(this.#db, () => {
      const accountId = this.#account(accountName, now);
      sql(this.#db, "INSERT INTO api_keys (id, account_id, livemode, hash, last4, created_at) VALUES (?, ?, ?, ?, ?, ?)").run(
        keyId,
        accountId,
        env === "live" ? 1 : 0,
        keyHash,
        last4,
        now,
      );
      return { id: keyId, accountId, accountName, livemode: env === "live", last4, createdAt: now, revokedAt: null };
    });
  }

  findByHash(keyHash: string): ApiKeyRecord | null {
    return this.#byHash.get(keyHash, () => {
      const row = sql(this.#db, "SELECT k.*, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?").get(keyHash);
      return row ? toKey(row as Row) : null;
    });
  }

  async list(): Promise<ApiKeyRecord[]> {
    return sql(this.#db, "SELECT k.*, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id ORDER BY k.created_at, k.id")
      .all()
      .map((r) => toKey(r as Row));
  }

  async listIn(accountId: string, livemode: boolean): Promise<ApiKeyRecord[]> {
    return sql(
      this.#db,
      "SELECT k.*, a.name FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.account_id = ? AND k.livemode = ? ORDER BY k.created_at DESC, k.id",
    )
      .all(accountId, livemode ? 1 : 0)
      .map((r) => toKey(r as Row));
  }

  async revoke(keyId: string, now: number): Promise<boolean> {
    return sql(this.#db, "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(now, keyId).changes === 1;
  }

  async accountId(accountName: string, now: number): Promise<string> {
    return transaction(this.#db, () => this.#account(accountName, now));
  }

  async accounts(): Promise<AccountRecord[]> {
    return sql(this.#db, "SELECT id, name, created_at FROM accounts ORDER BY created_at, id")
      .all()
      .map((r) => ({ id: (r as Row).id as string, name: (r as Row).name as string, createdAt: (r as Row).created_at as number }));
  }

  async adoptAccount(a: AccountRecord): Promise<string> {
    return transaction(this.#db, () => {
      sql(this.#db, "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING").run(a.id, a.name, a.createdAt);
      const row = sql(this.#db, "SELECT id FROM accounts WHERE name = ?").get(a.name) as Row | undefined;
      if (!row) throw new Error("constraint failed: accounts.id");
      return row.id as string;
    });
  }

  async keyHashes(): Promise<Map<string, string>> {
    const rows = sql(this.#db, "SELECT id, hash FROM api_keys").all() as Row[];
    return new Map(rows.map((r) => [r.id as string, r.hash as string]));
  }

  async webhookSecret(accountName: string, env: Environment, make: () => string, now: number): Promise<string> {
    return transaction(this.#db, () => this.#secrets(this.#account(accountName, now), env === "live", make, now).secret);
  }

  async reviewPolicy(accountId: string, livemode: boolean): Promise<ReviewPolicy> {
    const row = sql(this.#db, "SELECT review_policy FROM account_settings WHERE account_id = ? AND livemode = ?").get(
      accountId,
      livemode ? 1 : 0,
    ) as { review_policy: ReviewPolicy } | undefined;
    return row?.review_policy ?? DEFAULT_REVIEW_POLICY;
  }

  async setReviewPolicy(accountId: string, livemode: boolean, policy: ReviewPolicy): Promise<void> {
    sql(
      this.#db,
      `INSERT INTO account_settings (account_id, livemode, review_policy) VALUES (?, ?, ?)
       ON CONFLICT (account_id, livemode) DO UPDATE SET review_policy = excluded.review_policy`,
    ).run(accountId, livemode ? 1 : 0, policy);
  }

  async branding(accountId: string): Promise<Branding> {
    const row = sql(this.#db, "SELECT * FROM account_branding WHERE account_id = ?").get(accountId) as Row | undefined;
    if (!row) return NO_BRANDING;
    return {
      displayName: row.display_name as string | null,
      accentColor: row.accent_color as string | null,
      logo: row.logo === null ? null : (JSON.parse(row.logo as string) as StoredLogo),
      updatedAt: row.updated_at as number,
    };
  }

  async setBranding(accountId: string, b: Branding): Promise<void> {
    sql(
      this.#db,
      `INSERT INTO account_branding (account_id, display_name, accent_color, logo, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (account_id) DO UPDATE SET display_name = excluded.display_name, accent_color = excluded.accent_color,
         logo = excluded.logo, updated_at = excluded.updated_at`,
    ).run(accountId, b.displayName, b.accentColor, b.logo && JSON.stringify(b.logo), b.updatedAt);
  }

  async webhookSecretFor(accountId: string, livemode: boolean, make: () => string, now: number): Promise<WebhookSecretRecord> {
    return transaction(this.#db, () => this.#secrets(accountId, livemode, make, now));
  }

  async rotateWebhookSecret(
    accountId: string,
    livemode: boolean,
    make: () => string,
    now: number,
    overlapMs: number,
  ): Promise<WebhookSecretRecord> {
    return transaction(this.#db, () => {
      const secret = make();
      // The right-hand sides read the row as it was, so the current secret becomes the previous one.
      const row = sql(
        this.#db,
        `UPDATE webhook_secrets SET previous_secret = secret, previous_expires_at = ?, secret = ?, created_at = ?
         WHERE account_id = ? AND livemode = ? RETURNING *`,
      ).get(now + overlapMs, secret, now, accountId, livemode ? 1 : 0) as Row | undefined;
      // With no secret yet there is nothing to overlap with: it becomes the first, as on first use.
      return row ? toSecrets(row, now) : this.#secrets(accountId, livemode, () => secret, now);
    });
  }

  #secrets(accountId: string, livemode: boolean, make: () => string, now: number): WebhookSecretRecord {
    const live = livemode ? 1 : 0;
    const row = sql(this.#db, "SELECT * FROM webhook_secrets WHERE account_id = ? AND livemode = ?").get(accountId, live) as
      | Row
      | undefined;
    if (row) return toSecrets(row, now);
    const secret = make();
    sql(this.#db, "INSERT INTO webhook_secrets (account_id, livemode, secret, created_at) VALUES (?, ?, ?, ?)").run(
      accountId,
      live,
      secret,
      now,
    );
    return { secret, createdAt: now, previousSecret: null, previousExpiresAt: null };
  }
}
