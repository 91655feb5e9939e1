import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";

const run = promisify(execFile);
const ROUNDS = 10;
const PROCESSES = 4;

/**
 * The cluster mode's workloads on one machine start together on one new DATA_DIR. Before the
 * migration read its version inside its transaction, and the switch to WAL was tried again when
 * busy, about half of such opens failed (19 and 18 of 40 in two runs: "table accounts already exists",
 * "database is locked"), and a cluster test's workload exited 1 before its first log line.
 */
it("processes opening a new data directory at the same moment all open it, the schema made once", async () => {
  const database = JSON.stringify(new URL("../../core/adapters/sqlite/database.ts", import.meta.url).href);
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const dir = join(mkdtempSync(join(tmpdir(), "vi-open-")), "data");
    // Each process spins until the same instant, so their opens overlap as the workloads' do.
    const at = Date.now() + 1_000;
    const script = `import { openDatabase } from ${database};
while (Date.now() < ${at}) {}
openDatabase(${JSON.stringify(dir)}).close();`;
    const opens = Array.from({ length: PROCESSES }, () => run(process.execPath, ["--input-type=module", "-e", script]));
    for (const result of await Promise.allSettled(opens)) {
      if (result.status === "rejected")
        failures.push(
          String((result.reason as { stderr?: string }).stderr)
            .split("\n")
            .find((l) => l.includes("Error")) ?? "",
        );
    }
    const db = openDatabase(dir);
    expect((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    expect((db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'inspections'").get() as { n: number }).n).toBe(1);
    db.close();
  }
  expect(failures).toEqual([]);
}, 60_000);
