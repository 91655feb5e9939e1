import { createHmac, randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { blobStoreFrom } from "../core/adapters/blob-store-from.ts";
import { MemoryRateLimitStore } from "../core/adapters/memory/memory-rate-limit-store.ts";
import { moveLegacyReports } from "../core/adapters/sqlite/legacy-reports.ts";
import { Checkpointer } from "../core/adapters/sqlite/checkpointer.ts";
import { commitGroup, databaseFile, openDatabase, type Database } from "../core/adapters/sqlite/database.ts";
import { SqliteEventStore } from "../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteIdempotencyStore } from "../core/adapters/sqlite/sqlite-idempotency-store.ts";
import { SqliteInspectionStore } from "../core/adapters/sqlite/sqlite-inspection-store.ts";
import { SqliteKeyStore } from "../core/adapters/sqlite/sqlite-key-store.ts";
import { SqliteUserStore } from "../core/adapters/sqlite/sqlite-user-store.ts";
import { CaptureLinks } from "../core/domain/capture-links.ts";
import type { Config } from "../core/runtime/config.ts";
import type { Services } from "../core/runtime/services.ts";
import { Metrics } from "../core/runtime/metrics.ts";
import { Signals } from "../core/runtime/signals.ts";
import { systemClock, type Clock } from "../core/runtime/time.ts";
import { VinDecoder } from "../core/vin/vin-decoder.ts";
import { BlobModelInputStore, modelInputSizes } from "../inference/detection/model-input.ts";
import { UploadCheckPool } from "../inference/quality/upload-check-pool.ts";

/** The secret capture tokens are derived from: made once per data directory, readable by its owner only. */
function captureSecret(dataDir: string): Buffer {
  const path = join(dataDir, "capture-link.key");
  try {
    return readFileSync(path);
  } catch {
    mkdirSync(dataDir, { recursive: true });
    // Written whole under a name of its own and linked into place: of processes starting at once
    // over one data directory, the first link wins and the others read its secret, never a half-written one.
    const staging = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(staging, randomBytes(32), { mode: 0o600, flag: "wx" });
    try {
      linkSync(staging, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      unlinkSync(staging);
    }
    return readFileSync(path);
  }
}

/** What the service signs with, from its one secret: a key derived for each use, so no key signs two kinds of thing. */
export function signingFrom(secret: Buffer, publicUrl: string): Pick<Services, "captureLinks" | "signingKeys"> {
  const derive = (purpose: string) => createHmac("sha256", secret).update(purpose).digest();
  return {
    captureLinks: new CaptureLinks(secret, publicUrl),
    signingKeys: { cookies: derive("dashboard-cookies"), shareLinks: derive("shared-report-links") },
  };
}

/** The secret capture tokens and the other signing keys are derived from, as kept under DATA_DIR. */
export const localSecret = (config: Config): Buffer => captureSecret(config.dataDir);

export type EmbeddedServices = Services & { db: Database; close(): Promise<void> };

/** The embedded adapters: SQLite under DATA_DIR for every store, a directory (or S3_BUCKET) for blobs, in-process signals. */
export function embeddedServices(
  config: Config,
  log: Logger,
  workload = "start",
  clock: Clock = systemClock,
  metrics: Metrics = new Metrics(workload),
): EmbeddedServices {
  const db = openDatabase(config.dataDir);
  const checkpointer = new Checkpointer(db, databaseFile(config.dataDir), {
    onStop: (err) => log.warn({ err }, "the WAL checkpoint thread stopped; SQLite checkpoints on commit again"),
  });
  const vin = new VinDecoder(join(config.dataDir, "vpic"), {
    timeoutMs: config.vinDecodeTimeoutMs,
    onError: (err) => log.warn({ err }, "VIN decoding failed"),
  });
  const { partsModel, judgeModel } = config.models;
  const uploadChecks = partsModel
    ? new UploadCheckPool(
        { partsModel, judgeModel },
        {
          provider: config.models.provider,
          onError: (err) => log.warn({ err }, "the angle check or close-up suggestions could not run; the photo is taken without them"),
        },
      )
    : null;
  const secret = captureSecret(config.dataDir);
  const blobs = blobStoreFrom(config.blobs);
  return {
    config,
    clock,
    log,
    db,
    inspections: new SqliteInspectionStore(db),
    events: new SqliteEventStore(db),
    keys: new SqliteKeyStore(db),
    users: new SqliteUserStore(db),
    idempotency: new SqliteIdempotencyStore(db),
    // Counters need not outlive the process: memory, as @fastify/rate-limit's own store.
    rateLimits: { requests: new MemoryRateLimitStore(), failedAuth: new MemoryRateLimitStore() },
    blobs,
    vin,
    ...signingFrom(secret, config.publicUrl),
    signals: new Signals(clock),
    metrics,
    modelInputs: new BlobModelInputStore(blobs, modelInputSizes(config.models)),
    uploadChecks,
    async close() {
      await vin.close();
      await uploadChecks?.close();
      await checkpointer.close();
      commitGroup(db);
      db.close();
    },
  };
}

/** Reports stored as rows by earlier versions, moved to the blob store before anything reads them. */
export async function moveReports(s: EmbeddedServices, log: Logger): Promise<void> {
  const moved = await moveLegacyReports(s.db, s.blobs);
  if (moved > 0) log.info({ reports: moved }, "reports moved from the database to the blob store");
}
