import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase, sql } from "../../core/adapters/sqlite/database.ts";
import { ReadCache } from "../../core/adapters/sqlite/read-cache.ts";

const freshDb = () => openDatabase(mkdtempSync(join(tmpdir(), "vi-read-cache-")));

/** A loader that counts its reads, so a test can tell a cached answer from a read. */
function counting(value: (key: string) => { v: string } | null) {
  const reads: string[] = [];
  return { reads, read: (key: string) => () => (reads.push(key), value(key)) };
}

describe("ReadCache (SQLite adapter)", () => {
  it("answers a repeated read from memory until this connection writes", () => {
    const db = freshDb();
    const cache = new ReadCache<{ v: string }>(db, 10);
    const { reads, read } = counting((k) => ({ v: k }));
    expect(cache.get("a", read("a"))).toEqual({ v: "a" });
    expect(cache.get("a", read("a"))).toEqual({ v: "a" });
    expect(reads).toEqual(["a"]);
    sql(db, "INSERT INTO accounts (id, name, created_at) VALUES ('acct_x', 'x', 1)").run();
    cache.get("a", read("a"));
    expect(reads).toEqual(["a", "a"]);
  });

  it("keeps no absent record, holds at most max, and hands out frozen records", () => {
    const db = freshDb();
    const cache = new ReadCache<{ v: string }>(db, 2);
    const { reads, read } = counting((k) => (k === "none" ? null : { v: k }));
    expect(cache.get("none", read("none"))).toBeNull();
    expect(cache.get("none", read("none"))).toBeNull();
    for (const k of ["a", "b", "c", "b", "c", "a"]) cache.get(k, read(k));
    // "a" was the oldest when "c" came in: it was dropped and read again.
    expect(reads).toEqual(["none", "none", "a", "b", "c", "a"]);
    expect(Object.isFrozen(cache.get("a", read("a")))).toBe(true);
  });
});
