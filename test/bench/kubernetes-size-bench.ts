/**
 * `npx node --expose-gc test/bench/kubernetes-size-bench.ts`: how big cluster mode's store is in the
 * cluster, against a real kube-apiserver and etcd (built from the Go module proxy, as the tests build
 * them), for the sizing table of docs/cluster-and-kubernetes.md (issue 31). It prints:
 * - the bytes of one inspection's two objects (Inspection and InspectionRecord, as etcd holds them:
 *   JSON with managedFields) for a typical walkaround and for a long history (every close-up, a
 *   photo retaken, 40 pieces of evidence, two reviews, every event resent 60 times);
 * - the objects etcd holds per inspection (apiserver_storage_objects);
 * - for BENCH_INSPECTIONS (10,000) typical inspections: the memory a replica's list-watch caches take
 *   (a process that opens InspectionRecords and builds its views and indexes, as the api and
 *   operator do), against the same process over an empty namespace, in the same run; the API
 *   server's resident memory and etcd's database before and after.
 * A benchmark: it asserts nothing.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { inspectionCache } from "../../core/adapters/kubernetes/inspection-cache.ts";
import { InspectionRecords } from "../../core/adapters/kubernetes/inspection-records.ts";
import { KubernetesEventStore } from "../../core/adapters/kubernetes/kubernetes-event-store.ts";
import { KubernetesInspectionStore } from "../../core/adapters/kubernetes/kubernetes-inspection-store.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { newId } from "../../core/domain/ids.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord } from "../../core/ports/records.ts";
import { INSPECTION_RECORD_RESOURCE, INSPECTION_RESOURCE } from "../../core/schemas/inspection-resource.ts";
import { eventPayload } from "../../core/views/inspection-view.ts";
import { EXTERIOR_ANGLES } from "../../core/domain/capture-plan.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";

const N = Number(process.env.BENCH_INSPECTIONS ?? 10_000);
const ANGLES = [...EXTERIOR_ANGLES, "vin", "odometer"];
const MB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** The child's part: open the namespace's caches as a replica does, build what it derives, and report memory. */
if (process.argv[2] === "--hold") {
  const [, , , kubeconfig, namespace, mode] = process.argv;
  const gc = () => (globalThis as { gc?: () => void }).gc?.();
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig!);
  let held: number;
  let close: () => Promise<unknown>;
  if (mode === "raw") {
    // The baseline: both kinds held as the API server sends them (managedFields kept), nothing derived.
    const keep = { transform: <T>(o: T) => o };
    const caches = [inspectionCache(kc, namespace!, keep), inspectionCache(kc, namespace!, keep, INSPECTION_RECORD_RESOURCE)];
    await Promise.all(caches.map((c) => c.start()));
    held = caches[1]!.list().length;
    close = () => Promise.all(caches.map((c) => c.stop()));
  } else {
    const records = await InspectionRecords.open(kc, namespace!, { archive: new MemoryBlobStore() });
    // What a replica builds from the caches: the views, the list's order, the events' order, the indexes.
    held = records.all().length;
    records.newestFirst();
    records.eventsInOrder();
    records.byTokenHash("none");
    close = () => records.close();
  }
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
  const m = process.memoryUsage();
  process.stdout.write(JSON.stringify({ held, rss: m.rss, heapUsed: m.heapUsed }));
  await close();
  process.exit(0);
}

const photo = (inspectionId: string, angle: string, slot: number | null, at: number): [PhotoRecord, MediaRecord] => {
  const mediaId = newId("med");
  const quality = { brightness: 0.52, sharpness: 143.7, glare: 0.01, passed: true, problems: [] };
  return [
    {
      inspectionId,
      angle,
      slot,
      part: slot === null ? null : "front_bumper",
      mediaId,
      width: 1600,
      height: 1200,
      quality,
      tries: 1,
      capturedAt: at,
    },
    media(inspectionId, mediaId, "photo", at),
  ];
};
const media = (inspectionId: string, id: string, kind: "photo" | "evidence", at: number): MediaRecord => ({
  id,
  accountId: "acct_a",
  livemode: false,
  inspectionId,
  kind,
  blobKey: `${kind === "photo" ? "photos" : "evidence"}/${inspectionId}/${id}.jpg`,
  bytes: 412_345,
  etag: '"9b2cf535f27731c974343645a3985328"',
  width: 1600,
  height: 1200,
  createdAt: at,
});

