import type { V1Job, V1Node, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chartJobTemplate, kubeClients, openDetectionQueue } from "../helpers/detection-queue.ts";
import { type NatsServer, startNatsServer } from "../helpers/go-servers.ts";
import { type ControlPlane, KWOK_NODE, startControlPlane } from "../helpers/kube-control-plane.ts";
import { until } from "../helpers/webhook-receiver.ts";
import { sample } from "../helpers/prometheus.ts";
import { METRIC, Metrics } from "../../core/runtime/metrics.ts";
import { pino } from "pino";

const NAMESPACE = "default";
const GPU_NODES = ["gpu-node-1", "gpu-node-2"];
const CPU_NODE = "cpu-node-1";

/** A node kwok keeps ready: `gpus` NVIDIA GPUs (the device plugin's resource), tainted and labelled as GPU pools are. */
function node(name: string, gpus: number): V1Node {
  const capacity = { cpu: "8", memory: "32Gi", pods: "110", ...(gpus > 0 ? { "nvidia.com/gpu": String(gpus) } : {}) };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { ...KWOK_NODE, "node.alpha.kubernetes.io/ttl": "0" },
      labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", ...(gpus > 0 ? { "nvidia.com/gpu.present": "true" } : {}) },
    },
    spec: gpus > 0 ? { taints: [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" }] } : {},
    status: { capacity, allocatable: capacity },
  };
}

/** The chart's detection Job template for GPU nodes, with a short TTL to see a finished Job collected. */
const CHART_TEMPLATE = chartJobTemplate("detection.jobs.ttlSecondsAfterFinished=3");
const NAME = CHART_TEMPLATE.metadata!.name!;
/** As Kueue's admission leaves a Job: suspended until it is let go. */
const QUEUED: V1Job = {
  ...CHART_TEMPLATE,
  metadata: { ...CHART_TEMPLATE.metadata, name: `${NAME}-queued` },
  spec: { ...CHART_TEMPLATE.spec!, suspend: true },
};

/** A Job for a GPU no node has: its pods cannot be scheduled. */
const UNSCHEDULABLE: V1Job = {
  ...CHART_TEMPLATE,
  metadata: { ...CHART_TEMPLATE.metadata, name: `${NAME}-h200` },
  spec: {
    ...CHART_TEMPLATE.spec!,
    template: {
      ...CHART_TEMPLATE.spec!.template,
      spec: { ...CHART_TEMPLATE.spec!.template.spec!, nodeSelector: { "nvidia.com/gpu.product": "NVIDIA-H200" } },
    },
  },
};

/**
 * Detection Jobs' pods scheduled and run, against a real control plane with its Job, TTL and
 * garbage-collector controllers, its scheduler, and GPU and CPU nodes simulated by kwok (which runs
 * no container: a Job's pod it has bound goes Running, then Succeeded). What is real: the Job
 * controller makes the pods, the scheduler places them by GPU capacity, node selector and taints,
 * the Job completes, its TTL removes it, and a suspended Job gets no pod.
 */
