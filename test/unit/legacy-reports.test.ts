import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { openDatabase, sql } from "../../core/adapters/sqlite/database.ts";
import { moveLegacyReports } from "../../core/adapters/sqlite/legacy-reports.ts";
import { reportBlobKey } from "../../core/domain/blob-keys.ts";

describe("reports stored as rows by earlier versions", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("are moved to the blob store at boot, once; a report already there stays", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vi-legacy-"));
    dirs.push(dir);
    const db = openDatabase(dir);
    sql(db, "INSERT INTO reports (inspection_id, body) VALUES (?, ?), (?, ?)").run("insp_a", '{"a":1}', "insp_b", '{"b":1}');
    const blobs = new MemoryBlobStore();
    // insp_b's report reached the blobs before a crash left its row: the blob is the one kept.
    await blobs.put(reportBlobKey("insp_b"), Buffer.from('{"b":"first"}'));
    expect(await moveLegacyReports(db, blobs)).toBe(2);
    expect((await blobs.get(reportBlobKey("insp_a")))!.toString()).toBe('{"a":1}');
    expect((await blobs.get(reportBlobKey("insp_b")))!.toString()).toBe('{"b":"first"}');
    expect(sql(db, "SELECT COUNT(*) AS n FROM reports").get()).toEqual({ n: 0 });
    expect(await moveLegacyReports(db, blobs)).toBe(0);
    db.close();
  });
});
