import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "../helpers/photos.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { type ServiceProcess, startServiceProcess } from "../helpers/service-process.ts";
import { captureBase, photograph, submit } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

describe("crash and restart", () => {
  const receiver = new WebhookReceiver();
  let child: ServiceProcess | undefined;
  afterAll(async () => {
    child?.kill();
    await receiver.close();
  });

  it("after SIGKILL mid-processing with webhooks pending, a restart finishes every inspection and delivers every event", async () => {
    await receiver.start();
    receiver.respond = () => 503;
    const dataDir = mkdtempSync(join(tmpdir(), "vi-crash-"));
    const port = await freePort();
    // Retries every 4 s, 8 attempts: enough that no event runs out of attempts before the restart,
    // even on a loaded machine, so every event must end up delivered.
    const env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "info",
      WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_SCHEDULE_MS: "4000,4000,4000,4000,4000,4000,4000",
      RATE_LIMIT_TEST_PER_SECOND: "1000",
    };
    const key = await createKey(loadConfig(env), "test", "crash");
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
      });
    // Large photos, so detection is still running when the process is killed.
    const photos = await Promise.all(
      carPhotos(REQUIRED_ANGLES.length).map((p) => sharp(p).resize(2800, 2100, { fit: "fill" }).jpeg({ quality: 95 }).toBuffer()),
    );

    child = await startServiceProcess(env);
    const ids: string[] = [];
    for (let n = 0; n < 2; n++) {
      const inspection = await (
        await api("/v1/inspections", {
          method: "POST",
          body: JSON.stringify({ vehicle: { vin: VALID_VIN }, notify_url: receiver.url, reference: `crash-${n}` }),
        })
      ).json();
      ids.push(inspection.id);
      const capture = captureBase(inspection.capture_url);
      await photograph(capture, { open: true, photos });
      await submit(capture);
    }
    const before = await Promise.all(ids.map(async (id) => (await (await api(`/v1/inspections/${id}`)).json()).status));
    expect(before).toContain("processing");
    child.kill();
    await child.exited;
    expect(receiver.received.every((r) => r.status === 503)).toBe(true);

    receiver.respond = () => 200;
    child = await startServiceProcess(env);
    const finished = await until(
      "all completed",
      () => Promise.all(ids.map(async (id) => (await (await api(`/v1/inspections/${id}`)).json()).status)),
      (s) => s.every((x) => x === "completed"),
      30_000,
    );
    expect(finished).toEqual(["completed", "completed"]);

    const events = (await (await api("/v1/events?limit=100")).json()).data;
    // Four moves each, and each report asks for review (no VIN was confirmed): inspection.review_required.
    expect(events).toHaveLength(10);
    expect(events.filter((e: any) => e.type === "inspection.review_required")).toHaveLength(2);
    const delivered = await until(
      "all delivered",
      async () => (await (await api("/v1/events?limit=100")).json()).data,
      (d: any[]) => d.every((e) => e.delivery.status === "succeeded"),
      30_000,
    );
    for (const e of delivered) {
      expect(receiver.received.some((r) => r.headers["webhook-id"] === e.id && r.status === 200)).toBe(true);
    }
    // One completion per inspection: re-running detection after the crash made no second move.
    expect(
      events
        .filter((e: any) => e.type === "inspection.completed")
        .map((e: any) => e.data.id)
        .sort(),
    ).toEqual([...ids].sort());
    for (const id of ids) expect((await api(`/v1/inspections/${id}/report`)).status).toBe(200);
  }, 120_000);
});
