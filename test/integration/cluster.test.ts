import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, webhookSecret } from "../../bin/commands/keys.ts";
import { DEFAULT_MODELS, loadConfig } from "../../core/config.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { freePort, VALID_VIN, withModels } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/** A shattered windscreen the shipped model finds, so the report has a finding and an evidence photo. */
const DAMAGED_FRONT = join(DATASETS, "car-damage/valid/images/000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg");
const ANGLES = [...EXTERIOR_ANGLES, "vin"];
const fill = carPhotos(ANGLES.length);
const photoFor = (angle: string) => (angle === "front" ? readFileSync(DAMAGED_FRONT) : fill[ANGLES.indexOf(angle)]!);

/**
 * The cluster mode on one machine, as an operator would run it: a real nats-server and a real S3
 * server (both built from the Go module proxy), and the workloads as processes of their own: `api`,
 * `operator` and two `inference` workers. An inspection goes from creation to its signed webhook.
 */
describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("cluster mode: api, operator and two inference workers over NATS and S3", () => {
  let nats: NatsServer;
  let s3: VersityGw;
  let dataDir: string;
  let env: Record<string, string>;
  let url: string;
  const processes: ServiceProcess[] = [];
  const workloadOf = new Map<ServiceProcess, string>();
  let receiver: WebhookReceiver;
  /** The operator leading after the takeover test. */
  let leader: ServiceProcess | undefined;

  const started = async (workload: string, message: string) => {
    const p = new ServiceProcess(env, workload);
    processes.push(p);
    workloadOf.set(p, workload);
    await p.line((l) => l.msg === message, 60_000);
    return p;
  };

  beforeAll(async () => {
    [nats, s3, receiver] = await Promise.all([startNatsServer(), startVersityGw(), new WebhookReceiver().start()]);
    dataDir = mkdtempSync(join(tmpdir(), "vi-cluster-"));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: url,
      NATS_URL: nats.url,
      ...s3.clientEnv,
      WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
      CONTROLLER_POLL_MS: "100",
      OPERATOR_LEASE_MS: "5000",
      LOG_LEVEL: "info",
      ...withModels,
    };
    await Promise.all([
      started("api", "api workload started"),
      started("operator", "operator workload started"),
      started("inference", "inference workload started"),
      started("inference", "inference workload started"),
    ]);
    // A second operator replica, standing by while the first leads.
    await started("operator", "waiting to lead");
  }, 180_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all([nats?.close(), s3?.close(), receiver?.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Creates an inspection, takes its capture through with real photos, and waits for its signed completed webhook. */
  async function inspect(reference: string) {
    const config = loadConfig(env);
    const key = await createKey(config, "test", "cluster-co");
    const secret = await webhookSecret(config, "test", "cluster-co");
    const api = (path: string, init: RequestInit = {}) =>
      fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });
    // Idempotency keys live in NATS KV here: a retried create answers the first response.
    const body = JSON.stringify({ reference, vehicle: { vin: VALID_VIN }, notify_url: receiver.url });
    // As a client does with a 503 (NATS reconnecting, say): the same request again, with its key.
    const create = () => api("/v1/inspections", { method: "POST", body, headers: { "idempotency-key": `create-${reference}` } });
    const first = await until("the create answered", create, (r) => r.status !== 503, 30_000);
    expect(first.status).toBe(201);
    const made = await first.json();
    const again = await api("/v1/inspections", { method: "POST", body, headers: { "idempotency-key": `create-${reference}` } });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await again.json()).id).toBe(made.id);

    const base = made.capture_url.replace("/c/", "/capture/v1/");
    expect((await fetch(base)).status).toBe(200);
    for (const angle of ANGLES) {
      const put = await fetch(`${base}/photos/${angle}`, {
        method: "PUT",
        body: photoFor(angle),
        headers: { "content-type": "image/jpeg" },
      });
      expect(put.status, angle).toBe(200);
    }
    expect((await fetch(`${base}/submit`, { method: "POST" })).status).toBe(202);
    const deliveries = () =>
      receiver.received.filter((r) => JSON.parse(r.body).type === "inspection.completed" && JSON.parse(r.body).data.id === made.id);
    await until("the inspection.completed webhook", deliveries, (d) => d.length > 0, 120_000);
    const completed = deliveries()[0]!;
    const verified = new Webhook(secret).verify(completed.body, {
      "webhook-id": completed.headers["webhook-id"] as string,
      "webhook-timestamp": completed.headers["webhook-timestamp"] as string,
      "webhook-signature": completed.headers["webhook-signature"] as string,
    }) as { data: { summary: { findings: number } } };
    expect(verified.data.summary.findings).toBeGreaterThan(0);
    return { id: made.id as string, key, api, deliveries };
  }

  it("takes an inspection from creation to a signed webhook, its detection done by an inference worker", async () => {
    const { id, key, api } = await inspect("cluster-1");
    const report = await (await api(`/v1/inspections/${id}/report`)).json();
    expect(report.findings.length).toBeGreaterThan(0);
    const evidence = report.findings.find((f: { evidence_url: string | null }) => f.evidence_url)!.evidence_url as string;
    const photo = await fetch(evidence, { headers: { authorization: `Bearer ${key}` } });
    expect(photo.status).toBe(200);
    expect(photo.headers.get("content-type")).toBe("image/jpeg");
    // Photos and evidence are objects in the bucket; nothing went under DATA_DIR/blobs.
    expect(readdirSync(join(s3.bucketDir, "photos", id)).length).toBeGreaterThanOrEqual(ANGLES.length);
    expect(existsSync(join(dataDir, "blobs"))).toBe(false);
    // Detection ran in an inference process, not in the operator.
    const ranDetection = processes.filter((p) => workloadOf.get(p) === "inference" && p.logs.some((l) => l.inspection_id === id));
    expect(ranDetection.length).toBeGreaterThan(0);
  }, 180_000);

  it("keeps one operator leading; when it is killed, the standby takes over and inspections still complete", async () => {
    const operators = processes.filter((p) => workloadOf.get(p) === "operator");
    expect(operators).toHaveLength(2);
    const leading = operators.filter((p) => p.logs.some((l) => l.msg === "leading"));
    expect(leading).toHaveLength(1);
    leading[0]!.kill();
    const standby = operators.find((p) => p !== leading[0])!;
    await standby.line((l) => l.msg === "leading", 30_000);
    leader = standby;
    const { deliveries } = await inspect("cluster-2");
    // Delivered once, by the one operator now leading (receivers dedupe by webhook-id anyway).
    await new Promise((r) => setTimeout(r, 1_000));
    expect(new Set(deliveries().map((d) => d.headers["webhook-id"])).size).toBe(1);
  }, 180_000);

  it("rides out a NATS restart: the workloads reconnect and the next inspection completes", async () => {
    await nats.stop();
    await nats.start();
    const { deliveries } = await inspect("cluster-3");
    await new Promise((r) => setTimeout(r, 1_000));
    expect(deliveries()).toHaveLength(1);
    // The leading operator kept its lease through the restart: it is still running, and said nothing of losing it.
    const state = await Promise.race([leader!.exited.then(() => "exited"), new Promise((r) => setTimeout(() => r("running"), 100))]);
    expect(state).toBe("running");
    expect(leader!.logs.some((l) => l.msg === "lost the operator lease; exiting")).toBe(false);
  }, 240_000);
});
