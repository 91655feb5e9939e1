import { reportBlobKey } from "../../domain/blob-keys.ts";
import type { BlobStore } from "../../ports/blob-store.ts";
import { sql, type Database } from "./database.ts";

/**
 * Reports were rows of the `reports` table before they were blobs. At boot, each one left is written
 * to the blob store (once: a report already there stays) and only then its row deleted, so a crash
 * midway loses none and the next boot finishes. Answers how many were moved.
 */
export async function moveLegacyReports(db: Database, blobs: BlobStore): Promise<number> {
  const rows = sql(db, "SELECT inspection_id, body FROM reports").all() as { inspection_id: string; body: string }[];
  for (const row of rows) {
    await blobs.create(reportBlobKey(row.inspection_id), Buffer.from(row.body), "application/json");
    sql(db, "DELETE FROM reports WHERE inspection_id = ?").run(row.inspection_id);
  }
  return rows.length;
}
