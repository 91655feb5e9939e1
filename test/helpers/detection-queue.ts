import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { BatchV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, type V1Job } from "@kubernetes/client-node";
import { pino } from "pino";
import {
  DETECTION_QUEUE,
  detectionQueueDepth,
  ensureDetectionStreams,
  ensureInferenceConsumer,
  jobIdFor,
} from "../../core/adapters/nats/detection-queue.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import type { DetectionJobBounds } from "../../core/domain/detection-jobs.ts";
import {
  DETECTION_JOB_LABEL,
  DetectionJobScaler,
  type DetectionJobScalerOptions,
  type JobOwner,
  parseJobTemplate,
} from "../../operator/detection-job-scaler.ts";
import { kubeTools } from "./kube-control-plane.ts";

const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");
/** Values that run detection as Jobs on GPU nodes. */
export const GPU_JOBS = [
  "publicUrl=https://inspect.example.com",
  "detection.jobs.enabled=true",
  "nats.url=nats://nats:4222",
  "s3.bucket=inspections",
];

/** The chart rendered (release `r`) with these values, in this namespace. */
export function renderChart(values: string[], namespace = "default"): string {
  return execFileSync(kubeTools().helm, ["template", "r", CHART, "--namespace", namespace, ...values.flatMap((v) => ["--set", v])], {
    encoding: "utf8",
  });
}

/** The detection Job template in a rendered chart's ConfigMap, as the service reads it. */
export function jobTemplateIn(manifest: string): V1Job {
  const map = parseAllDocuments(manifest)
    .map((d) => d.toJS())
    .find((d) => d?.kind === "ConfigMap" && d.metadata.name.endsWith("-detection-job"));
  return parseJobTemplate(map.data["detection-job.yaml"]);
}

/** The chart's detection Job template with GPU_JOBS and `more` values: what the tests make Jobs from. */
export const chartJobTemplate = (...more: string[]): V1Job => jobTemplateIn(renderChart([...GPU_JOBS, ...more]));

/**
 * The detection queue on a real nats-server, as the operator's runner fills it: its streams and the
 * workers' consumer made, inspections' detection jobs published, its depth read.
 */
export async function openDetectionQueue(
  url: string,
  name: string,
): Promise<{ nats: Nats; queue(n: number): Promise<void>; depth(): Promise<number>; readonly published: number }> {
  const nats = await connectNats({ url, name });
  const jsm = await nats.js.jetstreamManager();
  await ensureDetectionStreams(jsm);
  await ensureInferenceConsumer(jsm, 30_000);
  let published = 0;
  return {
    nats,
    async queue(n) {
      for (let i = 0; i < n; i++) {
        const id = `insp_${name.replace(/\W/g, "")}${++published}`;
        const jobId = jobIdFor(id, 1);
        await nats.js.publish(DETECTION_QUEUE.jobs.subject(id), JSON.stringify({ jobId, inspectionId: id, photos: [] }), { msgID: jobId });
      }
    },
    depth: () => detectionQueueDepth(jsm),
    get published() {
      return published;
    },
  };
}

/** The Kubernetes clients the scaler uses, on a control plane's kubeconfig, and a scaler over them. */
export function kubeClients(kubeconfig: string, namespace: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const batch = kc.makeApiClient(BatchV1Api);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  return {
    batch,
    objects,
    core: kc.makeApiClient(CoreV1Api),
    /** The Jobs made from the template named `name`. */
    jobsOf: async (name: string) => (await batch.listNamespacedJob({ namespace, labelSelector: `${DETECTION_JOB_LABEL}=${name}` })).items,
    scaler: (
      template: V1Job,
      depth: () => Promise<number>,
      bounds: DetectionJobBounds,
      owner: JobOwner | null = null,
      extra: Partial<DetectionJobScalerOptions> = {},
    ) =>
      new DetectionJobScaler({
        batch,
        objects,
        namespace,
        template,
        owner,
        bounds,
        depth,
        everyMs: 60_000,
        stuckAfterMs: 600_000,
        log: pino({ level: "silent" }),
        ...extra,
      }),
  };
}
