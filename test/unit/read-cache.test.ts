import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase, sql, transaction } from "../../core/adapters/sqlite/database.ts";
import { ReadCache } from "../../core/adapters/sqlite/read-cache.ts";

const freshDb = () => openDatabase(mkdtempSync(join(tmpdir(), "vi-read-cache-")));

/** A loader that counts its reads, so a test can tell a cached answer from a read. */
function counting(value: (key: string) => { v: string } | null) {
  const reads: string[] = [];
  return {
    reads,
    read: (key: string) => () => {
      reads.push(key);
      return value(key);
    },
  };
}

describe("ReadCache (SQLite adapter)", () => {
  it("answers a repeated read from memory until this connection changes a row of its tables", () => {
    const db = freshDb();
    const cache = new ReadCache<{ v: string }>(db, ["accounts"], 10);
    const { reads, read } = counting((k) => ({ v: k }));
    expect(cache.get("a", read("a"))).toEqual({ v: "a" });
    expect(cache.get("a", read("a"))).toEqual({ v: "a" });
    expect(reads).toEqual(["a"]);
    sql(db, "UPDATE accounts SET name = 'renamed' WHERE id = 'acct_none'").run();
    cache.get("a", read("a"));
    expect(reads).toEqual(["a", "a"]);
  });

  it("keeps no absent record, holds at most max, and hands out frozen records", () => {
    const db = freshDb();
    const cache = new ReadCache<{ v: string }>(db, ["accounts"], 4);
    const { reads, read } = counting((k) => (k === "none" ? null : { v: k }));
    expect(cache.get("none", read("none"))).toBeNull();
    expect(cache.get("none", read("none"))).toBeNull();
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    for (const k of keys) cache.get(k, read(k));
    // The last ones read are held; of the ten, at most four are: the first six are read again.
    for (const k of ["k9", "k8", ...keys.slice(0, 6)]) cache.get(k, read(k));
    expect(reads).toEqual(["none", "none", ...keys, ...keys.slice(0, 6)]);
    expect(Object.isFrozen(cache.get("k5", read("k5")))).toBe(true);
  });

  it("empties on changes to its tables' rows, a rollback, or a statement it cannot place; not on inserts or other tables", () => {
    const db = freshDb();
    const cache = new ReadCache<{ v: string }>(db, ["api_keys", "accounts"], 10);
    const { reads, read } = counting((k) => ({ v: k }));
    const readAgain = () => cache.get("a", read("a"));
    readAgain();
    // Inserts only add rows, and the cache keeps no absent ones: nothing it holds can change.
    sql(db, "\n  insert into ACCOUNTS (id, name, created_at) VALUES ('acct_y', 'y', 1)").run();
    sql(db, "INSERT OR IGNORE INTO accounts (id, name, created_at) VALUES ('acct_y', 'y', 1)").run();
    sql(db, "UPDATE inspections SET status = 'canceled' WHERE id = 'insp_none'").run();
    sql(db, "DELETE FROM reports WHERE inspection_id = 'insp_none'").run();
    readAgain();
    expect(reads).toHaveLength(1);
    for (const change of [
      "UPDATE api_keys SET revoked_at = 1 WHERE id = 'key_none'",
      "delete from accounts where id = 'acct_none'",
      "INSERT OR REPLACE INTO accounts (id, name, created_at) VALUES ('acct_y', 'y', 2)",
      "INSERT INTO accounts (id, name, created_at) VALUES ('acct_y', 'y', 3) ON CONFLICT (id) DO UPDATE SET created_at = 3",
      // One it cannot place counts as a change to every table.
      "WITH n AS (SELECT 2 AS v) INSERT INTO reports SELECT 'insp_' || v, '{}' FROM n",
    ]) {
      const before = reads.length;
      sql(db, change).run();
      readAgain();
      expect(reads, change).toHaveLength(before + 1);
    }
    expect(() =>
      transaction(db, () => {
        sql(db, "INSERT INTO reports (inspection_id, body) VALUES ('insp_3', '{}')").run();
        throw new Error("undone");
      }),
    ).toThrow("undone");
    readAgain();
    expect(reads).toHaveLength(7);
    // Tables are named as SQL names them, in any case.
    const named = new ReadCache<{ v: string }>(db, ["API_Keys"], 10);
    const { reads: namedReads, read: namedRead } = counting((k) => ({ v: k }));
    named.get("a", namedRead("a"));
    sql(db, "UPDATE api_keys SET revoked_at = 2 WHERE id = 'key_none'").run();
    named.get("a", namedRead("a"));
    expect(namedReads).toHaveLength(2);
  });
});
