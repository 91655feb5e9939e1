/**
 * `npm run bench:controller-wake`: how soon the controller acts on what another process wrote, with
 * the inspections as Inspection resources on a real kube-apiserver (etcd, built from the Go module
 * proxy as the tests build it), real NATS and versitygw, and the `api`, `operator` and `inference`
 * workloads as separate processes (no in-process nudge can help). In the same run, the same steps
 * with CONTROLLER_WATCH=false (the wake before the watch: the api's intents over the bus, and a list
 * of the store every CONTROLLER_POLL_MS, its default of 500 ms) and with the watch (the default: the
 * store's list-watch wakes the controller, the list only a resync every CONTROLLER_RESYNC_MS).
 *
 * For each of BENCH_INSPECTIONS inspections (20), one at a time: the time from a request to the
 * controller's move, read from the move's own event (its createdAt is the operator's clock at the
 * move; one machine, one clock):
 * - open: GET of the capture API (the `opened` intent) → `inspection.in_progress`, and from the
 *   intent's own time (recorded by the api, in the InspectionRecord) to the move;
 * - submit: POST …/submit → `inspection.processing`, and from the intent's time (the submit's answer
 *   waits for that move, so its own latency is printed too);
 * - kubectl cancel: spec.cancelRequested set on the Inspection by a client of the API server, as
 *   `kubectl patch` would (no api process, no bus message) → `inspection.canceled`.
 * p50 and p95 of each, and the ratio poll ÷ watch. A benchmark: it asserts nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { createKey } from "../../bin/commands/keys.ts";
import { resourceName } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { INSPECTION_RECORD_RESOURCE, INSPECTION_RESOURCE } from "../../core/schemas/inspection-resource.ts";
import { buildGoServers, startNatsServer, startVersityGw } from "../helpers/go-servers.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";
import { apiAt, freePort } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { create, photograph } from "../helpers/walkaround.ts";
import { percentile } from "./stats.ts";

const INSPECTIONS = Number(process.env.BENCH_INSPECTIONS ?? 20);

type Sample = { open: number; openedIntent: number; submit: number; submittedIntent: number; submitAnswer: number; cancel: number };

async function started(env: Record<string, string>, workload: string): Promise<ServiceProcess> {
  const p = new ServiceProcess(env, workload);
  try {
    await p.line((l) => l.msg === `${workload} workload started`, 120_000);
  } catch (error) {
    throw new Error(`${workload} did not start: ${(error as Error).message}\n${p.stderr}`);
  }
  return p;
}

await buildGoServers();
const [nats, s3, plane] = await Promise.all([startNatsServer(), startVersityGw(), startControlPlane()]);
await plane.installCrds();
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfig);
const objects = kc.makeApiClient(CustomObjectsApi);

type Kept = {
  spec: { capture: { openedAt: number | null; submitRequestedAt: number | null } };
  status?: { store?: { events?: { type: string; createdAt: number }[] } };
};

/**
 * When the inspection's `type` event was made (the operator's clock at the move), waiting for it to
 * be there; with the record as it then is (its intents' times, the api's clock).
 */
