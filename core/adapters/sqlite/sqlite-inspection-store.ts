import type { StatementSync } from "node:sqlite";
import { LRUCache } from "lru-cache";
import { isCaptureOpen, REVIEWED, STATUSES, type Status } from "../../domain/state-machine.ts";
import {
  type EventFactory,
  type EventsFactory,
  eventsMade,
  type InspectionStore,
  sameMedia,
  type ListFilter,
  type PutPhotoResult,
  type TooManyReviews,
  tooManyReviews,
  type TransitionPatch,
} from "../../ports/inspection-store.ts";
import { MAX_REVIEWS, type ReviewPolicy, type ReviewRecord } from "../../domain/review.ts";
import { type CapturePlan, DEFAULT_CAPTURE_PLAN } from "../../domain/capture-plan.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord, Scope } from "../../ports/records.ts";
import { groupCommit, sql, transaction, type Database } from "./database.ts";
import { insertEvent } from "./sqlite-event-store.ts";
import { ReadCache } from "./read-cache.ts";
import { Listeners } from "../../runtime/listeners.ts";

type Row = Record<string, string | number | null>;

/** The statuses in which the capture link works, taken from the state machine. */
const CAPTURE_OPEN = STATUSES.filter(isCaptureOpen);

/**
 * The columns an inspection record is made of, in the order toRecord reads them. Rows come back as
 * arrays (setReturnArrays): rows as objects, 36 named properties each, were more than half of what
 * reading a list page cost (figures in the commit that made this).
 */
const COLUMNS = `id, account_id, livemode, status, reference, vin, make, model, year, notify_url, expires_at, created_at,
  updated_at, submitted_at, completed_at, canceled_at, summary_findings, summary_grade, summary_needs_review,
  summary_new_findings, failure_code, failure_message, capture, review_policy, baseline_inspection, review, opened_at,
  submit_requested_at, cancel_requested_at, vin_observed, processing_attempts, processing_due_at, needs_reconcile`;
const SELECT = `SELECT ${COLUMNS} FROM inspections`;

/** A stored capture plan as JSON, parsed once for every row that holds the same text (most hold the same few). */
const plans = new LRUCache<string, CapturePlan>({ max: 1_000 });
function storedPlan(text: string | null): CapturePlan {
  if (text === null) return DEFAULT_CAPTURE_PLAN;
  let plan = plans.get(text);
  if (plan === undefined) {
    plan = Object.freeze(JSON.parse(text) as CapturePlan);
    plans.set(text, plan);
  }
  return plan;
}

type Value = string | number | null;
function toRecord(row: unknown): InspectionRecord {
  const [
    id,
    accountId,
    livemode,
    status,
    reference,
    vin,
    make,
    model,
    year,
    notifyUrl,
    expiresAt,
    createdAt,
    updatedAt,
    submittedAt,
    completedAt,
    canceledAt,
    summaryFindings,
    summaryGrade,
    summaryNeedsReview,
    summaryNewFindings,
    failureCode,
    failureMessage,
    capture,
    reviewPolicy,
    baselineInspection,
    review,
    openedAt,
    submitRequestedAt,
    cancelRequestedAt,
    vinObserved,
    processingAttempts,
    processingDueAt,
    needsReconcile,
  ] = row as Value[];
  return {
    id: id as string,
    accountId: accountId as string,
    livemode: livemode === 1,
    status: status as Status,
    reference: reference as string | null,
    vin: vin as string,
    make: make as string | null,
    model: model as string | null,
    year: year as number | null,
    notifyUrl: notifyUrl as string | null,
    expiresAt: expiresAt as number,
    createdAt: createdAt as number,
    updatedAt: updatedAt as number,
    submittedAt: submittedAt as number | null,
    completedAt: completedAt as number | null,
    canceledAt: canceledAt as number | null,
    summary:
      summaryGrade === null
        ? null
        : {
            findings: summaryFindings as number,
            grade: summaryGrade as never,
            needs_review: summaryNeedsReview === 1,
            new_findings: (summaryNewFindings as number | null) ?? null,
          },
    failure: failureCode === null ? null : { code: failureCode as never, message: failureMessage as string },
    capture: storedPlan(capture as string | null),
    reviewPolicy: (reviewPolicy as ReviewPolicy | null) ?? null,
    baselineInspectionId: (baselineInspection as string | null) ?? null,
    review: review === null || review === undefined ? null : (JSON.parse(review as string) as ReviewRecord),
    openedAt: openedAt as number | null,
    submitRequestedAt: submitRequestedAt as number | null,
    cancelRequestedAt: cancelRequestedAt as number | null,
    vinObserved: vinObserved as string | null,
    processingAttempts: processingAttempts as number,
    processingDueAt: processingDueAt as number | null,
    reconcileGeneration: needsReconcile as number,
  };
}