/** An inspection taken through a walkaround to completed by the store, as the api and controller write it. */
async function walkaround(
  store: KubernetesInspectionStore,
  events: KubernetesEventStore,
  o: { closeups: number; retakes: number; evidence: number; reviews: number; resends: number },
): Promise<InspectionRecord> {
  const r = sampleInspection({ reference: "order-2026-11-27-000123", notifyUrl: "https://hooks.example.com/inspections" });
  const made = (type: string) => (after: InspectionRecord) => {
    const id = newId("evt");
    return { id, type, data: eventPayload(id, type, after, "https://inspect.example.com") };
  };
  let at = Date.now();
  await store.create(r, randomUUID(), made("inspection.created"));
  await store.transition(r.id, "created", "in_progress", ++at, {}, made("inspection.in_progress"));
  for (const angle of ANGLES) await store.putPhoto(...photo(r.id, angle, null, ++at));
  for (let i = 0; i < o.retakes; i++) await store.putPhoto(...photo(r.id, ANGLES[i]!, null, ++at));
  for (let slot = 1; slot <= o.closeups; slot++) await store.putPhoto(...photo(r.id, "closeup", slot, ++at));
  await store.transition(r.id, "in_progress", "processing", ++at, { submittedAt: at }, made("inspection.processing"));
  for (let i = 0; i < o.evidence; i++) await store.putMedia(media(r.id, newId("med"), "evidence", ++at));
  const summary = { findings: o.evidence, grade: "moderate" as const, needs_review: o.reviews > 0, new_findings: null };
  await store.transition(r.id, "processing", "completed", ++at, { completedAt: at, summary }, made("inspection.completed"));
  for (let i = 0; i < o.reviews; i++) {
    const review = {
      by: "reviewer@example.com",
      at: ++at,
      note: "checked the rear bumper",
      decisions: [],
      added: [],
      summary: { ...summary, needs_review: false as const },
    };
    await store.recordReview(r.id, review, made("inspection.reviewed"));
  }
  // Every event delivered; with resends, each resent and failed that many times more.
  const scope = { accountId: r.accountId, livemode: r.livemode };
  for (const e of await events.forInspection(scope, r.id)) {
    for (let n = 1; n <= 1 + o.resends; n++) {
      if (n > 1) await events.resend(scope, e.id, ++at);
      const last = n === 1 + o.resends;
      await events.recordAttempt(
        { eventId: e.id, n, attemptedAt: ++at, statusCode: last ? 200 : 503, latencyMs: 87, error: last ? null : "HTTP 503" },
        last ? { status: "succeeded" } : { nextAttemptAt: at + 60_000 },
      );
    }
  }
  return r;
}

