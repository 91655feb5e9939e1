/**
 * `npm run bench:cluster`: the cluster mode on one machine against the embedded mode, in one run.
 * Real servers (nats-server and versitygw, built from the Go module proxy as the tests build them),
 * real photos, the shipped models. Prints inspections completed per minute and p50/p99 from submit to
 * the completed webhook with 1, 2 and 4 inference workers, with the inspections as Inspection
 * resources on a real kube-apiserver (INSPECTION_STORE=kubernetes), and with the embedded mode; then
 * create and GET-by-id throughput of the cluster APIs beside the embedded one. A benchmark: it asserts nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { buildGoServers, startNatsServer, startVersityGw } from "../helpers/go-servers.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { apiAt, freePort, VALID_VIN, withModels } from "../helpers/service.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { create, type Made, photograph } from "../helpers/walkaround.ts";
import { WebhookReceiver } from "../helpers/webhook-receiver.ts";
import { percentile } from "./stats.ts";

const INSPECTIONS = Number(process.env.BENCH_INSPECTIONS ?? 8);
const API_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ANGLES: readonly string[] = REQUIRED_ANGLES;
const DAMAGED_FRONT = readFileSync(join(DATASETS, "car-damage/valid/images/000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg"));
const fill = carPhotos(ANGLES.length);
const photoFor = (angle: string) => (angle === "front" ? DAMAGED_FRONT : fill[ANGLES.indexOf(angle)]!);

type Setup = { url: string; env: Record<string, string>; processes: ServiceProcess[]; cleanup(): Promise<void> };

async function started(env: Record<string, string>, workload: string, message: string): Promise<ServiceProcess> {
  const p = new ServiceProcess(env, workload);
  try {
    await p.line((l) => l.msg === message, 120_000);
  } catch (error) {
    throw new Error(`${workload} did not start: ${(error as Error).message}\n${p.stderr}`);
  }
  return p;
}

async function baseEnv(): Promise<{ env: Record<string, string>; url: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-cluster-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
    CONTROLLER_POLL_MS: "100",
    LOG_LEVEL: "info",
    RATE_LIMIT_TEST_PER_SECOND: "100000",
    ...withModels,
  };
  return { env, url, dataDir };
}

async function embedded(): Promise<Setup> {
  const { env, url, dataDir } = await baseEnv();
  const p = await started(env, "start", "vehicle inspection service started");
  return {
    url,
    env,
    processes: [p],
    cleanup: async () => {
      await p.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The cluster mode; with `kubernetes`, its inspections kept as Inspection resources on a real kube-apiserver. */
