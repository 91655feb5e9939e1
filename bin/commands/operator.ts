import type { Config } from "../../core/config.ts";
import { hostname } from "node:os";
import { NatsLeaderLease } from "../../core/adapters/nats/nats-leader-lease.ts";
import { createLogger } from "../../core/logger.ts";
import { NatsDetectionRunner } from "../../core/adapters/nats/nats-detection-runner.ts";
import type { DetectionRunner } from "../../core/ports/detection-runner.ts";
import { WorkerPoolRunner } from "../../inference/detection/worker-pool-runner.ts";
import { workloadServices } from "../cluster-services.ts";
import { startOperator } from "./workloads.ts";

/**
 * `vehicle-inspection operator`: the controller and webhook delivery, alone. With NATS_URL,
 * detection is a JetStream work queue that `vehicle-inspection inference` processes consume;
 * without, it runs on this process's worker threads.
 */
export async function operator(config: Config): Promise<{ close(): Promise<void>; port: number }> {
  const log = createLogger(config.logLevel).child({ workload: "operator" });
  const s = await workloadServices(config, log, "operator");
  // Replicas wait here while another leads: one controller writes status at a time.
  const lease = s.nats
    ? await NatsLeaderLease.open(s.nats.kvm, { identity: `${hostname()}:${process.pid}`, ttlMs: config.operatorLeaseMs })
    : null;
  if (lease) {
    log.info({ lease_ms: config.operatorLeaseMs }, "waiting to lead");
    await lease.acquire((why) => {
      // As controller-runtime does: a replica that lost its lease stops at once, and its
      // supervisor (Kubernetes, systemd) starts it again as a standby.
      log.fatal({ why }, "lost the operator lease; exiting");
      process.exit(1);
    });
    log.info("leading");
  }
  const runner: DetectionRunner = s.nats
    ? await NatsDetectionRunner.open(s.nats, { log: log.child({ component: "detection" }) })
    : new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
  const loops = startOperator(s, config, log, runner);
  log.info({ nats: config.natsUrl !== null, blobs: config.blobs.kind }, "operator workload started");
  let closing: Promise<void> | undefined;
  return {
    port: 0,
    close: () =>
      (closing ??= (async () => {
        await loops.close();
        await lease?.release();
        await s.close();
        log.info("operator workload stopped");
      })()),
  };
}
