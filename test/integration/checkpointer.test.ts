import { execFile } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { Checkpointer } from "../../core/adapters/sqlite/checkpointer.ts";
import { databaseFile, openDatabase, transaction } from "../../core/adapters/sqlite/database.ts";

it("copies committed pages from the WAL into the database file from its own thread, and closes twice", async () => {
  const dir = mkdtempSync(join(tmpdir(), "vi-ckpt-"));
  const db = openDatabase(dir);
  const checkpointer = new Checkpointer(db, databaseFile(dir), { everyMs: 20 });
  const before = statSync(databaseFile(dir)).size;
  // About 2 MB: far under the writer's own threshold while the thread runs (50,000 pages), so only
  // the thread can move these pages into the file.
  db.exec("CREATE TABLE filler (body TEXT)");
  const insert = db.prepare("INSERT INTO filler (body) VALUES (?)");
  transaction(db, () => {
    for (let i = 0; i < 2000; i++) insert.run("x".repeat(1000));
  });
  await expect.poll(() => statSync(databaseFile(dir)).size).toBeGreaterThan(before + 1_000_000);
  await checkpointer.close();
  await checkpointer.close();
  expect((db.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint).toBe(50_000);
  db.close();
});

it("finishes closing in a process that has nothing else to do (the thread holds it open until it has stopped)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "vi-ckpt-"));
  const module = (file: string) => JSON.stringify(new URL(`../../core/adapters/sqlite/${file}`, import.meta.url).href);
  const script = `import { Checkpointer } from ${module("checkpointer.ts")};
import { databaseFile, openDatabase } from ${module("database.ts")};
const db = openDatabase(${JSON.stringify(dir)});
const checkpointer = new Checkpointer(db, databaseFile(${JSON.stringify(dir)}));
await checkpointer.close();
db.close();
console.log("closed");`;
  // Unfinished, the process would exit with 13 (a top-level await that never settled) and print nothing.
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]);
  expect(stdout).toBe("closed\n");
});
