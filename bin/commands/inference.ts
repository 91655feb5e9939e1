import { type Config, ConfigError } from "../../core/runtime/config.ts";
import { createLogger } from "../../core/runtime/logger.ts";
import { Metrics } from "../../core/runtime/metrics.ts";
import { Readiness, startProbeServer } from "./probe-server.ts";
import { closeOnce } from "./close-once.ts";
import { blobStoreFrom } from "../../core/adapters/blob-store-from.ts";
import { blobsAnswer, cached, natsCheck } from "../../api/routes/probe-routes.ts";
import { startInferenceWorker } from "../../inference/worker/inference-worker.ts";

/**
 * `vehicle-inspection inference`: a detection worker of the cluster mode. It takes detection jobs
 * from the NATS JetStream work queue the operator fills, as many at a time as DETECTION_THREADS,
 * reading photos from and writing evidence to the configured blob store (S3 in a cluster). Run as
 * many as there are machines for it: the jobs spread over them.
 */
export async function inference(config: Config): Promise<{ close(): Promise<void>; port: number }> {
  if (!config.natsUrl) {
    throw new ConfigError("inference takes its jobs from NATS: set NATS_URL (and S3_BUCKET where workers run on other machines)");
  }
  const log = createLogger(config.logLevel).child({ workload: "inference" });
  const metrics = new Metrics("inference");
  // Probes first: alive, and not ready until it takes jobs (NATS may not be up yet).
  const readiness = new Readiness();
  const probes = await startProbeServer(config, metrics, () => readiness.check(), log);
  const worker = await startInferenceWorker({ config, log, metrics }).catch(async (error) => {
    await probes.close();
    throw error;
  });
  // Ready while it can take jobs (NATS) and read photos and write evidence (S3, where blobs are there).
  const blobs = blobStoreFrom(config.blobs);
  readiness.when([natsCheck(worker.nats), ...(config.blobs.kind === "s3" ? [cached("s3", () => blobsAnswer({ blobs }))] : [])]);
  const started = { worker: worker.name, threads: config.detectionThreads, blobs: config.blobs.kind, metrics_port: probes.port };
  log.info(started, "inference workload started");
  const close = closeOnce(async () => {
    await probes.close();
    await worker.close();
    log.info("inference workload stopped");
  });
  // A Job's pod (the work-queue pattern): done once the queue has stayed empty, and its Job completes.
  void worker.idle.then(async () => {
    log.info({ idle_ms: config.inferenceExitWhenIdleMs }, "no detection job for a while; leaving");
    await close();
    process.exit(0);
  });
  return { port: probes.port, close };
}
