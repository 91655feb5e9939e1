import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, webhookSecret } from "../../bin/commands/keys.ts";
import { BUS_STREAMS } from "../../core/adapters/nats/nats-bus.ts";
import { connectNats } from "../../core/adapters/nats/nats-connection.ts";
import { DEFAULT_MODELS, loadConfig } from "../../core/runtime/config.ts";
import { METRIC } from "../../core/runtime/metrics.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { WEBHOOK_GROUP } from "../../operator/bus-webhook-dispatcher.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { prometheusRuleMetrics } from "../helpers/chart.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { sample } from "../helpers/prometheus.ts";
import { freePort, VALID_VIN, withModels } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { captureBase, photograph, submit } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/** A shattered windscreen the shipped model finds, so the report has a finding and an evidence photo. */
const DAMAGED_FRONT = join(DATASETS, "car-damage/valid/images/000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg");
const fill = carPhotos(REQUIRED_ANGLES.length);
const photoFor = (angle: string, i: number) => (angle === "front" ? readFileSync(DAMAGED_FRONT) : fill[i]!);
const RETRY_SCHEDULE_MS = [2_000, 2_000, 2_000];

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
      METRICS_PORT: "0",
      ...s3.clientEnv,
      WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
      CONTROLLER_POLL_MS: "100",
      OPERATOR_LEASE_MS: "10000",
      // Short enough to see a failing receiver retried within a test; the timeout sets the bus's ack wait.
      WEBHOOK_RETRY_SCHEDULE_MS: RETRY_SCHEDULE_MS.join(","),
      WEBHOOK_TIMEOUT_MS: "2000",
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

    const capture = captureBase(made.capture_url);
    await photograph(capture, { open: true, photos: photoFor });
    // 202 once the submission is recorded, whether or not a controller has moved it yet.
    await submit(capture);
    const submittedAt = Date.now();
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
    return { id: made.id as string, key, api, deliveries, submittedAt };
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
    expect(readdirSync(join(s3.bucketDir, "photos", id)).length).toBeGreaterThanOrEqual(REQUIRED_ANGLES.length);
    expect(existsSync(join(dataDir, "blobs"))).toBe(false);
    // Detection ran in an inference process, not in the operator.
    const ranDetection = processes.filter((p) => workloadOf.get(p) === "inference" && p.logs.some((l) => l.inspection_id === id));
    expect(ranDetection.length).toBeGreaterThan(0);
    // Every workload serves /metrics on its METRICS_PORT.
    const scrape = async (p: ServiceProcess) => {
      const port = (await p.line((l) => typeof l.metrics_port === "number")).metrics_port;
      return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    };
    const apiMetrics = await scrape(processes.find((p) => workloadOf.get(p) === "api")!);
    expect(sample(apiMetrics, METRIC.httpRequests, { workload: "api", route: "/v1/inspections/:id/report", status_class: "2xx" })).toBe(1);
    const leading = processes.find((p) => workloadOf.get(p) === "operator" && p.logs.some((l) => l.msg === "leading"))!;
    const operatorMetrics = await scrape(leading);
    expect(sample(operatorMetrics, METRIC.inspections, { workload: "operator", phase: "completed" })).toBeGreaterThanOrEqual(1);
    expect(sample(operatorMetrics, `${METRIC.detectionSeconds}_count`, { outcome: "completed" })).toBeGreaterThanOrEqual(1);
    expect(sample(operatorMetrics, METRIC.webhookAttempts, { outcome: "succeeded" })).toBeGreaterThanOrEqual(1);
    expect(sample(operatorMetrics, METRIC.leader)).toBe(1);
    const workers = await Promise.all(processes.filter((p) => workloadOf.get(p) === "inference").map(scrape));
    const ran = workers.map((t) => sample(t, `${METRIC.inferenceSeconds}_count`, { workload: "inference", outcome: "completed" }) ?? 0);
    expect(ran.reduce((a, b) => a + b)).toBeGreaterThanOrEqual(1);
    for (const t of workers) expect(sample(t, METRIC.queueDepth, { queue: "detection" })).toBe(0);
    // An inspection's detection is counted once, by the operator: a sum over the workloads, as a
    // dashboard takes it, is not doubled by the worker that ran it (its run has a metric of its own).
    for (const t of [apiMetrics, ...workers]) expect(sample(t, `${METRIC.detectionSeconds}_count`)).toBeNull();
    // The standby's gauge says it does not lead.
    const standby = processes.find((p) => workloadOf.get(p) === "operator" && p !== leading)!;
    expect(sample(await scrape(standby), METRIC.leader)).toBe(0);
    // Every metric the chart's PrometheusRule alerts on is one these workloads export.
    const exported = [apiMetrics, operatorMetrics, ...workers].join("\n");
    for (const { alert, metrics } of prometheusRuleMetrics()) {
      for (const name of metrics) expect(exported, `${alert}: ${name}`).toMatch(new RegExp(`^# TYPE ${name} `, "m"));
    }
    // The capture intents the api recorded reached the operator over the bus's `intents` topic.
    const nc = await connectNats({ url: nats.url, name: "cluster-test" });
    try {
      const info = await (await nc.js.jetstreamManager()).consumers.info(BUS_STREAMS.topic("intents").stream, "controller");
      expect(info.delivered.stream_seq).toBeGreaterThanOrEqual(2); // opened, submitted
      await until(
        "intents acked",
        async () =>
          (await (await nc.js.jetstreamManager()).consumers.info(BUS_STREAMS.topic("intents").stream, "controller")).num_ack_pending,
        (n) => n === 0,
      );
    } finally {
      await nc.close();
    }
  }, 180_000);

  it("keeps one operator leading; when it is killed, the standby takes over and inspections still complete", async () => {
    const operators = processes.filter((p) => workloadOf.get(p) === "operator");
    expect(operators).toHaveLength(2);
    const leading = operators.filter((p) => p.logs.some((l) => l.msg === "leading"));
    expect(leading).toHaveLength(1);
    leading[0]!.kill();
    const killedAt = Date.now();
    const standby = operators.find((p) => p !== leading[0])!;
    // The customer goes on meanwhile: the submit is answered 202 with or without a leader (issue 30).
    const inspecting = inspect("cluster-2");
    const leads = (await standby.line((l) => l.msg === "leading", 30_000)).time as number;
    leader = standby;
    const { deliveries, submittedAt } = await inspecting;
    console.log(
      `failover: the standby led ${leads - killedAt} ms after the leader was killed; the submit was answered ${submittedAt - killedAt} ms after (${submittedAt < leads ? "before" : "after"} it led)`,
    );
    // Delivered once, by the one operator now leading (receivers dedupe by webhook-id anyway).
    await new Promise((r) => setTimeout(r, 1_000));
    expect(new Set(deliveries().map((d) => d.headers["webhook-id"])).size).toBe(1);
  }, 180_000);

  /** Inspections created through the API (no capture: their `inspection.created` events are what is delivered). */
  async function created(references: string[]) {
    const key = await createKey(loadConfig(env), "test", "cluster-co");
    const api = (path: string, init: RequestInit = {}) =>
      fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });
    const ids: string[] = [];
    for (const reference of references) {
      const body = JSON.stringify({ reference, vehicle: { vin: VALID_VIN }, notify_url: receiver.url });
      const made = await until(
        "the create answered",
        () => api("/v1/inspections", { method: "POST", body }),
        (r) => r.status !== 503,
      );
      expect(made.status).toBe(201);
      ids.push((await made.json()).id);
    }
    // Each inspection's created event as GET /v1/events/:id shows it, with its attempts; read at most
    // every 250 ms, within the test keys' rate limit.
    let eventIds: string[] = [];
    const events = async () => {
      await new Promise((r) => setTimeout(r, 250));
      if (eventIds.length < ids.length) {
        const page = await (await api("/v1/events?limit=100")).json();
        eventIds = page.data.filter((e: { data: { id: string } }) => ids.includes(e.data.id)).map((e: { id: string }) => e.id);
      }
      return Promise.all(eventIds.map(async (id) => (await api(`/v1/events/${id}`)).json()));
    };
    return { ids, events };
  }

  type DeliveredEvent = { id: string; delivery: { status: string; attempts: { number: number; status_code: number | null }[] } };
  const byWebhookId = (id: string) => receiver.received.filter((r) => r.headers["webhook-id"] === id);
  /** The receiver fails the first `times` deliveries of each event whose inspection has one of these references. */
  const failFirst = (times: number, references: string[]) => (_n: number, body: string) => {
    const e = JSON.parse(body);
    return references.includes(e.data.reference) && byWebhookId(e.id).length < times ? 503 : 200;
  };

  it("delivers webhooks over the bus: a failing receiver retried on WEBHOOK_RETRY_SCHEDULE_MS, each attempt recorded", async () => {
    receiver.respond = failFirst(2, ["cluster-retry"]);
    const { events } = await created(["cluster-retry"]);
    const [event] = (await until("delivered", events, (es) => es.length === 1 && es[0].delivery.status === "succeeded", 120_000)) as [
      DeliveredEvent,
    ];
    expect(event.delivery.attempts.map((a) => [a.number, a.status_code])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
    const received = byWebhookId(event.id);
    expect(received.map((r) => r.status)).toEqual([503, 503, 200]);
    // Each retry waited the schedule's wait, less its 10% jitter.
    for (let i = 1; i < received.length; i++) {
      expect(received[i]!.at - received[i - 1]!.at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[i - 1]! * 0.9 - 50);
    }
    // It went over the bus: the dispatch group of the WEBHOOKS stream took it, and acks it (just after
    // recording the attempt that succeeded), leaving nothing unacked.
    const nc = await connectNats({ url: nats.url, name: "cluster-test" });
    try {
      const jsm = await nc.js.jetstreamManager();
      const consumer = () => jsm.consumers.info(BUS_STREAMS.topic("webhooks").stream, WEBHOOK_GROUP);
      const info = await until("the delivery acked", consumer, (c) => c.num_ack_pending === 0);
      expect(info.delivered.stream_seq).toBeGreaterThan(0);
    } finally {
      await nc.close();
    }
    receiver.respond = () => 200;
  }, 180_000);

  it("hands the deliveries pending on a SIGKILLed operator to the standby, which delivers each attempt once", async () => {
    const standby = await started("operator", "waiting to lead");
    const references = ["cluster-kill-1", "cluster-kill-2", "cluster-kill-3"];
    receiver.respond = failFirst(2, references);
    const { events } = await created(references);
    // Every event tried once by the leader and waiting for its retry (none retried yet): then the leader dies.
    const waiting = (await until(
      "the first attempts",
      events,
      (es) => es.length === 3 && es.every((e) => e.delivery.attempts.length >= 1),
    )) as DeliveredEvent[];
    expect(waiting.every((e) => e.delivery.attempts.length === 1 && e.delivery.status === "pending")).toBe(true);
    leader!.kill();
    const killedAt = Date.now();
    await standby.line((l) => l.msg === "leading", 30_000);
    leader = standby;
    const done = (await until(
      "delivered by the standby",
      events,
      (es) => es.every((e) => e.delivery.status === "succeeded"),
      90_000,
    )) as DeliveredEvent[];
    for (const event of done) {
      expect(event.delivery.attempts.map((a) => a.status_code)).toEqual([503, 503, 200]);
      // Each attempt reached the receiver once, with the event's id as webhook-id; the retries came from the standby.
      const received = byWebhookId(event.id);
      expect(received.map((r) => r.status)).toEqual([503, 503, 200]);
      expect(received.slice(1).every((r) => r.at > killedAt)).toBe(true);
      expect(standby.logs.some((l) => l.msg === "webhook delivery failed; will retry" && l.event_id === event.id)).toBe(true);
    }
    receiver.respond = () => 200;
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
