import { type Config, ConfigError } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
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
  const worker = await startInferenceWorker({ config, log });
  log.info({ worker: worker.name, threads: config.detectionThreads, blobs: config.blobs.kind }, "inference workload started");
  let closing: Promise<void> | undefined;
  return {
    port: 0,
    close: () =>
      (closing ??= (async () => {
        await worker.close();
        log.info("inference workload stopped");
      })()),
  };
}