function toMedia(r: Row): MediaRecord {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    livemode: r.livemode === 1,
    inspectionId: r.inspection_id as string,
    kind: r.kind as MediaRecord["kind"],
    blobKey: r.blob_key as string,
    bytes: r.bytes as number,
    etag: r.etag as string,
    width: r.width as number,
    height: r.height as number,
    createdAt: r.created_at as number,
  };
}

/**
 * The index a list page walks, named rather than left to the planner: without table statistics it
 * prefers the unfiltered index, whose order needs no sort, and would scan an account's every
 * inspection for a rare filter. A filter's own index needs the ties within a second sorted (see the
 * migration); of several filters, the likeliest to be rare wins.
 */
function pageIndex(f: ListFilter): string {
  if (f.vin) return "inspections_by_vin";
  if (f.reference) return "inspections_by_reference";
  if (f.status) return "inspections_by_status";
  return "inspections_page";
}

export class SqliteInspectionStore implements InspectionStore {
  readonly #db: Database;
  /** Retrievals by id, the API's most repeated read; by id alone, the scope is checked on the record. */
  readonly #byId: ReadCache<InspectionRecord>;
  /** InspectionStore.watch: this object's own creates and intents (another connection's are not seen). */
  readonly #writes = new Listeners<string>();
  readonly watchReach = "process";

  constructor(db: Database) {
    this.#db = db;
    this.#byId = new ReadCache(db, ["inspections"], 10_000);
  }

  #sql(text: string): StatementSync {
    return sql(this.#db, text);
  }

  /** A statement whose rows are inspection records' arrays (SELECT); toRecord reads them. */
  #records(text: string): StatementSync {
    return sql(this.#db, text, { arrays: true });
  }

