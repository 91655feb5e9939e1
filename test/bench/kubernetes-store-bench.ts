/**
 * `npm run bench:kubernetes-store`: what the Kubernetes inspection store's reads cost as the
 * namespace fills, against a real kube-apiserver (built from the Go module proxy, as the tests build
 * it). Baseline, in the same run: the SQLite store over the same inspections. For each size, the
 * time a call takes (mean of many) for a list page of 100, the events page of 100, a read by id and
 * the reconcile scan, each beside SQLite's. A benchmark: it asserts nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";
import { InspectionRecords } from "../../core/adapters/kubernetes/inspection-records.ts";
import { KubernetesEventStore } from "../../core/adapters/kubernetes/kubernetes-event-store.ts";
import { KubernetesInspectionStore } from "../../core/adapters/kubernetes/kubernetes-inspection-store.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteEventStore } from "../../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { newId } from "../../core/domain/ids.ts";
import type { EventStore } from "../../core/ports/event-store.ts";
import type { InspectionStore } from "../../core/ports/inspection-store.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";

const SIZES = (process.env.BENCH_SIZES ?? "500,2000").split(",").map(Number);
const scope = { accountId: "acct_a", livemode: false };
const event = () => ({ id: newId("evt"), type: "inspection.created", data: JSON.stringify({ padding: "x".repeat(800) }) });

/** Mean milliseconds a call of `run` takes, over `times` calls after one untimed. */
async function timed(run: () => Promise<unknown>, times = 50): Promise<number> {
  await run();
  const t0 = performance.now();
  for (let i = 0; i < times; i++) await run();
  return (performance.now() - t0) / times;
}

async function fill(store: InspectionStore, n: number): Promise<string[]> {
  const ids: string[] = [];
  // 20 at a time: the API server answers each create once etcd has it.
  for (let i = 0; i < n; i += 20) {
    const batch = Array.from({ length: Math.min(20, n - i) }, (_, j) => sampleInspection({ reference: `ref-${(i + j) % 7}` }));
    await Promise.all(batch.map((r) => store.create(r, newId("insp"), event)));
    ids.push(...batch.map((r) => r.id));
  }
  return ids;
}

async function measure(inspections: InspectionStore, events: EventStore, ids: string[]) {
  const id = ids[Math.floor(ids.length / 2)]!;
  return {
    list: await timed(() => inspections.list(scope, { limit: 100 })),
    filtered: await timed(() => inspections.list(scope, { limit: 100, reference: "ref-3" })),
    events: await timed(() => events.list(scope, 100)),
    get: await timed(async () => inspections.get(scope, id), 500),
    reconcile: await timed(() => inspections.needingReconcile(Date.now(), 200)),
  };
}

const k = await startControlPlane();
const rows: string[] = [];
try {
  await k.installCrds();
  // The processes' own config: one connection pool, as the api and the operator run.
  const kc = new CountedKubeConfig();
  kc.loadFromFile(k.kubeconfig);
  for (const n of SIZES) {
    const namespace = `bench-${n}`;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const records = await InspectionRecords.open(kc, namespace, { archive: new MemoryBlobStore() });
    const kube = new KubernetesInspectionStore(records);
    const t0 = performance.now();
    const ids = await fill(kube, n);
    const fillS = (performance.now() - t0) / 1000;
    const onKube = await measure(kube, new KubernetesEventStore(records), ids);
    const dir = mkdtempSync(join(tmpdir(), "vi-bench-store-"));
    const db = openDatabase(dir);
    const sqlite = new SqliteInspectionStore(db);
    const sqliteIds = await fill(sqlite, n);
    const onSqlite = await measure(sqlite, new SqliteEventStore(db), sqliteIds);
    db.close();
    rmSync(dir, { recursive: true, force: true });
    await records.close();
    const cell = (key: keyof typeof onKube) =>
      `${onKube[key].toFixed(3)} / ${onSqlite[key].toFixed(3)} (×${(onKube[key] / onSqlite[key]).toFixed(1)})`;
    rows.push(
      `| ${n} | ${(n / fillS).toFixed(0)} | ${cell("list")} | ${cell("filtered")} | ${cell("events")} | ${cell("get")} | ${cell("reconcile")} |`,
    );
    console.error(`done: ${n}`);
  }
} finally {
  await k.close();
}
console.log("\nms a call, Kubernetes store / SQLite store (ratio); creates a second into the Kubernetes store, 20 at a time\n");
console.log("| inspections | creates/s | list 100 | list 100, by reference | events 100 | get by id | reconcile scan |");
console.log("|---:|---:|---|---|---|---|---|");
for (const row of rows) console.log(row);
