import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryKeyStore } from "../../core/adapters/memory/memory-key-store.ts";
import { MemoryRateLimitStore } from "../../core/adapters/memory/memory-rate-limit-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { SqliteKeyStore } from "../../core/adapters/sqlite/sqlite-key-store.ts";
import { newId } from "../../core/domain/ids.ts";
import { isPending, whenReady } from "../../core/ports/awaitable.ts";
import type { InspectionStore } from "../../core/ports/inspection-store.ts";
import type { KeyStore } from "../../core/ports/key-store.ts";
import { sampleInspection } from "../contract/fixtures.ts";

/**
 * The three reads every API request makes answer at once from the embedded adapters
 * (core/ports/awaitable.ts): the contract suites `await` them, so an adapter that went back to
 * returning a promise would still pass those and quietly cost every request a turn of the microtask queue.
 */
/** The SQLite files each case made, closed and removed at the end. */
const opened: { db: ReturnType<typeof openDatabase>; dir: string }[] = [];
afterAll(() => {
  for (const { db, dir } of opened) {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

const EMBEDDED: { name: string; make: () => { keys: KeyStore; inspections: InspectionStore } }[] = [
  {
    name: "memory",
    make: () => {
      const state = new MemoryState();
      return { keys: new MemoryKeyStore(state), inspections: new MemoryInspectionStore(state) };
    },
  },
  {
    name: "sqlite",
    make: () => {
      const dir = mkdtempSync(join(tmpdir(), "vi-awaitable-"));
      const db = openDatabase(dir);
      opened.push({ db, dir });
      return { keys: new SqliteKeyStore(db), inspections: new SqliteInspectionStore(db) };
    },
  },
];

describe.each(EMBEDDED)("the $name adapters answer the per-request reads at once", ({ make }) => {
  it("a key's lookup, found and not", async () => {
    const { keys } = make();
    const made = await keys.createKey("acme", "test", "a".repeat(64), "abcd", newId("key"), Date.now());
    const found = keys.findByHash("a".repeat(64));
    expect(isPending(found)).toBe(false);
    expect(found).toEqual(made);
    const unknown = keys.findByHash("b".repeat(64));
    expect(isPending(unknown)).toBe(false);
    expect(unknown).toBeNull();
  });

  it("an inspection's read by id, in its scope and not", async () => {
    const { inspections } = make();
    const r = sampleInspection();
    await inspections.create(r, newId("key"), () => ({ id: newId("evt"), type: "inspection.created", data: "{}" }));
    const found = inspections.get({ accountId: r.accountId, livemode: false }, r.id);
    expect(isPending(found)).toBe(false);
    expect(found).toMatchObject({ id: r.id });
    const elsewhere = inspections.get({ accountId: r.accountId, livemode: true }, r.id);
    expect(isPending(elsewhere)).toBe(false);
    expect(elsewhere).toBeNull();
  });
});

describe("the embedded rate limit", () => {
  it("takes at once", () => {
    const taken = new MemoryRateLimitStore().take("k", 2, 1000, 0);
    expect(isPending(taken)).toBe(false);
    expect(taken).toMatchObject({ allowed: true, used: 1 });
  });
});

describe("whenReady", () => {
  it("goes on at once with a value, null included", () => {
    const seen: unknown[] = [];
    expect(whenReady(3, (n) => n + 1)).toBe(4);
    expect(whenReady(null, (v) => seen.push(v))).toBe(1);
    expect(seen).toEqual([null]);
  });

  it("waits for a promise, and hands a rejection to `otherwise`", async () => {
    const later = whenReady(Promise.resolve(3), (n) => n + 1);
    expect(isPending(later)).toBe(true);
    expect(await later).toBe(4);
    const failed = whenReady(
      Promise.reject(new Error("down")),
      () => "value",
      (error) => `otherwise: ${(error as Error).message}`,
    );
    expect(await failed).toBe("otherwise: down");
  });

  it("takes a promise from another realm for a promise, which instanceof Promise would not", async () => {
    const foreign = runInNewContext("Promise.resolve(5)") as Promise<number>;
    expect(foreign instanceof Promise).toBe(false);
    expect(isPending(foreign)).toBe(true);
    expect(await whenReady(foreign, (n) => n * 2)).toBe(10);
  });
});
