/**
 * `npm run bench:kube-connections`: what a request to a real kube-apiserver (TLS, etcd behind it,
 * built from the Go module proxy as the tests build them) costs with client-node 2.0.1 as it is,
 * which makes a new undici pool (so a new TLS connection) for every request, and with the
 * process's own config (`CountedKubeConfig`, bin/commands/kube-config.ts), which keeps one pool.
 * Alternated rounds in one run, each of BENCH_REQUESTS (200) sequential requests: a namespace read
 * and a ConfigMap's replace (a write as a status update is one). Prints per request the wall time,
 * this process's CPU, and the TLS connections opened (undici's `undici:client:connected`
 * diagnostics channel), and the ratio as-is ÷ pooled. A benchmark: it asserts nothing.
 */
import { subscribe } from "node:diagnostics_channel";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";
import { startControlPlane } from "../helpers/kube-control-plane.ts";
import { median } from "./stats.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

let connected = 0;
subscribe("undici:client:connected", () => connected++);

const plane = await startControlPlane();
try {
  const clients = {
    "client-node as is": new KubeConfig(),
    pooled: new CountedKubeConfig(),
  };
  for (const kc of Object.values(clients)) kc.loadFromFile(plane.kubeconfig);
  await clients.pooled
    .makeApiClient(CoreV1Api)
    .createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "bench" }, data: { n: "0" } } });

  const results = Object.fromEntries(
    Object.keys(clients).map((name) => [name, { ms: [] as number[], cpuUs: [] as number[], connections: [] as number[] }]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, kc] of Object.entries(clients)) {
      const api = kc.makeApiClient(CoreV1Api);
      const r = results[name]!;
      const c0 = connected;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < REQUESTS; i++) {
        await api.readNamespace({ name: "default" });
        await api.replaceNamespacedConfigMap({
          name: "bench",
          namespace: "default",
          body: { metadata: { name: "bench" }, data: { n: String(i) } },
        });
      }
      const cpu = process.cpuUsage(cpu0);
      r.ms.push((performance.now() - t0) / (2 * REQUESTS));
      r.cpuUs.push((cpu.user + cpu.system) / (2 * REQUESTS));
      r.connections.push((connected - c0) / (2 * REQUESTS));
    }
  }
  console.log(`${REQUESTS} reads and ${REQUESTS} writes a round, ${ROUNDS} rounds alternated; medians per request`);
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(18)} ${median(r.ms).toFixed(2)} ms  ${median(r.cpuUs).toFixed(0)} µs CPU  ${median(r.connections).toFixed(2)} connections  (rounds: ${r.ms.map((m) => m.toFixed(2)).join(", ")} ms)`,
    );
  }
  const a = results["client-node as is"]!;
  const p = results.pooled!;
  console.log(`as is ÷ pooled: time ${(median(a.ms) / median(p.ms)).toFixed(2)}, CPU ${(median(a.cpuUs) / median(p.cpuUs)).toFixed(2)}`);
} finally {
  await plane.close();
}
