import { STALE_IN_FLIGHT_MS, type BeginResult, type IdempotencyStore, type StoredResponse } from "../../ports/idempotency-store.ts";
import type { Scope } from "../../ports/records.ts";
import { sql, transaction, type Database } from "./database.ts";

type Row = Record<string, string | number | null>;

export class SqliteIdempotencyStore implements IdempotencyStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async begin(scope: Scope, key: string, fingerprint: string, now: number, retentionMs: number): Promise<BeginResult> {
    const live = scope.livemode ? 1 : 0;
    return transaction(this.#db, () => {
      // A key past retention is gone even before the sweep removes it; an in-flight mark older than any
      // request can run belongs to a process that died mid-request, so the key is free again.
      sql(
        this.#db,
        "DELETE FROM idempotency_keys WHERE account_id = ? AND livemode = ? AND key = ? AND (created_at <= ? OR (state = 'in_flight' AND created_at <= ?))",
      ).run(scope.accountId, live, key, now - retentionMs, now - STALE_IN_FLIGHT_MS);
      const inserted = sql(
        this.#db,
        "INSERT INTO idempotency_keys (account_id, livemode, key, fingerprint, state, created_at) VALUES (?, ?, ?, ?, 'in_flight', ?) ON CONFLICT DO NOTHING",
      ).run(scope.accountId, live, key, fingerprint, now);
      if (inserted.changes === 1) return { kind: "started" };
      const row = sql(this.#db, "SELECT * FROM idempotency_keys WHERE account_id = ? AND livemode = ? AND key = ?").get(
        scope.accountId,
        live,
        key,
      ) as Row;
      if (row.fingerprint !== fingerprint) return { kind: "mismatch" };
      if (row.state === "in_flight") return { kind: "in_flight" };
      return {
        kind: "replay",
        response: { statusCode: row.status_code as number, body: row.body as string, headers: JSON.parse(row.headers as string) },
      };
    });
  }

  async complete(scope: Scope, key: string, r: StoredResponse): Promise<void> {
    sql(
      this.#db,
      "UPDATE idempotency_keys SET state = 'done', status_code = ?, body = ?, headers = ? WHERE account_id = ? AND livemode = ? AND key = ?",
    ).run(r.statusCode, r.body, JSON.stringify(r.headers), scope.accountId, scope.livemode ? 1 : 0, key);
  }

  async abandon(scope: Scope, key: string): Promise<void> {
    sql(this.#db, "DELETE FROM idempotency_keys WHERE account_id = ? AND livemode = ? AND key = ? AND state = 'in_flight'").run(
      scope.accountId,
      scope.livemode ? 1 : 0,
      key,
    );
  }

  async purge(olderThan: number): Promise<number> {
    return Number(sql(this.#db, "DELETE FROM idempotency_keys WHERE created_at <= ?").run(olderThan).changes);
  }
}
