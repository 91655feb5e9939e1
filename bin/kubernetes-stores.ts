import type { Logger } from "pino";
import { InspectionRecords } from "../core/adapters/kubernetes/inspection-records.ts";
import { KubernetesEventStore } from "../core/adapters/kubernetes/kubernetes-event-store.ts";
import { KubernetesInspectionStore } from "../core/adapters/kubernetes/kubernetes-inspection-store.ts";
import type { Config } from "../core/runtime/config.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import type { BlobStore } from "../core/ports/blob-store.ts";
import { kubeConfig } from "./commands/kube-config.ts";

/** What a list-watch cache of this process reports when a list or watch fails (it tries again itself). */
const logCacheErrors =
  (log: Logger, resource: string) =>
  (err: unknown, retryInMs: number): void =>
    log.warn({ err, retry_in_ms: retryInMs }, `listing or watching ${resource} failed; again`);

/**
 * INSPECTION_STORE=kubernetes: inspections and their events as the Inspection resources of
 * POD_NAMESPACE, every replica reading them through its own list-watch cache (its staleness on
 * /metrics), and pruned inspections archived to the blob store, from which they are still read.
 * Resolves once the cache holds its first list; until the API server answers, it waits.
 */
export async function kubernetesStores(config: Config, log: Logger, metrics: Metrics, archive: BlobStore) {
  const records = await InspectionRecords.open(kubeConfig(), config.namespace, {
    archive,
    onError: logCacheErrors(log, "Inspection resources"),
  });
  metrics.informerStaleness("inspections", () => records.staleMs() / 1000);
  log.info({ namespace: config.namespace }, "inspections kept as Inspection resources");
  return {
    records,
    inspections: new KubernetesInspectionStore(records),
    events: new KubernetesEventStore(records),
    close: () => records.close(),
  };
}