async function movedAt(namespace: string, id: string, type: string): Promise<{ at: number; kept: Kept }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { group, version, plural } = INSPECTION_RECORD_RESOURCE;
    const kept = (await objects.getNamespacedCustomObject({ group, version, plural, namespace, name: resourceName(id) })) as Kept;
    const event = kept.status?.store?.events?.find((e) => e.type === type);
    if (event) return { at: event.createdAt, kept };
    if (Date.now() > deadline) throw new Error(`${id}: no ${type} within 30 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function run(mode: "poll" | "watch"): Promise<Sample[]> {
  const namespace = `bench-${mode}`;
  await plane.kubectl("create", "namespace", namespace);
  const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-wake-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    METRICS_PORT: "0",
    LOG_LEVEL: "info",
    RATE_LIMIT_TEST_PER_SECOND: "100000",
    DAMAGE_MODEL: "none",
    PARTS_MODEL: "none",
    JUDGE_MODEL: "none",
    NATS_URL: nats.url,
    ...s3.clientEnv,
    AWS_ACCESS_KEY_ID: s3.accessKey,
    AWS_SECRET_ACCESS_KEY: s3.secretKey,
    KUBECONFIG: plane.kubeconfig,
    INSPECTION_STORE: "kubernetes",
    POD_NAMESPACE: namespace,
    // CONTROLLER_POLL_MS and CONTROLLER_RESYNC_MS keep their defaults (500 ms, 10 s).
    CONTROLLER_WATCH: mode === "watch" ? "true" : "false",
  };
  const processes = await Promise.all([started(env, "operator"), started(env, "inference"), started(env, "api")]);
  try {
    await processes[0]!.line((l) => l.msg === "leading", 60_000).catch(() => null);
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey });
    const key = await createKey(loadConfig(env), "test", "bench");
    const api = apiAt(url);
    const samples: Sample[] = [];
    // One unmeasured round first: connections, caches and the JIT warm.
    for (let i = 0; i <= INSPECTIONS; i++) {
      const made = await create(api, key);
      const { base } = made;
      const openAt = Date.now();
      const opened = await fetch(base);
      if (opened.status !== 200) throw new Error(`open answered ${opened.status}`);
      const inProgress = await movedAt(namespace, made.id, "inspection.in_progress");
      const open = inProgress.at - openAt;
      const openedIntent = inProgress.at - inProgress.kept.spec.capture.openedAt!;
      await photograph({ base });
      const submitAt = Date.now();
      const submitted = await fetch(`${base}/submit`, { method: "POST" });
      const submitAnswer = Date.now() - submitAt;
      if (submitted.status !== 202) throw new Error(`submit answered ${submitted.status}: ${await submitted.text()}`);
      const processing = await movedAt(namespace, made.id, "inspection.processing");
      const submit = processing.at - submitAt;
      const submittedIntent = processing.at - processing.kept.spec.capture.submitRequestedAt!;

      // Another inspection, canceled by a client of the API server as kubectl would: the spec's cancelRequested.
      const other = await create(api, key);
      const { group, version, plural } = INSPECTION_RESOURCE;
      const name = resourceName(other.id);
      // Settled first (the operator shows a new Inspection's status), then written, again on a 409.
      await new Promise((r) => setTimeout(r, 300));
      let cancelAt = 0;
      for (let written = false; !written; ) {
        const resource = (await objects.getNamespacedCustomObject({ group, version, plural, namespace, name })) as {
          spec: Record<string, unknown>;
        };
        cancelAt = Date.now();
        written = await objects
          .replaceNamespacedCustomObject({
            group,
            version,
            plural,
            namespace,
            name,
            body: { ...resource, spec: { ...resource.spec, cancelRequested: true } },
          })
          .then(() => true)
          .catch((error: { code?: number }) => {
            if (error.code !== 409) throw error;
            return false;
          });
      }
      const cancel = (await movedAt(namespace, other.id, "inspection.canceled")).at - cancelAt;
      const sample = { open, openedIntent, submit, submittedIntent, submitAnswer, cancel };
      if (i > 0) samples.push(sample);
      if (process.env.BENCH_VERBOSE) console.error(mode, sample);
    }
    if (process.env.BENCH_VERBOSE) {
      for (const p of processes) console.error(p.logs.filter((l) => (l.level as number) >= 40).map((l) => l.msg));
    }
    return samples;
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const results: Record<string, Sample[]> = {};
try {
  for (const mode of ["poll", "watch"] as const) {
    results[mode] = await run(mode);
    console.error(`done: ${mode}`);
  }
} finally {
  await Promise.all([nats.close(), s3.close(), plane.close()]);
}

const stats = (mode: string, field: keyof Sample) => {
  const sorted = results[mode]!.map((s) => s[field]).sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
};
console.log(
  `\n${INSPECTIONS} inspections, one at a time; api, operator and inference as separate processes; Inspection resources on a real kube-apiserver; loopback, one machine`,
);
console.log("CONTROLLER_WATCH=false: intents over the bus + a list every 500 ms; watch: the store's list-watch, resync every 10 s\n");
console.log(
  "| from → the controller's move | poll p50, ms | poll p95, ms | watch p50, ms | watch p95, ms | p50 poll ÷ watch | p95 poll ÷ watch |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const [field, label] of [
  ["open", "capture opened (GET) → in_progress"],
  ["openedIntent", "opened intent recorded → in_progress"],
  ["submit", "capture submit (POST) → processing"],
  ["submittedIntent", "submit intent recorded → processing"],
  ["submitAnswer", "capture submit (POST) → its 202 answer"],
  ["cancel", "spec.cancelRequested written (kubectl's way) → canceled"],
] as const) {
  const poll = stats("poll", field);
  const watch = stats("watch", field);
  console.log(
    `| ${label} | ${poll.p50} | ${poll.p95} | ${watch.p50} | ${watch.p95} | ${(poll.p50 / watch.p50).toFixed(1)} | ${(poll.p95 / watch.p95).toFixed(1)} |`,
  );
}
