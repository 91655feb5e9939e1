import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { createKey } from "../../bin/commands/keys.ts";
import { databaseFile } from "../../core/adapters/sqlite/database.ts";
import { reportBlobKey } from "../../core/domain/blob-keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "../helpers/photos.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { type ServiceProcess, startServiceProcess } from "../helpers/service-process.ts";
import { captureBase, photograph } from "../helpers/walkaround.ts";

/** What only the database knows: the attempts counted against the inspection. */
function stored(dataDir: string, id: string): { status: string; attempts: number; report: boolean } {
  const db = new DatabaseSync(databaseFile(dataDir), { readOnly: true });
  try {
    const row = db.prepare("SELECT status, processing_attempts FROM inspections WHERE id = ?").get(id) as {
      status: string;
      processing_attempts: number;
    };
    const report = existsSync(join(dataDir, "blobs", reportBlobKey(id)));
    return { status: row.status, attempts: row.processing_attempts, report };
  } finally {
    db.close();
  }
}

const INTERRUPTED = "detection interrupted by shutdown; the next start runs it again";
const interruptedBy = (s: ServiceProcess) => s.logs.filter((l) => l.msg === INTERRUPTED).map((l) => l.inspection_id!);

describe("a restart is not a failure", () => {
  const dirs: string[] = [];
  const children: ServiceProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /**
   * The service with the shipped models and one detection thread, on a data directory of its own,
   * and `count` inspections submitted together: one is detected while the others wait for the thread.
   */
  async function submitted(count: number, env: Record<string, string>) {
    const dataDir = mkdtempSync(join(tmpdir(), "vi-stop-"));
    dirs.push(dataDir);
    const port = await freePort();
    const fullEnv = {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "info",
      RATE_LIMIT_TEST_PER_SECOND: "1000",
      RATE_LIMIT_CAPTURE_PER_SECOND: "1000",
      CONTROLLER_POLL_MS: "100",
      DETECTION_THREADS: "1",
      ...env,
    };
    const key = await createKey(loadConfig(fullEnv), "test", "stop");
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
      });
    const startService = async () => {
      const service = await startServiceProcess(fullEnv);
      children.push(service);
      return service;
    };
    // Larger than the dataset's photos, so that detection takes a while.
    const photos = await Promise.all(
      carPhotos(REQUIRED_ANGLES.length).map((p) => sharp(p).resize(1600, 1200, { fit: "fill" }).jpeg({ quality: 90 }).toBuffer()),
    );
    const service = await startService();
    const bases: string[] = [];
    const ids: string[] = [];
    for (let n = 0; n < count; n++) {
      const made = await (await api("/v1/inspections", { method: "POST", body: JSON.stringify({ vehicle: { vin: VALID_VIN } }) })).json();
      const { base } = captureBase(made.capture_url);
      await photograph({ base }, { open: true, photos });
      bases.push(base);
      ids.push(made.id);
    }
    const submits = await Promise.all(bases.map((base) => fetch(`${base}/submit`, { method: "POST" })));
    expect(submits.map((r) => r.status)).toEqual(bases.map(() => 202));
    return { ids, dataDir, api, service, startService };
  }

  it("SIGTERM during processing, three times over, counts no attempt and fails no inspection; the log names what was interrupted and what resumed", async () => {
    // No grace: each stop drops the detection waiting for the thread and stops the one on it at its
    // next batch. The first stop comes at once; each later one once this start has completed one
    // more inspection, so that the restarts make progress.
    const { ids, dataDir, api, service, startService } = await submitted(4, { SHUTDOWN_GRACE_MS: "0" });
    const interruptions = new Map<string, number>();
    let current = service;
    for (let restart = 0; ; restart++) {
      expect(await current.stop()).toBe(0);
      // Every inspection is completed or still processing, with no attempt counted against it.
      const rows = ids.map((id) => stored(dataDir, id));
      for (const row of rows)
        expect(row).toEqual(
          row.status === "completed"
            ? { status: "completed", attempts: 0, report: true }
            : { status: "processing", attempts: 0, report: false },
        );
      const waiting = ids.filter((_, i) => rows[i]!.status === "processing");
      // The log names each inspection the stop interrupted, and those are exactly the ones left processing.
      expect(interruptedBy(current).sort()).toEqual([...waiting].sort());
      for (const id of waiting) interruptions.set(id, (interruptions.get(id) ?? 0) + 1);
      if (waiting.length === 0) break;
      expect(restart).toBeLessThan(ids.length);
      current = await startService();
      // On start, the log names each inspection picked up again, with the attempts counted so far.
      for (const id of waiting)
        expect((await current.line((l) => l.msg === "resuming detection" && l.inspection_id === id, 10_000)).attempts).toBe(0);
      await current.line((l) => l.msg === "inspection moved" && l.to === "completed", 60_000);
    }
    // One inspection was interrupted by three stops and resumed by three starts, and completed all the same.
    expect(Math.max(...interruptions.values())).toBeGreaterThanOrEqual(3);
    const last = await startService();
    for (const id of ids) {
      expect((await (await api(`/v1/inspections/${id}`)).json()).status).toBe("completed");
      expect((await api(`/v1/inspections/${id}/report`)).status).toBe(200);
    }
    const events = (await (await api("/v1/events?limit=100")).json()).data;
    expect(
      events
        .filter((e: any) => e.type === "inspection.completed")
        .map((e: any) => e.data.id)
        .sort(),
    ).toEqual([...ids].sort());
    expect(await last.stop()).toBe(0);
  }, 120_000);

  it("a stop waits for detection that finishes within the grace period: every inspection is completed before the process exits", async () => {
    const { ids, dataDir, service } = await submitted(2, { SHUTDOWN_GRACE_MS: "60000" });
    // Ctrl-C stops the service as SIGTERM does.
    expect(await service.stop("SIGINT")).toBe(0);
    for (const id of ids) expect(stored(dataDir, id)).toEqual({ status: "completed", attempts: 0, report: true });
    expect(service.logs.find((l) => l.msg === "waiting for running detection")?.inspection_ids?.sort()).toEqual([...ids].sort());
    expect(interruptedBy(service)).toEqual([]);
  }, 90_000);
});
