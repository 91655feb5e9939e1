import type { Config } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { WorkerPoolRunner } from "../../inference/detection/worker-pool-runner.ts";
import { embeddedServices, moveReports } from "../embedded-services.ts";
import { storeAnswers } from "../../core/net/probe-routes.ts";
import { startProbeServer } from "./probe-server.ts";
import { closeOnce } from "./close-once.ts";
import { startHttp, startOperator } from "./workloads.ts";

/** `vehicle-inspection start`: the whole service in one process (embedded mode). */
export async function start(config: Config): Promise<{ close(): Promise<void>; port: number; metricsPort: number }> {
  const log = createLogger(config.logLevel);
  const s = embeddedServices(config, log);
  await moveReports(s, log);
  const runner = new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
  const operator = await startOperator(s, config, log, runner);
  const http = await startHttp(s, config, log);
  const probes = await startProbeServer(config, s.metrics, () => storeAnswers(s), log);
  const started = { port: http.port, metrics_port: probes.port, data_dir: config.dataDir, public_url: config.publicUrl };
  log.info(started, "vehicle inspection service started");

  const close = closeOnce(async () => {
    log.info("vehicle inspection service stopping");
    await http.close();
    await probes.close();
    await operator.close();
    await s.close();
    log.info("vehicle inspection service stopped");
  });
  return { close, port: http.port, metricsPort: probes.port };
}
