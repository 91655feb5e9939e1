/**
 * `npm run bench:projector`: how fast the Inspection resources catch up with a burst of
 * inspections, against a real kube-apiserver (built from the Go module proxy, as the tests build
 * it). Baseline, in the same run: the two writes each resource costs (create, then its status),
 * made one after another by a bare client, with nothing read. Then the projector, started over a
 * store already holding the same number of inspections, timed until every resource shows its
 * inspection's phase. Prints both, and their ratio. A benchmark: it asserts nothing.
 */
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { newId } from "../../core/domain/ids.ts";
import { INSPECTION_RESOURCE as WHERE } from "../../core/schemas/inspection-resource.ts";
import { systemClock } from "../../core/runtime/time.ts";
import { inspectionCache } from "../../core/adapters/kubernetes/inspection-cache.ts";
import { InspectionProjector } from "../../operator/inspection-projector.ts";
import { desiredStatus, type InspectionResource, inspectionResource } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";

const N = Number(process.env.BENCH_INSPECTIONS ?? 300);

const k = await startControlPlane();
try {
  await k.installCrds();
  await k.kubectl("create", "namespace", "bench-raw");
  await k.kubectl("create", "namespace", "bench-projector");
  const kc = new KubeConfig();
  kc.loadFromFile(k.kubeconfig);
  const api = kc.makeApiClient(CustomObjectsApi);
  const records = Array.from({ length: N }, (_, i) =>
    sampleInspection({
      id: newId("insp"),
      status: i % 2 ? "completed" : "created",
      summary: i % 2 ? { findings: 1, grade: "minor", needs_review: false, new_findings: null } : null,
    }),
  );

  /** The baseline: the same two writes per inspection, back to back; seconds. */
  const bare = async (namespace: string, of: typeof records) => {
    const since = performance.now();
    for (const r of of) {
      const body = inspectionResource(r, namespace);
      const made = (await api.createNamespacedCustomObject({ ...WHERE, namespace, body })) as InspectionResource;
      const status = desiredStatus(r, 1, undefined, Date.now());
      await api.replaceNamespacedCustomObjectStatus({ ...WHERE, namespace, name: made.metadata!.name!, body: { ...made, status } });
    }
    return (performance.now() - since) / 1000;
  };
  // A first pass, not timed: a new API server and client are slower at first.
  await k.kubectl("create", "namespace", "bench-warmup");
  await bare("bench-warmup", records.slice(0, Math.min(100, N)));
  const rawSeconds = await bare("bench-raw", records);

  // The projector over a store holding the same inspections.
  const state = new MemoryState();
  const store = new MemoryInspectionStore(state);
  for (const r of records) await store.create(r, newId("key"), () => ({ id: newId("evt"), type: "inspection.created", data: "{}" }));
  const cache = inspectionCache(kc, "bench-projector", { relistMs: 600_000 });
  const projector = new InspectionProjector({
    store,
    api,
    cache,
    namespace: "bench-projector",
    retentionMs: 86_400_000,
    pollMs: 100,
    clock: systemClock,
    log: pino({ level: "silent" }),
  });
  const since = performance.now();
  projector.start();
  const wanted = new Map(records.map((r) => [r.id.replace("_", "-"), r.status]));
  for (;;) {
    const done = cache.list().filter((res) => res.status?.phase === wanted.get(res.metadata!.name!)).length;
    if (done === N) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const projectorSeconds = (performance.now() - since) / 1000;
  await projector.stop();
  await cache.stop();

  console.log(`Inspection resources for ${N} inspections (a real kube-apiserver on this machine):`);
  console.log(`  bare client, create + status, one after another: ${rawSeconds.toFixed(2)} s (${(N / rawSeconds).toFixed(0)} per s)`);
  console.log(
    `  projector, from start until every resource shows its phase: ${projectorSeconds.toFixed(2)} s (${(N / projectorSeconds).toFixed(0)} per s)`,
  );
  console.log(`  ratio projector / bare: ${(projectorSeconds / rawSeconds).toFixed(2)}`);
} finally {
  await k.close();
}
