import { readFileSync } from "node:fs";
import { BatchV1Api, KubernetesObjectApi } from "@kubernetes/client-node";
import { kubeConfig } from "./kube-config.ts";
import type { Logger } from "pino";
import type { Config } from "../../core/runtime/config.ts";
import type { Metrics } from "../../core/runtime/metrics.ts";
import { detectionQueueDepth, ensureDetectionStreams, ensureInferenceConsumer } from "../../core/adapters/nats/detection-queue.ts";
import type { Nats } from "../../core/adapters/nats/nats-connection.ts";
import { DetectionJobScaler, parseJobTemplate } from "../../operator/detection-job-scaler.ts";

/**
 * Detection as Kubernetes Jobs (DETECTION_JOB_TEMPLATE), scaled with the detection queue by the
 * leading `operator`, or by `start` (one replica) whose detection then runs in the Jobs' pods. The
 * API server is found by kubeConfig().
 */
export async function startDetectionJobs(config: Config, nats: Nats, log: Logger, metrics: Metrics): Promise<DetectionJobScaler> {
  const jobs = config.detectionJobs!;
  const kc = kubeConfig();
  const jsm = await nats.js.jetstreamManager();
  // The queue's consumer is the workers' to make, but its depth is read before the first worker runs.
  await ensureDetectionStreams(jsm);
  await ensureInferenceConsumer(jsm, config.inferenceAckWaitMs);
  const scaler = new DetectionJobScaler({
    batch: kc.makeApiClient(BatchV1Api),
    objects: KubernetesObjectApi.makeApiClient(kc),
    namespace: config.namespace,
    template: parseJobTemplate(readFileSync(jobs.templatePath, "utf8")),
    owner: jobs.owner,
    bounds: jobs.bounds,
    depth: () => detectionQueueDepth(jsm),
    everyMs: jobs.everyMs,
    stuckAfterMs: jobs.stuckAfterMs,
    log: log.child({ component: "detection-jobs" }),
    metrics,
  });
  await scaler.start();
  return scaler;
}