describe("detection Jobs' pods on simulated GPU nodes", () => {
  let k: ControlPlane;
  let natsServer: NatsServer;
  let q: Awaited<ReturnType<typeof openDetectionQueue>>;
  let kube: ReturnType<typeof kubeClients>;
  const seenPods = new Map<string, V1Pod>();

  beforeAll(async () => {
    [k, natsServer] = await Promise.all([startControlPlane({ nodes: true }), startNatsServer()]);
    q = await openDetectionQueue(natsServer.url, "detection-job-pods-test");
    kube = kubeClients(k.kubeconfig, NAMESPACE);
    for (const n of [...GPU_NODES.map((name) => node(name, 1)), node(CPU_NODE, 0)]) await kube.core.createNode({ body: n });
    await k.kubectl("wait", "--for=condition=Ready", "--timeout=60s", "node", "--all");
    // Ten inspections' detection waiting: nothing here consumes them, so the depth stays.
    await q.queue(10);
  }, 300_000);

  afterAll(async () => {
    await q?.nats.close();
    await Promise.all([k?.close(), natsServer?.close()]);
  });

  const scaler = (suspend: boolean) =>
    kube.scaler(suspend ? QUEUED : CHART_TEMPLATE, q.depth, { minParallelism: 0, maxParallelism: 4, inspectionsPerPod: 2 });
  const jobsOf = (name: string) => kube.jobsOf(name);
  const finished = (job: V1Job) =>
    job.status?.conditions?.find((c) => ["Complete", "Failed"].includes(c.type) && c.status === "True")?.type;
  /** The Job's pods, remembered as they are seen: the TTL controller and the garbage collector remove them later. */
  const podsOf = async (job: string) => {
    for (const pod of (await kube.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `job-name=${job}` })).items) {
      seenPods.set(pod.metadata!.name!, pod);
    }
    return [...seenPods.values()].filter((p) => p.metadata!.labels!["job-name"] === job);
  };

  it("runs the Job's pods on GPU nodes only, completes it, and makes the next Job while work remains", async () => {
    expect(await q.depth()).toBe(10);
    expect(await scaler(false).reconcile()).toEqual({ action: "create", parallelism: 4 });
    const [job] = await jobsOf(NAME);
    const name = job!.metadata!.name!;
    const done = await until(
      "the Job finished",
      async () => {
        await podsOf(name);
        return (await kube.batch.readNamespacedJob({ name, namespace: NAMESPACE })) as V1Job;
      },
      (j) => finished(j) !== undefined,
      60_000,
    );
    expect(finished(done)).toBe("Complete");
    const pods = await podsOf(name);
    expect(pods.length).toBeGreaterThanOrEqual(1);
    // Placed by the scheduler where a GPU is free and the taint tolerated; never on the CPU node.
    for (const pod of pods) expect(GPU_NODES).toContain(pod.spec!.nodeName);
    const waited = (await kube.core.listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: "reason=FailedScheduling" })).items.filter(
      (e) => e.involvedObject.name?.startsWith(`${name}-`),
    );
    console.log(
      `Job ${name}: ${done.status!.succeeded} pods succeeded, on ${[...new Set(pods.map((p) => p.spec!.nodeName))].sort().join(", ")}; ` +
        `scheduling waits: ${waited.map((e) => e.message?.split(". ")[0]).join(" | ") || "none"}`,
    );
    // Its pods are done and the queue is not: the next pass makes another Job.
    const next = await scaler(false).reconcile();
    expect(next).toEqual({ action: "create", parallelism: 4 });
    expect((await jobsOf(NAME)).length).toBe(2);
    // ttlSecondsAfterFinished: the finished Job is deleted by the TTL controller.
    await until(
      "the finished Job collected",
      () => jobsOf(NAME),
      (jobs) => !jobs.some((j) => j.metadata!.name === name),
      60_000,
    );
  });

  it("starts no pod for a suspended Job (as Kueue holds one), counts it as queued, and runs it once let go", async () => {
    const s = scaler(true);
    expect(await s.reconcile()).toEqual({ action: "create", parallelism: 4 });
    const [job] = await jobsOf(`${NAME}-queued`);
    const name = job!.metadata!.name!;
    // Given the controller time to act on it: still no pod, and the scaler makes no second Job.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await podsOf(name)).toEqual([]);
    expect(await s.reconcile()).toEqual({ action: "none", reason: "queued_behind_suspended" });
    expect(s.states.get(name)).toBe("queued");
    expect((await jobsOf(`${NAME}-queued`)).length).toBe(1);
    await k.kubectl("patch", "job", name, "--type=merge", "-p", JSON.stringify({ spec: { suspend: false } }));
    const done = await until(
      "the admitted Job finished",
      () => kube.batch.readNamespacedJob({ name, namespace: NAMESPACE }),
      (j) => finished(j) !== undefined,
      60_000,
    );
    expect(finished(done)).toBe("Complete");
  });

  it("reports a Job whose pods no node can take as stuck once the wait is over, in the log and the detection Jobs gauge", async () => {
    const metrics = new Metrics("test");
    const warnings: string[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
    const s = kube.scaler(UNSCHEDULABLE, q.depth, { minParallelism: 0, maxParallelism: 2, inspectionsPerPod: 2 }, null, {
      stuckAfterMs: 1_500,
      metrics,
      log,
    });
    expect(await s.reconcile()).toEqual({ action: "create", parallelism: 2 });
    const [job] = await jobsOf(UNSCHEDULABLE.metadata!.name!);
    const name = job!.metadata!.name!;
    // Its pods exist and wait: starting, not yet stuck.
    await until(
      "its pods made",
      () => podsOf(name),
      (pods) => pods.length === 2,
      30_000,
    );
    await s.reconcile();
    expect(s.states.get(name)).toBe("starting");
    await new Promise((r) => setTimeout(r, 1_600));
    expect(await s.reconcile()).toEqual({ action: "none", reason: "enough_pods" });
    expect(s.states.get(name)).toBe("stuck");
    expect(warnings.filter((w) => w.startsWith("detection Job stuck"))).toHaveLength(1);
    expect(sample(await metrics.registry.metrics(), METRIC.detectionJobs, { state: "stuck" })).toBe(1);
    const waits = (await kube.core.listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: "reason=FailedScheduling" })).items;
    expect(
      waits.some((e) => e.involvedObject.name?.startsWith(`${name}-`) && e.message?.includes("didn't match Pod's node affinity/selector")),
    ).toBe(true);
    // Said once, however many passes see it stuck.
    await s.reconcile();
    expect(warnings.filter((w) => w.startsWith("detection Job stuck"))).toHaveLength(1);
  });
});