  async create(r: InspectionRecord, captureTokenHash: string, event: EventFactory): Promise<void> {
    await groupCommit(this.#db, () => {
      this.#sql(
        `INSERT INTO inspections (id, account_id, livemode, status, reference, vin, make, model, year, notify_url,
           capture_token_hash, expires_at, created_at, updated_at, review_policy, baseline_inspection, capture)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        r.id,
        r.accountId,
        r.livemode ? 1 : 0,
        r.status,
        r.reference,
        r.vin,
        r.make,
        r.model,
        r.year,
        r.notifyUrl,
        captureTokenHash,
        r.expiresAt,
        r.createdAt,
        r.updatedAt,
        r.reviewPolicy,
        r.baselineInspectionId,
        JSON.stringify(r.capture),
      );
      insertEvent(this.#db, r, r.createdAt, event(r));
    });
    this.#writes.emit(r.id);
  }

  get(scope: Scope, id: string): InspectionRecord | null {
    const found = this.#read(id);
    return found && found.accountId === scope.accountId && found.livemode === scope.livemode ? found : null;
  }

  async getById(id: string): Promise<InspectionRecord | null> {
    return this.#read(id);
  }

  /** The synchronous read: `get` answers with it, and the writes use it inside their transactions. */
  #read(id: string): InspectionRecord | null {
    return this.#byId.get(id, () => {
      const row = this.#records(`${SELECT} WHERE id = ?`).get(id);
      return row ? toRecord(row) : null;
    });
  }

  async getByCaptureTokenHash(hash: string): Promise<InspectionRecord | null> {
    const row = this.#records(`${SELECT} WHERE capture_token_hash = ?`).get(hash);
    return row ? toRecord(row) : null;
  }

  async list(scope: Scope, f: ListFilter): Promise<InspectionRecord[]> {
    const where = ["account_id = ?", "livemode = ?"];
    const params: (string | number)[] = [scope.accountId, scope.livemode ? 1 : 0];
    if (f.after) {
      // Row-value comparison walks the (account, livemode, created_s, id) index from the cursor on.
      where.push("(created_s, id) < (?, ?)");
      params.push(Math.floor(f.after.createdAt / 1000), f.after.id);
    }
    for (const [column, value] of [
      ["status", f.status],
      ["reference", f.reference],
      ["vin", f.vin],
    ] as const) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    // Each page index continues with created_s, so a range of dates is a range of the index.
    if (f.createdFrom !== undefined) {
      where.push("created_s >= ?");
      params.push(Math.ceil(f.createdFrom / 1000));
    }
    if (f.createdBefore !== undefined) {
      where.push("created_s < ?");
      params.push(Math.ceil(f.createdBefore / 1000));
    }
    params.push(f.limit);
    const rows = this.#records(
      `${SELECT} INDEXED BY ${pageIndex(f)} WHERE ${where.join(" AND ")} ORDER BY created_s DESC, id DESC LIMIT ?`,
    ).all(...params);
    return rows.map(toRecord);
  }

  async countByStatus(): Promise<Map<Status, number>> {
    const rows = this.#sql("SELECT status, COUNT(*) AS n FROM inspections GROUP BY status").all() as { status: Status; n: number }[];
    return new Map(rows.map((r) => [r.status, r.n]));
  }

  async changedSince(after: { updatedAt: number; id: string } | null, limit: number): Promise<InspectionRecord[]> {
    const rows = after
      ? this.#records(`${SELECT} WHERE (updated_at, id) > (?, ?) ORDER BY updated_at, id LIMIT ?`).all(after.updatedAt, after.id, limit)
      : this.#records(`${SELECT} ORDER BY updated_at, id LIMIT ?`).all(limit);
    return rows.map(toRecord);
  }

  async recordOpened(id: string, at: number): Promise<void> {
    this.#sql("UPDATE inspections SET opened_at = COALESCE(opened_at, ?), needs_reconcile = needs_reconcile + 1 WHERE id = ?").run(at, id);
    this.#writes.emit(id);
  }

  async recordSubmitRequested(id: string, at: number): Promise<void> {
    this.#sql(
      "UPDATE inspections SET submit_requested_at = COALESCE(submit_requested_at, ?), needs_reconcile = needs_reconcile + 1 WHERE id = ?",
    ).run(at, id);
    this.#writes.emit(id);
  }

  async recordCancelRequested(id: string, at: number): Promise<void> {
    this.#sql(
      "UPDATE inspections SET cancel_requested_at = COALESCE(cancel_requested_at, ?), needs_reconcile = needs_reconcile + 1 WHERE id = ?",
    ).run(at, id);
    this.#writes.emit(id);
  }

  async recordVinObserved(id: string, vin: string): Promise<void> {
    this.#sql("UPDATE inspections SET vin_observed = ? WHERE id = ?").run(vin, id);
  }

  async recordVehicle(id: string, vehicle: Pick<InspectionRecord, "make" | "model" | "year">): Promise<void> {
    this.#sql("UPDATE inspections SET make = ?, model = ?, year = ? WHERE id = ? AND make IS NULL").run(
      vehicle.make,
      vehicle.model,
      vehicle.year,
      id,
    );
  }

  watch(listener: (inspectionId: string) => void): () => void {
    return this.#writes.add(listener);
  }

  async needingReconcile(now: number, limit: number): Promise<InspectionRecord[]> {
    const rows = this.#records(
      `${SELECT} WHERE needs_reconcile > 0
       UNION ${SELECT} WHERE status IN ('created', 'in_progress') AND expires_at <= ?
       UNION ${SELECT} WHERE status = 'processing' AND (processing_due_at IS NULL OR processing_due_at <= ?)
       LIMIT ?`,
    ).all(now, now, limit);
    return rows.map(toRecord);
  }

  async clearReconcile(id: string, generation: number): Promise<void> {
    // Only clears when no intent arrived since the controller read the row; else it stays due.
    this.#sql("UPDATE inspections SET needs_reconcile = 0 WHERE id = ? AND needs_reconcile = ?").run(id, generation);
  }

  async transition(
    id: string,
    from: Status,
    to: Status,
    at: number,
    patch: TransitionPatch,
    events: EventsFactory,
  ): Promise<InspectionRecord | null> {
    return transaction(this.#db, () => {
      const sets = ["status = ?", "updated_at = ?"];
      const params: (string | number | null)[] = [to, at];
      const columns: Record<string, string | number | null | undefined> = {
        submitted_at: patch.submittedAt,
        completed_at: patch.completedAt,
        canceled_at: patch.canceledAt,
        summary_findings: patch.summary?.findings,
        summary_grade: patch.summary?.grade,
        summary_needs_review: patch.summary === undefined || patch.summary === null ? undefined : Number(patch.summary.needs_review),
        summary_new_findings: patch.summary?.new_findings ?? undefined,
        failure_code: patch.failure?.code,
        failure_message: patch.failure?.message,
      };
      for (const [column, value] of Object.entries(columns)) {
        if (value === undefined) continue;
        sets.push(`${column} = ?`);
        params.push(value);
      }
      const result = this.#sql(`UPDATE inspections SET ${sets.join(", ")} WHERE id = ? AND status = ?`).run(...params, id, from);
      if (result.changes !== 1) return null;
      const after = this.#read(id)!;
      for (const e of eventsMade(events(after))) insertEvent(this.#db, after, at, e);
      return after;
    });
  }

  async recordReview(id: string, review: ReviewRecord, events: EventsFactory): Promise<InspectionRecord | TooManyReviews | null> {
    // One IMMEDIATE transaction: no other review (from this process or another) lands between the count and the write.
    return transaction(this.#db, () => {
      const { reviews } = this.#sql("SELECT COUNT(*) AS reviews FROM events WHERE inspection_id = ? AND type = ?").get(id, REVIEWED) as {
        reviews: number;
      };
      if (reviews >= MAX_REVIEWS) return tooManyReviews(reviews);
      const { summary } = review;
      const result = this.#sql(
        `UPDATE inspections SET review = ?, summary_findings = ?, summary_grade = ?, summary_needs_review = 0,
           summary_new_findings = ?, updated_at = ?
         WHERE id = ? AND status = 'completed'`,
      ).run(JSON.stringify(review), summary.findings, summary.grade, summary.new_findings ?? null, review.at, id);
      if (result.changes !== 1) return null;
      const after = this.#read(id)!;
      for (const e of eventsMade(events(after))) insertEvent(this.#db, after, review.at, e);
      return after;
    });
  }

  async scheduleProcessingRetry(id: string, attempts: number, dueAt: number): Promise<void> {
    this.#sql("UPDATE inspections SET processing_attempts = ?, processing_due_at = ? WHERE id = ?").run(attempts, dueAt, id);
  }

  async putPhoto(p: PhotoRecord, m: MediaRecord): Promise<PutPhotoResult> {
    // One IMMEDIATE transaction: no intent (from this process or another) can land between the check and the write.
    return transaction(this.#db, () => {
      const open = this.#sql(
        `SELECT 1 FROM inspections WHERE id = ? AND status IN (${CAPTURE_OPEN.map(() => "?").join(", ")})
           AND submit_requested_at IS NULL AND cancel_requested_at IS NULL AND expires_at > ?`,
      ).get(p.inspectionId, ...CAPTURE_OPEN, p.capturedAt);
      if (!open) return { accepted: false };
      // The slot column is 0 for photos that are not close-ups: a key column holding NULL would not conflict.
      const slot = p.slot ?? 0;
      const previous = this.#sql(
        "SELECT m.* FROM photos p JOIN media m ON m.id = p.media_id WHERE p.inspection_id = ? AND p.angle = ? AND p.slot = ?",
      ).get(p.inspectionId, p.angle, slot);
      this.#insertMedia(m);
      this.#sql(
        `INSERT INTO photos (inspection_id, angle, slot, part, media_id, quality, tries, captured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (inspection_id, angle, slot) DO UPDATE SET part = excluded.part, media_id = excluded.media_id,
           quality = excluded.quality, tries = photos.tries + 1, captured_at = excluded.captured_at`,
      ).run(p.inspectionId, p.angle, slot, p.part, p.mediaId, JSON.stringify(p.quality), p.tries, p.capturedAt);
      if (previous) this.#sql("DELETE FROM media WHERE id = ?").run((previous as Row).id as string);
      return { accepted: true, replaced: previous ? toMedia(previous as Row) : null };
    });
  }

  async photos(inspectionId: string): Promise<PhotoRecord[]> {
    const rows = this.#sql(
      `SELECT p.*, m.width, m.height FROM photos p JOIN media m ON m.id = p.media_id WHERE p.inspection_id = ? ORDER BY p.captured_at`,
    ).all(inspectionId) as Row[];
    return rows.map((r) => ({
      inspectionId: r.inspection_id as string,
      angle: r.angle as string,
      slot: (r.slot as number) || null,
      part: (r.part as string | null) ?? null,
      mediaId: r.media_id as string,
      width: r.width as number,
      height: r.height as number,
      quality: JSON.parse(r.quality as string),
      tries: r.tries as number,
      capturedAt: r.captured_at as number,
    }));
  }

  async putMedia(m: MediaRecord): Promise<void> {
    transaction(this.#db, () => {
      const held = this.#sql("SELECT * FROM media WHERE id = ?").get(m.id);
      if (held && sameMedia(toMedia(held as Row), m)) return;
      this.#insertMedia(m);
    });
  }

  #insertMedia(m: MediaRecord): void {
    this.#sql(
      `INSERT INTO media (id, account_id, livemode, inspection_id, kind, blob_key, bytes, etag, width, height, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(m.id, m.accountId, m.livemode ? 1 : 0, m.inspectionId, m.kind, m.blobKey, m.bytes, m.etag, m.width, m.height, m.createdAt);
  }

  async getMedia(scope: Scope, id: string): Promise<MediaRecord | null> {
    const row = this.#sql("SELECT * FROM media WHERE id = ? AND account_id = ? AND livemode = ?").get(
      id,
      scope.accountId,
      scope.livemode ? 1 : 0,
    );
    return row ? toMedia(row as Row) : null;
  }
}
