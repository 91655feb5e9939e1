import type { Config } from "../../core/runtime/config.ts";
import { NatsDetectionRunner } from "../../core/adapters/nats/nats-detection-runner.ts";
import { createLogger } from "../../core/runtime/logger.ts";
import { WorkerPoolRunner } from "../../inference/detection/worker-pool-runner.ts";
import { serviceChecks } from "../../api/routes/probe-routes.ts";
import { moveSqliteInspections } from "./move-sqlite-inspections.ts";
import { closeOnce } from "./close-once.ts";
import { startHttp, startOperator, startUpkeep, servicesBehindProbes } from "./workloads.ts";

/**
 * `vehicle-inspection start`: the whole service in one process (embedded mode). With NATS_URL its
 * accounts, keys and limits live in NATS, as the `api` and `operator` workloads and the CLI keep
 * them; with a Job template (DETECTION_JOB_TEMPLATE) too, detection runs in Kubernetes Jobs' pods,
 * which take it from NATS, instead of on this process's worker threads. With INSPECTION_STORE=kubernetes
 * its inspections are the Inspection resources (the chart's embedded mode), and those its SQLite
 * store held before are moved into them at the first start (move-sqlite-inspections.ts).
 */
export async function start(config: Config): Promise<{ close(): Promise<void>; port: number; metricsPort: number }> {
  const log = createLogger(config.logLevel);
  // Probes first, as the other workloads': while the API server is away, alive and not ready.
  const { s, probes, readiness } = await servicesBehindProbes(config, log, "start");
  await moveSqliteInspections(config, s, log).catch(async (error) => {
    await s.close();
    await probes.close();
    throw error;
  });
  const inJobs = s.nats && config.detectionJobs ? s.nats : null;
  const runner = inJobs
    ? await NatsDetectionRunner.open(inJobs, { log: log.child({ component: "detection" }) })
    : new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
  // The Kubernetes parts are loaded only when asked for (kube-config.ts says why).
  const jobs = inJobs ? await (await import("./detection-jobs.ts")).startDetectionJobs(config, inJobs, log, s.metrics) : null;
  const operator = await startOperator(s, config, log, runner);
  const upkeep = startUpkeep(s, config, log);
  const http = await startHttp(s, config, log);
  readiness.when(serviceChecks(s));
  const started = { port: http.port, metrics_port: probes.port, data_dir: config.dataDir, public_url: config.publicUrl };
  log.info(started, "vehicle inspection service started");

  const close = closeOnce(async () => {
    log.info("vehicle inspection service stopping");
    await http.close();
    await probes.close();
    await jobs?.stop();
    await upkeep?.stop();
    await operator.close();
    await s.close();
    log.info("vehicle inspection service stopped");
  });
  return { close, port: http.port, metricsPort: probes.port };
}
