import type { InviteRecord, UserRecord, UserStore } from "../../ports/user-store.ts";
import { newId } from "../../domain/ids.ts";
import { sql, transaction, type Database } from "./database.ts";

type Row = Record<string, string | number | null>;

const toUser = (r: Row): UserRecord => ({
  id: r.id as string,
  accountId: r.account_id as string,
  accountName: r.name as string,
  email: r.email as string,
  passwordHash: r.password_hash as string,
  createdAt: r.created_at as number,
});

const toInvite = (r: Row): InviteRecord => ({
  accountId: r.account_id as string,
  email: r.email as string,
  invitedBy: r.invited_by as string,
  createdAt: r.created_at as number,
  expiresAt: r.expires_at as number,
  acceptedAt: r.accepted_at as number | null,
});

const USER_COLUMNS = "u.id, u.account_id, u.email, u.password_hash, u.created_at, a.name";

export class SqliteUserStore implements UserStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async createUser(
    accountName: string,
    user: { id: string; email: string; passwordHash: string },
    now: number,
  ): Promise<UserRecord | null> {
    return transaction(this.#db, () => {
      const found = sql(this.#db, "SELECT id FROM accounts WHERE name = ?").get(accountName) as Row | undefined;
      const accountId = (found?.id as string | undefined) ?? newId("acct");
      if (!found) sql(this.#db, "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)").run(accountId, accountName, now);
      return this.#insertUser(accountId, user, now);
    });
  }

  #insertUser(accountId: string, user: { id: string; email: string; passwordHash: string }, now: number): UserRecord | null {
    const inserted = sql(
      this.#db,
      "INSERT INTO users (id, account_id, email, password_hash, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING",
    ).run(user.id, accountId, user.email, user.passwordHash, now);
    if (inserted.changes !== 1) return null;
    return this.#findByEmail(user.email);
  }

  async findByEmail(email: string): Promise<UserRecord | null> {
    return this.#findByEmail(email);
  }

  #findByEmail(email: string): UserRecord | null {
    const row = sql(this.#db, `SELECT ${USER_COLUMNS} FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.email = ?`).get(email);
    return row ? toUser(row as Row) : null;
  }

  async listUsers(accountId: string): Promise<UserRecord[]> {
    return sql(
      this.#db,
      `SELECT ${USER_COLUMNS} FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.account_id = ? ORDER BY u.created_at`,
    )
      .all(accountId)
      .map((r) => toUser(r as Row));
  }

  async createSession(idHash: string, userId: string, now: number, expiresAt: number): Promise<void> {
    // Expired sessions of anyone go as new ones come: the table holds live sessions only.
    sql(this.#db, "DELETE FROM user_sessions WHERE expires_at <= ?").run(now);
    sql(this.#db, "INSERT INTO user_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)").run(
      idHash,
      userId,
      now,
      expiresAt,
    );
  }

  async sessionUser(idHash: string, now: number): Promise<UserRecord | null> {
    const row = sql(
      this.#db,
      `SELECT ${USER_COLUMNS} FROM user_sessions s JOIN users u ON u.id = s.user_id JOIN accounts a ON a.id = u.account_id
       WHERE s.id_hash = ? AND s.expires_at > ?`,
    ).get(idHash, now);
    return row ? toUser(row as Row) : null;
  }

  async deleteSession(idHash: string): Promise<void> {
    sql(this.#db, "DELETE FROM user_sessions WHERE id_hash = ?").run(idHash);
  }

  async createInvite(tokenHash: string, invite: Omit<InviteRecord, "acceptedAt">): Promise<void> {
    sql(this.#db, "INSERT INTO invites (token_hash, account_id, email, invited_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)").run(
      tokenHash,
      invite.accountId,
      invite.email,
      invite.invitedBy,
      invite.createdAt,
      invite.expiresAt,
    );
  }

  async openInvite(tokenHash: string, now: number): Promise<InviteRecord | null> {
    return this.#openInvite(tokenHash, now);
  }

  #openInvite(tokenHash: string, now: number): InviteRecord | null {
    const row = sql(this.#db, "SELECT * FROM invites WHERE token_hash = ? AND accepted_at IS NULL AND expires_at > ?").get(tokenHash, now);
    return row ? toInvite(row as Row) : null;
  }

  async acceptInvite(tokenHash: string, user: { id: string; passwordHash: string }, now: number): Promise<UserRecord | null> {
    return transaction(this.#db, () => {
      const invite = this.#openInvite(tokenHash, now);
      if (!invite) return null;
      const made = this.#insertUser(invite.accountId, { ...user, email: invite.email }, now);
      if (!made) return null;
      sql(this.#db, "UPDATE invites SET accepted_at = ? WHERE token_hash = ?").run(now, tokenHash);
      return made;
    });
  }

  async touchKey(keyId: string, at: number): Promise<void> {
    sql(this.#db, "INSERT OR REPLACE INTO api_key_usage (key_id, last_used_at) VALUES (?, ?)").run(keyId, at);
  }

  async keysLastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    const used = new Map<string, number>();
    if (keyIds.length === 0) return used;
    const rows = sql(this.#db, `SELECT key_id, last_used_at FROM api_key_usage WHERE key_id IN (${keyIds.map(() => "?").join(",")})`).all(
      ...keyIds,
    );
    for (const r of rows as Row[]) used.set(r.key_id as string, r.last_used_at as number);
    return used;
  }
}