async function cluster(workers: number, kubernetes = false): Promise<Setup> {
  const [nats, s3, plane] = await Promise.all([startNatsServer(), startVersityGw(), kubernetes ? startControlPlane() : null]);
  if (plane) {
    await plane.installCrds();
    await plane.kubectl("create", "namespace", "bench");
  }
  const { env: base, url, dataDir } = await baseEnv();
  const env = {
    ...base,
    NATS_URL: nats.url,
    METRICS_PORT: "0",
    ...s3.clientEnv,
    ...(plane ? { KUBECONFIG: plane.kubeconfig, INSPECTION_STORE: "kubernetes", POD_NAMESPACE: "bench" } : {}),
  };
  const processes = await Promise.all([
    started(env, "api", "api workload started"),
    started(env, "operator", "operator workload started"),
    ...Array.from({ length: workers }, () => started(env, "inference", "inference workload started")),
  ]);
  return {
    url,
    env,
    processes,
    cleanup: async () => {
      await Promise.all(processes.map((p) => p.stop()));
      await Promise.all([nats.close(), s3.close(), plane?.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** INSPECTIONS walkarounds captured first, then submitted together: the time from each submit to its completed webhook. */
async function throughput(setup: Setup, receiver: WebhookReceiver, key: string) {
  const captured: Made[] = [];
  for (let i = 0; i < INSPECTIONS; i++) {
    const made = await create(apiAt(setup.url), key, { notify_url: receiver.url });
    await photograph(made, { open: true, photos: photoFor });
    captured.push(made);
  }
  const submittedAt = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    captured.map(async ({ id, base }) => {
      submittedAt.set(id, performance.now());
      await fetch(`${base}/submit`, { method: "POST" });
    }),
  );
  const doneAt = new Map<string, number>();
  while (doneAt.size < captured.length) {
    for (const r of receiver.received) {
      const body = JSON.parse(r.body);
      if (body.type === "inspection.completed" && submittedAt.has(body.data.id) && !doneAt.has(body.data.id))
        doneAt.set(body.data.id, performance.now());
    }
    if (performance.now() - started > 600_000) throw new Error(`only ${doneAt.size} of ${captured.length} completed in 10 minutes`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const latencies = captured.map(({ id }) => doneAt.get(id)! - submittedAt.get(id)!).sort((a, b) => a - b);
  const wallMin = (Math.max(...doneAt.values()) - started) / 60_000;
  return { perMinute: captured.length / wallMin, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function apiLoad(setup: Setup, key: string) {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const one = await (
    await fetch(`${setup.url}/v1/inspections`, { method: "POST", headers, body: JSON.stringify({ vehicle: { vin: VALID_VIN } }) })
  ).json();
  const create = await autocannon({
    url: `${setup.url}/v1/inspections`,
    method: "POST",
    headers,
    body: JSON.stringify({ vehicle: { vin: VALID_VIN } }),
    connections: 20,
    duration: API_SECONDS,
  });
  const get = await autocannon({ url: `${setup.url}/v1/inspections/${one.id}`, headers, connections: 20, duration: API_SECONDS });
  return { createRps: create.requests.average, createP99: create.latency.p99, getRps: get.requests.average, getP99: get.latency.p99 };
}

await buildGoServers();
const receiver = await new WebhookReceiver().start();
const rows: string[] = [];
const apiRows: string[] = [];
for (const [name, make] of [
  ["embedded (one process, 1 detection thread)", embedded],
  ["cluster, 1 inference worker", () => cluster(1)],
  ["cluster, 2 inference workers", () => cluster(2)],
  ["cluster, 4 inference workers", () => cluster(4)],
  ["cluster, Inspection resources as the store, 1 inference worker", () => cluster(1, true)],
] as const) {
  const setup = await make();
  try {
    const key = await createKey(loadConfig(setup.env), "test", "bench");
    const t = await throughput(setup, receiver, key);
    rows.push(`| ${name} | ${t.perMinute.toFixed(1)} | ${(t.p50 / 1000).toFixed(2)} | ${(t.p99 / 1000).toFixed(2)} |`);
    if (name.includes("embedded") || name.includes("1 inference")) {
      const a = await apiLoad(setup, key);
      apiRows.push(
        `| ${name.replace(", 1 inference worker", "").split(" (")[0]} | ${a.createRps.toFixed(0)} | ${a.createP99} | ${a.getRps.toFixed(0)} | ${a.getP99} |`,
      );
    }
  } finally {
    await setup.cleanup();
  }
  console.error(`done: ${name}`);
}
await receiver.close();

console.log(
  `\n${INSPECTIONS} walkarounds of ${ANGLES.length} photos each, submitted together; the shipped models; loopback, one machine\n`,
);
console.log("| mode | inspections completed a minute | p50 submit → webhook, s | p99 submit → webhook, s |");
console.log("|---|---:|---:|---:|");
for (const row of rows) console.log(row);
console.log(`\nAPI throughput, 20 connections, ${API_SECONDS} s a run\n`);
console.log("| mode | create req/s | create p99 ms | GET by id req/s | GET by id p99 ms |");
console.log("|---|---:|---:|---:|---:|");
for (const row of apiRows) console.log(row);
