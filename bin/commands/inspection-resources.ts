import { CustomObjectsApi } from "@kubernetes/client-node";
import { kubeConfig, logCacheErrors } from "./kube-config.ts";
import type { Logger } from "pino";
import type { Config } from "../../core/runtime/config.ts";
import type { Metrics } from "../../core/runtime/metrics.ts";
import type { InspectionStore } from "../../core/ports/inspection-store.ts";
import type { Clock } from "../../core/runtime/time.ts";
import { InspectionProjector } from "../../operator/inspection-projector.ts";
import { inspectionCache } from "../../core/adapters/kubernetes/inspection-cache.ts";

/**
 * The Inspection resources (INSPECTION_RESOURCES), kept by the leading `operator` or by `start`: the
 * namespace's Inspections listed and watched (its staleness on /metrics), and the projector over
 * them. The API server is found by kubeConfig().
 */
export function startInspectionResources(
  config: Config,
  s: { inspections: InspectionStore; clock: Clock; metrics: Metrics },
  log: Logger,
): { stop(): Promise<void> } {
  const kc = kubeConfig();
  const cache = inspectionCache(kc, config.namespace, { onError: logCacheErrors(log, "Inspection resources") });
  // Not awaited: the service starts while the API server is away (or the CRD not installed yet); the
  // projector waits for the first list, and the failures are logged as they happen.
  void cache.start();
  s.metrics.informerStaleness("inspections", () => cache.staleMs() / 1000);
  const projector = new InspectionProjector({
    store: s.inspections,
    api: kc.makeApiClient(CustomObjectsApi),
    cache,
    namespace: config.namespace,
    retentionMs: config.resourceRetentionMs,
    pollMs: Math.max(config.controllerPollMs, 250),
    clock: s.clock,
    log: log.child({ component: "inspection-resources" }),
    metrics: s.metrics,
  });
  projector.start();
  log.info({ namespace: config.namespace }, "keeping Inspection resources");
  return {
    async stop() {
      await projector.stop();
      await cache.stop();
    },
  };
}
