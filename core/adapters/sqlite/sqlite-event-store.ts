import type { EventStore } from "../../ports/event-store.ts";
import type { DeliveryAttemptRecord, EventRecord, InspectionRecord, Scope } from "../../ports/records.ts";
import { sql, transaction, type Database } from "./database.ts";

type Row = Record<string, string | number | null>;

function toEvent(r: Row): EventRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    livemode: r.livemode === 1,
    inspectionId: r.inspection_id as string,
    type: r.type as string,
    createdAt: r.created_at as number,
    data: r.data as string,
    notifyUrl: r.notify_url as string | null,
    deliveryStatus: r.delivery_status as EventRecord["deliveryStatus"],
    nextAttemptAt: r.next_attempt_at as number | null,
    attemptCount: r.attempt_count as number,
    scheduleFrom: r.schedule_from as number,
  };
}

/** Appends an event to the outbox; called inside the transaction that made the change it reports. */
export function insertEvent(db: Database, inspection: InspectionRecord, at: number, e: { id: string; type: string; data: string }): void {
  const deliver = inspection.notifyUrl !== null;
  sql(
    db,
    `INSERT INTO events (id, account_id, livemode, inspection_id, type, created_at, data, notify_url, delivery_status, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    e.id,
    inspection.accountId,
    inspection.livemode ? 1 : 0,
    inspection.id,
    e.type,
    at,
    e.data,
    inspection.notifyUrl,
    deliver ? "pending" : "none",
    deliver ? at : null,
  );
}

export class SqliteEventStore implements EventStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async list(scope: Scope, limit: number, afterId?: string): Promise<EventRecord[] | null> {
    const live = scope.livemode ? 1 : 0;
    let after = Number.MAX_SAFE_INTEGER;
    if (afterId !== undefined) {
      const cursor = sql(this.#db, "SELECT seq FROM events WHERE id = ? AND account_id = ? AND livemode = ?").get(
        afterId,
        scope.accountId,
        live,
      ) as Row | undefined;
      if (!cursor) return null;
      after = cursor.seq as number;
    }
    const rows = sql(this.#db, "SELECT * FROM events WHERE account_id = ? AND livemode = ? AND seq < ? ORDER BY seq DESC LIMIT ?").all(
      scope.accountId,
      live,
      after,
      limit,
    );
    return rows.map((r) => toEvent(r as Row));
  }

  async get(scope: Scope, id: string): Promise<EventRecord | null> {
    const row = sql(this.#db, "SELECT * FROM events WHERE id = ? AND account_id = ? AND livemode = ?").get(
      id,
      scope.accountId,
      scope.livemode ? 1 : 0,
    );
    return row ? toEvent(row as Row) : null;
  }

  async forInspection(scope: Scope, inspectionId: string): Promise<EventRecord[]> {
    const rows = sql(this.#db, "SELECT * FROM events WHERE inspection_id = ? AND account_id = ? AND livemode = ? ORDER BY seq").all(
      inspectionId,
      scope.accountId,
      scope.livemode ? 1 : 0,
    );
    return rows.map((r) => toEvent(r as Row));
  }

  async attempts(eventIds: readonly string[]): Promise<Map<string, DeliveryAttemptRecord[]>> {
    const out = new Map<string, DeliveryAttemptRecord[]>(eventIds.map((id) => [id, []]));
    if (eventIds.length === 0) return out;
    const rows = sql(this.#db, `SELECT * FROM delivery_attempts WHERE event_id IN (${eventIds.map(() => "?").join(",")}) ORDER BY n`).all(
      ...eventIds,
    ) as Row[];
    for (const r of rows) {
      out.get(r.event_id as string)!.push({
        eventId: r.event_id as string,
        n: r.n as number,
        attemptedAt: r.attempted_at as number,
        statusCode: r.status_code as number | null,
        latencyMs: r.latency_ms as number,
        error: r.error as string | null,
      });
    }
    return out;
  }

  async due(now: number, limit: number): Promise<EventRecord[]> {
    const rows = sql(
      this.#db,
      "SELECT * FROM events WHERE delivery_status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
    ).all(now, limit);
    return rows.map((r) => toEvent(r as Row));
  }

  async recordAttempt(a: DeliveryAttemptRecord, next: { nextAttemptAt: number } | { status: "succeeded" | "failed" }): Promise<void> {
    transaction(this.#db, () => {
      sql(
        this.#db,
        "INSERT INTO delivery_attempts (event_id, n, attempted_at, status_code, latency_ms, error) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(a.eventId, a.n, a.attemptedAt, a.statusCode, a.latencyMs, a.error);
      if ("status" in next) {
        sql(this.#db, "UPDATE events SET attempt_count = ?, delivery_status = ?, next_attempt_at = NULL WHERE id = ?").run(
          a.n,
          next.status,
          a.eventId,
        );
      } else {
        sql(this.#db, "UPDATE events SET attempt_count = ?, next_attempt_at = ? WHERE id = ?").run(a.n, next.nextAttemptAt, a.eventId);
      }
    });
  }

  async resend(scope: Scope, id: string, now: number): Promise<EventRecord | null> {
    const row = sql(
      this.#db,
      `UPDATE events SET delivery_status = 'pending', next_attempt_at = ?, schedule_from = attempt_count, published = 0
       WHERE id = ? AND account_id = ? AND livemode = ? AND delivery_status <> 'none' RETURNING *`,
    ).get(now, id, scope.accountId, scope.livemode ? 1 : 0);
    return row ? toEvent(row as Row) : null;
  }

  async unpublished(limit: number): Promise<EventRecord[]> {
    const rows = sql(this.#db, "SELECT * FROM events WHERE delivery_status = 'pending' AND published = 0 ORDER BY seq LIMIT ?").all(limit);
    return rows.map((r) => toEvent(r as Row));
  }

  async stalled(dueBefore: number, limit: number): Promise<EventRecord[]> {
    // The events_due index: pending events by next_attempt_at.
    const rows = sql(
      this.#db,
      "SELECT * FROM events WHERE delivery_status = 'pending' AND next_attempt_at < ? AND published = 1 ORDER BY next_attempt_at LIMIT ?",
    ).all(dueBefore, limit);
    return rows.map((r) => toEvent(r as Row));
  }

  async markPublished(id: string, scheduleFrom: number): Promise<void> {
    sql(this.#db, "UPDATE events SET published = 1 WHERE id = ? AND schedule_from = ?").run(id, scheduleFrom);
  }
}