const k = await startControlPlane();
try {
  await k.installCrds();
  const kc = new KubeConfig();
  kc.loadFromFile(k.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const api = kc.makeApiClient(CustomObjectsApi);
  for (const namespace of ["sizes", "fleet", "empty"]) await core.createNamespace({ body: { metadata: { name: namespace } } });

  // One inspection's objects, as etcd holds them (managedFields included).
  const records = await InspectionRecords.open(kc, "sizes", { archive: new MemoryBlobStore() });
  const store = new KubernetesInspectionStore(records);
  const events = new KubernetesEventStore(records);
  const bytes = async (kind: string, r: InspectionRecord, ...flags: string[]) =>
    (await k.kubectl("get", kind, r.id.replace("_", "-"), "-n", "sizes", "-o", "json", ...flags)).length;
  const typical = await walkaround(store, events, { closeups: 0, retakes: 0, evidence: 3, reviews: 0, resends: 0 });
  const long = await walkaround(store, events, { closeups: 8, retakes: 3, evidence: 40, reviews: 2, resends: 60 });
  const sizes = [];
  for (const [what, r] of [
    ["typical", typical],
    ["long history", long],
  ] as const)
    sizes.push({
      what,
      inspection: await bytes("inspection", r, "--show-managed-fields"),
      record: await bytes("inspectionrecord", r, "--show-managed-fields"),
      bare: (await bytes("inspection", r)) + (await bytes("inspectionrecord", r)),
    });
  await records.close();
  for (const s of sizes)
    console.log(
      `${s.what}: Inspection ${s.inspection} B, InspectionRecord ${s.record} B, together ${s.inspection + s.record} B as etcd holds them (${s.bare} B without managedFields)`,
    );

  // BENCH_INSPECTIONS copies of the typical one, each its own name, written as the store writes them.
  const metric = (text: string, name: string, label = "") =>
    text
      .split("\n")
      .filter((l) => l.startsWith(name) && l.includes(label))
      .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
  const apiserverMetrics = () => k.kubectl("get", "--raw", "/metrics");
  const etcdMetrics = async () => (await fetch(`${k.etcdUrl}/metrics`)).text();
  const before = { api: await apiserverMetrics(), etcd: await etcdMetrics() };
  const template = {
    inspection: JSON.parse(await k.kubectl("get", "inspection", typical.id.replace("_", "-"), "-n", "sizes", "-o", "json")),
    record: JSON.parse(await k.kubectl("get", "inspectionrecord", typical.id.replace("_", "-"), "-n", "sizes", "-o", "json")),
  };
  const where = (r: typeof INSPECTION_RESOURCE | typeof INSPECTION_RECORD_RESOURCE) => ({
    group: r.group,
    version: r.version,
    plural: r.plural,
    namespace: "fleet",
  });
  const copy = (o: { metadata: Record<string, unknown> }, name: string) => {
    const { uid: _u, resourceVersion: _r, creationTimestamp: _c, generation: _g, managedFields: _m, ...metadata } = o.metadata;
    return { ...o, metadata: { ...metadata, name, namespace: "fleet" } };
  };
  const t0 = performance.now();
  const write = async (i: number) => {
    const name = `${typical.id.replace("_", "-")}-${i}`;
    const inspection = (await api.createNamespacedCustomObject({
      ...where(INSPECTION_RESOURCE),
      body: copy(template.inspection, name),
    })) as Record<string, unknown>;
    await api.replaceNamespacedCustomObjectStatus({
      ...where(INSPECTION_RESOURCE),
      name,
      body: { ...inspection, status: template.inspection.status },
    });
    const record = (await api.createNamespacedCustomObject({
      ...where(INSPECTION_RECORD_RESOURCE),
      body: copy(template.record, name),
    })) as Record<string, unknown>;
    await api.replaceNamespacedCustomObjectStatus({
      ...where(INSPECTION_RECORD_RESOURCE),
      name,
      body: { ...record, status: template.record.status },
    });
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) await write(next++);
    }),
  );
  const fillS = (performance.now() - t0) / 1000;
  // Let the API server's watch cache and etcd settle before reading them.
  await new Promise((r) => setTimeout(r, 5000));
  const after = { api: await apiserverMetrics(), etcd: await etcdMetrics() };

  const hold = async (namespace: string, mode = "records") => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--expose-gc", import.meta.filename, "--hold", k.kubeconfig, namespace, mode],
      { maxBuffer: 1 << 20 },
    );
    return JSON.parse(stdout) as { held: number; rss: number; heapUsed: number };
  };
  const empty = await hold("empty");
  const fleet = await hold("fleet");
  const raw = await hold("fleet", "raw");

  console.log(`\n${N} typical inspections written in ${fillS.toFixed(0)} s (4 writes each, 16 at a time)`);
  const keys = (text: string) => metric(text, "etcd_debugging_mvcc_keys_total");
  console.log(
    `etcd keys: +${keys(after.etcd) - keys(before.etcd)} for ${N} inspections, ${((keys(after.etcd) - keys(before.etcd)) / N).toFixed(2)} each`,
  );
  console.log(
    `a replica's caches (heap after GC): ${MB(fleet.heapUsed)} MB holding ${fleet.held} against ${MB(empty.heapUsed)} MB holding ${empty.held}: +${MB(fleet.heapUsed - empty.heapUsed)} MB (×${(fleet.heapUsed / empty.heapUsed).toFixed(1)}); RSS ${MB(fleet.rss)} MB against ${MB(empty.rss)} MB: +${MB(fleet.rss - empty.rss)} MB`,
  );
  console.log(
    `  the same objects held as the API server sends them (managedFields kept, no views): +${MB(raw.heapUsed - empty.heapUsed)} MB heap, +${MB(raw.rss - empty.rss)} MB RSS; the replica's (stripped, with views and indexes): ${((fleet.heapUsed - empty.heapUsed) / (raw.heapUsed - empty.heapUsed)).toFixed(2)}× that heap`,
  );
  const rss = (text: string) => metric(text, "process_resident_memory_bytes");
  console.log(
    `kube-apiserver RSS: ${MB(rss(before.api))} MB before, ${MB(rss(after.api))} MB after: +${MB(rss(after.api) - rss(before.api))} MB`,
  );
  const db = (text: string) => metric(text, "etcd_mvcc_db_total_size_in_use_in_bytes");
  console.log(
    `etcd database in use: ${MB(db(before.etcd))} MB before, ${MB(db(after.etcd))} MB after: +${MB(db(after.etcd) - db(before.etcd))} MB`,
  );
  console.log(
    `etcd RSS: ${MB(rss(before.etcd))} MB before, ${MB(rss(after.etcd))} MB after: +${MB(rss(after.etcd) - rss(before.etcd))} MB`,
  );
} finally {
  await k.close();
}
