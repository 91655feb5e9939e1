import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Database, groupCommit, openDatabase, sql, transaction } from "../../core/adapters/sqlite/database.ts";

/** Two connections to one new data directory, as two workloads in one process hold them. */
function twoConnections(): [Database, Database] {
  const dir = mkdtempSync(join(tmpdir(), "vi-group-commit-"));
  return [openDatabase(dir), openDatabase(dir)];
}

const addAccount = (db: Database, id: string) =>
  sql(db, "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, 0)").run(id, `name of ${id}`);
const accounts = (db: Database) => (sql(db, "SELECT id FROM accounts ORDER BY id").all() as { id: string }[]).map((r) => r.id);

/*
 * A group holds the write lock until this thread's next turn. Another connection of the same
 * process that asked for the lock meanwhile waited in SQLite's busy handler on this thread, so the
 * group could not commit: 5 s of a stalled process (an operator lost its lease in CI), then
 * "database is locked".
 */
describe("group commit beside other connections of the same process", () => {
  it("commits the open group first when another connection writes in a transaction, a group, or alone", async () => {
    const [a, b] = twoConnections();
    const grouped = groupCommit(a, () => addAccount(a, "acct_a1"));
    expect(() => transaction(b, () => addAccount(b, "acct_b1"))).not.toThrow();
    await expect(grouped).resolves.toBeDefined();

    const again = groupCommit(a, () => addAccount(a, "acct_a2"));
    const theirs = groupCommit(b, () => addAccount(b, "acct_b2"));
    expect(() => addAccount(a, "acct_a3")).not.toThrow();
    await Promise.all([again, theirs]);

    expect(accounts(a)).toEqual(["acct_a1", "acct_a2", "acct_a3", "acct_b1", "acct_b2"]);
    expect(accounts(b)).toEqual(accounts(a));
  });

  it("still undoes a failing grouped write alone, and keeps the others of its turn", async () => {
    const [a, b] = twoConnections();
    const kept = groupCommit(a, () => addAccount(a, "acct_kept"));
    const refused = groupCommit(a, () => addAccount(a, "acct_kept"));
    await expect(refused).rejects.toThrow(/UNIQUE/);
    await kept;
    expect(accounts(b)).toEqual(["acct_kept"]);
  });
});
