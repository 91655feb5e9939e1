import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { SqliteEventStore } from "../../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import type { Config } from "../../core/runtime/config.ts";
import { readSharedSecret, type WorkloadServices } from "../cluster-services.ts";
import { localSecret } from "../embedded-services.ts";
import { type Installation, migrate } from "./migration.ts";

/** Written once the SQLite store's inspections are in the resources: later starts leave the file alone. */
export const MOVED_MARKER = "inspections-moved-to-kubernetes.json";

/**
 * Where `start` keeps its inspections as Inspection resources (INSPECTION_STORE=kubernetes) over a
 * DATA_DIR whose SQLite store held them before (an embedded chart release upgraded from the
 * projection of those records), moves them into the resources at its first start, through the same
 * copy `migrate` makes (bin/commands/migration.ts): each inspection with its photos, moves, events
 * and delivery attempts, its capture link still working. Keys, users, blobs and the secret stay
 * where they are (under DATA_DIR, or in NATS and S3 where the release has them). The copies the projector kept are deleted first, so that each
 * inspection is made again with its record and the archive finalizer. A start stopped half-way
 * is finished by the next, which copies only what is missing; the SQLite file is kept, as it was,
 * for a way back. Answers how many inspections were copied.
 */
export async function moveSqliteInspections(config: Config, s: WorkloadServices, log: Logger): Promise<number> {
  if (!s.inspectionRecords) return 0;
  const marker = join(config.dataDir, MOVED_MARKER);
  if (existsSync(marker)) return 0;
  const sqlite = { inspections: new SqliteInspectionStore(s.db), events: new SqliteEventStore(s.db) };
  if ((await sqlite.inspections.changedSince(null, 1)).length > 0) {
    // The secret the capture links were made with: the one the service signs with.
    const secret = (s.nats && (await readSharedSecret(s.nats))) || localSecret(config);
    const shared = { keys: s.keys, users: s.users, blobs: s.blobs, secret: async () => secret, adoptSecret: async () => secret };
    const from: Installation = { ...shared, ...sqlite };
    const to: Installation = { ...shared, inspections: s.inspections, events: s.events };
    log.info({ namespace: config.namespace }, "moving the SQLite store's inspections into the Inspection resources");
    let dropped = 0;
    for (let after: { updatedAt: number; id: string } | null = null; ; ) {
      const page = await sqlite.inspections.changedSince(after, 500);
      for (const r of page) if (await s.inspectionRecords.dropUnrecorded(r.id)) dropped++;
      if (page.length < 500) break;
      after = { updatedAt: page.at(-1)!.updatedAt, id: page.at(-1)!.id };
    }
    const counts = await migrate(from, to, { allowOtherData: true, print: (line) => log.debug(line) });
    log.info(
      { copied: counts.inspections.copied, present: counts.inspections.present, events: counts.events.copied, copies_replaced: dropped },
      "the SQLite store's inspections are in the Inspection resources",
    );
    writeMarker(marker, config, counts.inspections.copied + counts.inspections.present);
    return counts.inspections.copied;
  }
  writeMarker(marker, config, 0);
  return 0;
}

function writeMarker(path: string, config: Config, inspections: number): void {
  const body = { namespace: config.namespace, moved_at: new Date().toISOString(), inspections };
  writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
}
