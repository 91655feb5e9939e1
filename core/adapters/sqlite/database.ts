import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";

/**
 * The embedded store: one SQLite file in WAL mode under DATA_DIR. The API, the controller and the
 * CLI may be separate processes on one machine; WAL and busy_timeout let them share it.
 */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), livemode INTEGER NOT NULL,
    hash TEXT NOT NULL UNIQUE, last4 TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER
  );
  CREATE TABLE webhook_secrets (
    account_id TEXT NOT NULL REFERENCES accounts(id), livemode INTEGER NOT NULL, secret TEXT NOT NULL,
    created_at INTEGER NOT NULL, PRIMARY KEY (account_id, livemode)
  );
  CREATE TABLE inspections (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, livemode INTEGER NOT NULL, status TEXT NOT NULL,
    reference TEXT, vin TEXT NOT NULL, make TEXT, model TEXT, year INTEGER, notify_url TEXT,
    capture_token_hash TEXT NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    submitted_at INTEGER, completed_at INTEGER, canceled_at INTEGER,
    summary_findings INTEGER, summary_grade TEXT, failure_code TEXT, failure_message TEXT,
    -- intents, written by the API and capture routes; the controller turns them into moves
    opened_at INTEGER, submit_requested_at INTEGER, cancel_requested_at INTEGER, vin_observed TEXT,
    needs_reconcile INTEGER NOT NULL DEFAULT 0,
    processing_attempts INTEGER NOT NULL DEFAULT 0, processing_due_at INTEGER,
    -- Lists order by created_at as shown (whole seconds), then id, as the contract says.
    created_s INTEGER GENERATED ALWAYS AS (created_at / 1000) VIRTUAL
  );
  CREATE INDEX inspections_page ON inspections (account_id, livemode, created_s DESC, id DESC);
  -- The list filters, each as a keyset page of its own.
  CREATE INDEX inspections_page_status ON inspections (account_id, livemode, status, created_s DESC, id DESC);
  CREATE INDEX inspections_page_reference ON inspections (account_id, livemode, reference, created_s DESC, id DESC);
  CREATE INDEX inspections_page_vin ON inspections (account_id, livemode, vin, created_s DESC, id DESC);
  CREATE INDEX inspections_reconcile ON inspections (needs_reconcile) WHERE needs_reconcile > 0;
  -- The controller polls these; their WHERE clauses match its queries exactly, so a poll reads only
  -- open inspections instead of scanning the table.
  CREATE INDEX inspections_capture_open ON inspections (expires_at) WHERE status IN ('created', 'in_progress');
  CREATE INDEX inspections_processing ON inspections (processing_due_at) WHERE status = 'processing';
  CREATE TABLE media (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, livemode INTEGER NOT NULL, inspection_id TEXT NOT NULL,
    kind TEXT NOT NULL, blob_key TEXT NOT NULL, bytes INTEGER NOT NULL, etag TEXT NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, created_at INTEGER NOT NULL
  );
  CREATE INDEX media_inspection ON media (inspection_id);
  CREATE TABLE photos (
    inspection_id TEXT NOT NULL, angle TEXT NOT NULL, media_id TEXT NOT NULL, quality TEXT NOT NULL,
    tries INTEGER NOT NULL, captured_at INTEGER NOT NULL, PRIMARY KEY (inspection_id, angle)
  );
  CREATE TABLE reports (inspection_id TEXT PRIMARY KEY, body TEXT NOT NULL); -- emptied into blobs at boot (legacy-reports.ts)
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, account_id TEXT NOT NULL,
    livemode INTEGER NOT NULL, inspection_id TEXT NOT NULL, type TEXT NOT NULL, created_at INTEGER NOT NULL,
    data TEXT NOT NULL, notify_url TEXT, delivery_status TEXT NOT NULL, next_attempt_at INTEGER,
    attempt_count INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX events_page ON events (account_id, livemode, seq DESC);
  CREATE INDEX events_due ON events (next_attempt_at) WHERE delivery_status = 'pending';
  CREATE TABLE delivery_attempts (
    event_id TEXT NOT NULL, n INTEGER NOT NULL, attempted_at INTEGER NOT NULL, status_code INTEGER,
    latency_ms INTEGER NOT NULL, error TEXT, PRIMARY KEY (event_id, n)
  );
  CREATE TABLE idempotency_keys (
    account_id TEXT NOT NULL, livemode INTEGER NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    state TEXT NOT NULL, status_code INTEGER, body TEXT, headers TEXT, created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, livemode, key)
  );
  CREATE INDEX idempotency_age ON idempotency_keys (created_at);
  `,
  // The filter indexes end at the second, not at the id: a create lands at the end of its second's
  // run in each, one page for a whole group commit. Ending at the random id put every create on a
  // page of its own in each index, a third of a create's WAL frames. A filtered page sorts the ties
  // of the seconds it reads (the unfiltered list, the one paged through most, keeps the id).
  `
  DROP INDEX inspections_page_status;
  DROP INDEX inspections_page_reference;
  DROP INDEX inspections_page_vin;
  CREATE INDEX inspections_by_status ON inspections (account_id, livemode, status, created_s DESC);
  CREATE INDEX inspections_by_reference ON inspections (account_id, livemode, reference, created_s DESC);
  CREATE INDEX inspections_by_vin ON inspections (account_id, livemode, vin, created_s DESC);
  `,
  // People who use the dashboard, their sessions and invitations, and when each API key was last
  // used (a table of its own, so noting a use does not empty the key cache every request reads).
  `
  CREATE TABLE users (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL, created_at INTEGER NOT NULL
  );
  CREATE INDEX users_account ON users (account_id);
  CREATE TABLE user_sessions (
    id_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id), created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX user_sessions_user ON user_sessions (user_id);
  CREATE TABLE invites (
    token_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), email TEXT NOT NULL,
    invited_by TEXT NOT NULL REFERENCES users(id), created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    accepted_at INTEGER
  );
  CREATE TABLE api_key_usage (key_id TEXT PRIMARY KEY, last_used_at INTEGER NOT NULL);
  `,
  // A rotated-out webhook secret keeps signing until previous_expires_at, so receivers can switch
  // without refusing a delivery. A resent event's retry schedule starts again from the attempt count
  // it had when resent (schedule_from), while its attempts keep their numbering.
  `
  ALTER TABLE webhook_secrets ADD COLUMN previous_secret TEXT;
  ALTER TABLE webhook_secrets ADD COLUMN previous_expires_at INTEGER;
  ALTER TABLE events ADD COLUMN schedule_from INTEGER NOT NULL DEFAULT 0;
  `,
  // An inspection's history (the dashboard's inspection page): its few events, without reading
  // through every event of its account.
  `
  CREATE INDEX events_inspection ON events (inspection_id, seq);
  `,
  // Cluster mode relays the outbox to the bus: whether a pending event has been handed to it since
  // it became pending (appended, or resent). The relay reads the pending ones it has not.
  `
  ALTER TABLE events ADD COLUMN published INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX events_unpublished ON events (seq) WHERE delivery_status = 'pending' AND published = 0;
  `,
  // The feed of inspections created or moved, in order, that the Inspection resources are kept from.
  `
  CREATE INDEX inspections_changed ON inspections (updated_at, id);
  `,
  // Whether a completed inspection's report asks for a person's review (summary.needs_review).
  `
  ALTER TABLE inspections ADD COLUMN summary_needs_review INTEGER NOT NULL DEFAULT 0;
  `,
  // Close-ups: several photos of the angle 'closeup', one per slot, each with the part it shows. The
  // key gains the slot (0 for every other photo), so the table is made again with it.
  `
  CREATE TABLE photos_with_slots (
    inspection_id TEXT NOT NULL, angle TEXT NOT NULL, slot INTEGER NOT NULL DEFAULT 0, part TEXT,
    media_id TEXT NOT NULL, quality TEXT NOT NULL, tries INTEGER NOT NULL, captured_at INTEGER NOT NULL,
    PRIMARY KEY (inspection_id, angle, slot)
  );
  INSERT INTO photos_with_slots (inspection_id, angle, media_id, quality, tries, captured_at)
    SELECT inspection_id, angle, media_id, quality, tries, captured_at FROM photos;
  DROP TABLE photos;
  ALTER TABLE photos_with_slots RENAME TO photos;
  `,
  // Review: the policy asked for at creation (NULL: the account's), and the latest review as JSON.
  `
  ALTER TABLE inspections ADD COLUMN review_policy TEXT;
  ALTER TABLE inspections ADD COLUMN review TEXT;
  CREATE TABLE account_settings (
    account_id TEXT NOT NULL, livemode INTEGER NOT NULL, review_policy TEXT NOT NULL,
    PRIMARY KEY (account_id, livemode)
  );
  `,
  // Before and after: the inspection a handover is compared with, and how many findings are new since.
  `
  ALTER TABLE inspections ADD COLUMN baseline_inspection TEXT;
  ALTER TABLE inspections ADD COLUMN summary_new_findings INTEGER;
  `,
  // What the customer is asked to photograph (capture at creation), as JSON; NULL: stored before it
  // existed, which reads as the default walkaround.
  `
  ALTER TABLE inspections ADD COLUMN capture TEXT;
  `,
  // Whose capture page it is: the account's display name, accent colour and logo (JSON), one row an
  // account, for test and live alike.
  `
  CREATE TABLE account_branding (
    account_id TEXT PRIMARY KEY, display_name TEXT, accent_color TEXT, logo TEXT, updated_at INTEGER NOT NULL
  );
  `,
];

export type Database = DatabaseSync;

export const databaseFile = (dataDir: string) => join(dataDir, "inspections.db");

export function openDatabase(dataDir: string): Database {
  mkdirSync(dataDir, { recursive: true });
  const db = new DatabaseSync(databaseFile(dataDir), { timeout: BUSY_FOR_MS });
  // synchronous=NORMAL in WAL mode: a commit survives a process crash (the contract's restart promise);
  // only a power loss can take the last commits. 64 MB of page cache keeps list pages warm.
  // temp_store=MEMORY: each grouped write's savepoint copies the pages it first touches into a
  // sub-journal, which past 64 KiB spills to a temporary file; a group of creates passes that, and
  // the file's writes doubled what an insert cost.
  enterWal(db);
  db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;");
  migrate(db);
  return db;
}

const BUSY_FOR_MS = 5_000;

/**
 * Switches a new database file to WAL (a file already in WAL stays so). SQLite answers "database is
 * locked" at once, without waiting out busy_timeout, when another process is switching the same new
 * file at that moment (seen with four workloads started together: 5 of 80 opens), so the switch is
 * tried again for as long as busy_timeout would wait.
 */
function enterWal(db: Database): void {
  const deadline = Date.now() + BUSY_FOR_MS;
  for (;;) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== 5 /* SQLITE_BUSY */ || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

/**
 * Brings the schema up to date. The version is read inside the write transaction: processes started
 * together on a new DATA_DIR (the cluster mode's workloads on one machine) would otherwise each read
 * version 0 and all but the first fail on "table already exists".
 */
function migrate(db: Database): void {
  const version = () => (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (version() >= MIGRATIONS.length) return;
  transaction(db, () => {
    for (let v = version(); v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v]!);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
  });
}

/** Stands for every table: what a rollback, or a statement whose table is unknown, may have changed. */
const ANY = "*";
/**
 * `changes`: the table, in lower case, whose stored rows running the statement may change; null for
 * none. `writes`: whether it takes the write lock (anything but a SELECT).
 */
type Prepared = { stmt: StatementSync; changes: string | null; writes: boolean };
const statementCaches = new WeakMap<Database, Map<string, Prepared>>();

/**
 * Which table's stored rows a statement may change: none for a SELECT or a plain INSERT; its table
 * for an UPDATE, a DELETE, or an INSERT that may replace or update; ANY where it cannot tell.
 * A plain INSERT only adds rows, and read caches hold only rows that exist, by a unique key, so no
 * answer of theirs can change. If it fails it is undone alone, or its transaction rolls back, which
 * counts as a change to everything.
 */
function changesTo(text: string): string | null {
  if (/^\s*SELECT\b/i.test(text)) return null;
  // OR ROLLBACK undoes the whole transaction, other statements' changes with it.
  if (/\bOR\s+ROLLBACK\b/i.test(text)) return ANY;
  const insert = /^\s*INSERT(?:\s+OR\s+(\w+))?\s+INTO\s+(\w+)/i.exec(text);
  if (insert) {
    const onlyAdds = /^(?:ABORT|FAIL|IGNORE)?$/i.test(insert[1] ?? "") && !/\bDO\s+UPDATE\b/i.test(text);
    return onlyAdds ? null : insert[2]!.toLowerCase();
  }
  return /^\s*(?:UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM|REPLACE\s+INTO)\s+(\w+)/i.exec(text)?.[1]?.toLowerCase() ?? ANY;
}

/**
 * A prepared statement for `sql` on this connection, prepared once and reused: preparing costs more
 * than running most of these queries, and the stores run them on every request and poll. Handing
 * out a statement that may change stored rows counts as a change to its table for changeStamp(),
 * before it runs.
 */
export function sql(db: Database, text: string, options: { arrays?: boolean } = {}): StatementSync {
  let cache = statementCaches.get(db);
  if (!cache) {
    cache = new Map();
    statementCaches.set(db, cache);
  }
  // `arrays`: rows as arrays of the columns in order (cheaper than objects with a property each); a
  // statement of its own, as the setting is the statement's.
  const key = options.arrays ? `[]${text}` : text;
  let prepared = cache.get(key);
  if (!prepared) {
    const stmt = db.prepare(text);
    if (options.arrays) stmt.setReturnArrays(true);
    prepared = { stmt, changes: changesTo(text), writes: !/^\s*SELECT\b/i.test(text) };
    cache.set(key, prepared);
  }
  if (prepared.writes) commitOtherGroups(db);
  if (prepared.changes !== null) changed(db, prepared.changes);
  return prepared.stmt;
}

/** How stale another connection's commits may look to changeStamp(): a millisecond. */
const OTHER_WRITERS_VISIBLE_WITHIN_MS = 1;

/** `generation` moves on changes to anything; `tables` counts this connection's writes per table. */
type Stamp = { generation: number; tables: Map<string, number>; dataVersion: number; checkedAt: number; probe: StatementSync };
const stamps = new WeakMap<Database, Stamp>();

function stampOf(db: Database): Stamp {
  let stamp = stamps.get(db);
  if (!stamp) {
    stamp = { generation: 0, tables: new Map(), dataVersion: -1, checkedAt: -Infinity, probe: db.prepare("PRAGMA data_version") };
    stamps.set(db, stamp);
  }
  return stamp;
}

function changed(db: Database, table = ANY): void {
  const stamp = stampOf(db);
  if (table === ANY) stamp.generation++;
  else stamp.tables.set(table, (stamp.tables.get(table) ?? 0) + 1);
}

/**
 * A counter that moves whenever what this connection reads from `tables` may have changed since it
 * last returned: at once on an update or delete of their rows or a rollback on this connection,
 * and within OTHER_WRITERS_VISIBLE_WITHIN_MS of another connection's commit to anything (the CLI
 * revoking a key). Inserts, and writes to other tables, leave it alone: a busy API's creates and
 * webhook bookkeeping do not empty the caches of API keys and inspections. PRAGMA data_version is
 * the only way to see other connections' commits, and in the running service any statement costs
 * as much as the point read it would guard (read locks on the shared WAL index), so it is asked at
 * most once a millisecond. Read caches compare it before trusting what they hold.
 */
export function changeStamp(db: Database, tables: readonly string[]): number {
  const stamp = stampOf(db);
  const now = performance.now();
  if (now - stamp.checkedAt >= OTHER_WRITERS_VISIBLE_WITHIN_MS) {
    stamp.checkedAt = now;
    const version = (stamp.probe.get() as { data_version: number }).data_version;
    if (version !== stamp.dataVersion) {
      stamp.dataVersion = version;
      stamp.generation++;
    }
  }
  // Every count only grows, so the sum moves whenever one of them does.
  let sum = stamp.generation;
  for (const table of tables) sum += stamp.tables.get(table) ?? 0;
  return sum;
}

/** Runs `fn` in an IMMEDIATE transaction, so concurrent writers from other processes wait instead of failing mid-way. */
export function transaction<T>(db: Database, fn: () => T): T {
  // A group still open on this connection commits first: a transaction cannot nest in it.
  commitGroup(db);
  commitOtherGroups(db);
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    db.exec("ROLLBACK");
    changed(db);
    throw error;
  }
}

type Group = { settle: ((error?: unknown) => void)[] };
const openGroups = new WeakMap<Database, Group>();
/** The connections of this process with a group open: at most a turn of the event loop each. */
const groupsOpen = new Set<Database>();

/**
 * Commits the groups open on this process's other connections, before `db` asks for the write lock.
 * A group holds that lock until this thread's next turn, and SQLite's busy handler waits for it on
 * this same thread, synchronously: the wait could never end before busy_timeout (5 s, the whole
 * process stalled) and the write would fail. One process holds several connections where several
 * workloads share it, as the tests' cluster composition runs the api, operator and inference.
 */
function commitOtherGroups(db: Database): void {
  for (const other of groupsOpen) if (other !== db) commitGroup(other);
}

/**
 * Group commit: runs `fn` now, in a transaction shared by every grouped write of this turn of the
 * event loop, and resolves once that transaction has committed. A lone create's COMMIT (WAL frames
 * for every page touched, checkpoints) took 44% of a POST's CPU against 9% for its inserts, so the
 * creates arriving together share one. Each write has its own savepoint: one that throws is undone
 * alone and rejects alone. The caller answers its client only after the promise resolves, so
 * nothing acknowledged can be lost; if the commit itself fails, every write of the group rejects.
 * A statement run outside transaction() while a group is open (idempotency and delivery
 * bookkeeping) joins the group and commits with it, within the same turn.
 */
export function groupCommit<T>(db: Database, fn: () => T): Promise<T> {
  let group = openGroups.get(db);
  if (!group) {
    commitOtherGroups(db);
    db.exec("BEGIN IMMEDIATE");
    group = { settle: [] };
    openGroups.set(db, group);
    groupsOpen.add(db);
    setImmediate(() => commitGroup(db));
  }
  db.exec("SAVEPOINT grouped");
  let result: T;
  try {
    result = fn();
    db.exec("RELEASE grouped");
  } catch (error) {
    db.exec("ROLLBACK TO grouped");
    db.exec("RELEASE grouped");
    changed(db);
    return Promise.reject(error);
  }
  const settle = group.settle;
  return new Promise((resolve, reject) => settle.push((error) => (error === undefined ? resolve(result) : reject(error))));
}

/** Commits this connection's open group, if any, and settles its writes. Also called before closing. */
export function commitGroup(db: Database): void {
  const group = openGroups.get(db);
  if (!group) return;
  openGroups.delete(db);
  groupsOpen.delete(db);
  let failure: unknown;
  try {
    db.exec("COMMIT");
  } catch (error) {
    failure = error ?? new Error("group commit failed");
    try {
      db.exec("ROLLBACK");
    } catch {
      // The failed COMMIT may already have rolled back.
    }
    changed(db);
  }
  for (const settle of group.settle) settle(failure);
}
