import { hostname } from "node:os";
import type { Logger } from "pino";
import type { Nats } from "../../core/adapters/nats/nats-connection.ts";
import type { LeaderLease } from "../../core/ports/leader-lease.ts";
import type { Config } from "../../core/runtime/config.ts";
import { NatsLeaderLease } from "../../core/adapters/nats/nats-leader-lease.ts";
import { createLogger } from "../../core/runtime/logger.ts";
import { NatsBus } from "../../core/adapters/nats/nats-bus.ts";
import { NatsDetectionRunner } from "../../core/adapters/nats/nats-detection-runner.ts";
import type { DetectionRunner } from "../../core/ports/detection-runner.ts";
import { WorkerPoolRunner } from "../../inference/detection/worker-pool-runner.ts";
import { serviceChecks } from "../../api/routes/probe-routes.ts";
import { closeOnce } from "./close-once.ts";
import { startOperator, startUpkeep, servicesBehindProbes } from "./workloads.ts";

/**
 * `vehicle-inspection operator`: the controller and webhook delivery, alone. With NATS_URL,
 * detection is a JetStream work queue that `vehicle-inspection inference` processes consume, and
 * webhooks go from the outbox over the bus's `webhooks` topic; without, detection runs on this
 * process's worker threads and webhooks are delivered from the outbox as `start` delivers them.
 */
export async function operator(config: Config): Promise<{ close(): Promise<void>; port: number }> {
  const log = createLogger(config.logLevel).child({ workload: "operator" });
  // Probes first, before the stores' servers answer and before the lease: a standby answers its
  // probes too. Ready while the store, S3 and NATS answer.
  const { s, probes, readiness, metrics } = await servicesBehindProbes(config, log, "operator");
  readiness.when(serviceChecks(s));
  // Replicas wait here while another leads: one controller writes status at a time.
  const lease = await operatorLease(config, s.nats, log);
  if (lease) {
    metrics.leader.set(0);
    log.info({ lease_ms: config.operatorLeaseMs }, "waiting to lead");
    await lease.acquire((why) => {
      // As controller-runtime does: a replica that lost its lease stops at once, and its
      // supervisor (Kubernetes, systemd) starts it again as a standby.
      log.fatal({ why }, "lost the operator lease; exiting");
      process.exit(1);
    });
    log.info("leading");
  }
  metrics.leader.set(1);
  const runner: DetectionRunner = s.nats
    ? await NatsDetectionRunner.open(s.nats, { log: log.child({ component: "detection" }) })
    : new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
  const bus = s.nats ? await NatsBus.open(s.nats, { log: log.child({ component: "bus" }) }) : null;
  const loops = await startOperator(s, config, log, runner, bus);
  // The Kubernetes parts are loaded only when asked for (kube-config.ts says why).
  const jobs =
    s.nats && config.detectionJobs ? await (await import("./detection-jobs.ts")).startDetectionJobs(config, s.nats, log, s.metrics) : null;
  const upkeep = startUpkeep(s, config, log);
  log.info({ nats: config.natsUrl !== null, blobs: config.blobs.kind, metrics_port: probes.port }, "operator workload started");
  return {
    port: probes.port,
    close: closeOnce(async () => {
      await probes.close();
      await jobs?.stop();
      await upkeep?.stop();
      await loops.close();
      await bus?.close();
      await lease?.release();
      await s.close();
      log.info("operator workload stopped");
    }),
  };
}

/**
 * The lease that lets one operator replica act at a time: a Kubernetes Lease where the config says
 * so, else a NATS KV key when there is NATS; none
 * for a lone operator on one machine.
 */
async function operatorLease(config: Config, nats: Nats | null, log: Logger): Promise<LeaderLease | null> {
  // In a pod its name (the host name) says which replica holds the lease, as client-go's election records it.
  const identity = `${hostname()}_${process.pid}`;
  if (config.operatorLease.backend === "kubernetes") {
    const [{ CoordinationV1Api, Watch }, { KubernetesLeaderLease }, { kubeConfig }] = await Promise.all([
      import("@kubernetes/client-node"),
      import("../../core/adapters/kubernetes/kubernetes-leader-lease.ts"),
      import("./kube-config.ts"),
    ]);
    const kc = kubeConfig();
    return new KubernetesLeaderLease({
      api: kc.makeApiClient(CoordinationV1Api),
      // A standby sees each renewal as it is made and tries when the lease is due (within the lease time).
      watch: new Watch(kc),
      namespace: config.namespace,
      name: config.operatorLease.name,
      identity,
      ttlMs: config.operatorLeaseMs,
      // Else a replica whose account may not read its Lease would wait to lead forever, silently.
      onError: (err) => log.warn({ err }, "taking the operator lease failed; trying again"),
    });
  }
  return nats ? NatsLeaderLease.open(nats.kvm, { identity, ttlMs: config.operatorLeaseMs }) : null;
}
