import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Deployment, V1Job } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DETECTION_QUEUE } from "../../core/adapters/nats/detection-queue.ts";
import { DETECTION_JOB_LABEL, parseJobTemplate, TEMPLATE_HASH_LABEL, templateHash } from "../../operator/detection-job-scaler.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { createKey } from "../../bin/commands/keys.ts";
import { chartJobTemplate, kubeClients, openDetectionQueue } from "../helpers/detection-queue.ts";
import { type NatsServer, startNatsServer, startVersityGw, type VersityGw } from "../helpers/go-servers.ts";
import { until } from "../helpers/webhook-receiver.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { captureBase, photograph, submit } from "../helpers/walkaround.ts";

const NAMESPACE = "default";
const BOUNDS = { minParallelism: 0, maxParallelism: 4, inspectionsPerPod: 2 };

/** The chart's detection Job template for GPU nodes, as the service reads it from its ConfigMap. */
const TEMPLATE = chartJobTemplate();
const NAME = TEMPLATE.metadata!.name!;
/** The template as an older release rendered it: another image, two GPUs a pod. */
const OLD_TEMPLATE = chartJobTemplate(
  "detection.jobs.image.repository=registry.example.com/vi",
  "detection.jobs.image.tag=0.0.9-gpu",
  "detection.jobs.gpus=2",
);

/**
 * Detection as Kubernetes Jobs, against a real kube-apiserver and a real nats-server: the operator
 * reads the detection queue's depth and makes and raises work-queue Jobs from the template, which
 * the API server validates (pod failure policy, restart policy, GPU limits) and stores. No
 * controllers run here: the Jobs are made and sized, and no pod is started.
 */
describe("detection Jobs scaled with the detection queue", () => {
  let k: ControlPlane;
  let natsServer: NatsServer;
  let s3: VersityGw;
  let q: Awaited<ReturnType<typeof openDetectionQueue>>;
  let kube: ReturnType<typeof kubeClients>;
  let ownerUid: string;

  beforeAll(async () => {
    [k, natsServer, s3] = await Promise.all([startControlPlane(), startNatsServer(), startVersityGw()]);
    q = await openDetectionQueue(natsServer.url, "detection-jobs-test");
    kube = kubeClients(k.kubeconfig, NAMESPACE);
    // The operator's Deployment, which owns the Jobs (stored; nothing runs it here).
    const deployment: V1Deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "vi-operator", namespace: NAMESPACE },
      spec: {
        selector: { matchLabels: { app: "vi-operator" } },
        template: {
          metadata: { labels: { app: "vi-operator" } },
          spec: { containers: [{ name: "operator", image: "vehicle-inspection:test" }] },
        },
      },
    };
    ownerUid = (await kube.objects.create(deployment)).metadata!.uid!;
  }, 240_000);

  afterAll(async () => {
    await q?.nats.close();
    await Promise.all([k?.close(), natsServer?.close(), s3?.close()]);
  });

  const queue = (n: number) => q.queue(n);
  const scaler = () =>
    kube.scaler(TEMPLATE, q.depth, BOUNDS, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "vi-operator",
    });

  const jobs = () => kube.jobsOf(NAME);
  const deleteJobs = async () => {
    for (const j of await jobs()) {
      await kube.batch.deleteNamespacedJob({ name: j.metadata!.name!, namespace: NAMESPACE, propagationPolicy: "Background" });
    }
    await expect.poll(async () => (await jobs()).length).toBe(0);
  };

  it("makes no Job while the queue is empty", async () => {
    const s = scaler();
    await s.start();
    await s.stop();
    expect(await s.reconcile()).toEqual({ action: "none", reason: "no_work" });
    expect(await jobs()).toEqual([]);
  });

  it("makes one Job for queued work, from the template, owned by the operator's Deployment", async () => {
    await queue(5);
    const s = scaler();
    await s.start();
    await s.stop();
    const [job, ...more] = await jobs();
    expect(more).toEqual([]);
    expect(job!.metadata!.name).toMatch(new RegExp(`^${NAME}-[a-z0-9]{5}$`));
    expect(job!.metadata!.ownerReferences).toEqual([
      { apiVersion: "apps/v1", kind: "Deployment", name: "vi-operator", uid: ownerUid, blockOwnerDeletion: false },
    ]);
    expect(job!.metadata!.labels).toMatchObject({ "app.kubernetes.io/component": "detection", [DETECTION_JOB_LABEL]: NAME });
    const spec = job!.spec!;
    // Five inspections, two a pod: three pods; a work queue, so no completions count.
    expect(spec.parallelism).toBe(3);
    expect(spec.completions).toBeUndefined();
    expect(spec).toMatchObject({ backoffLimit: 6, activeDeadlineSeconds: 3600, ttlSecondsAfterFinished: 600 });
    expect(spec.podFailurePolicy!.rules.map((r) => r.action)).toEqual(["Ignore", "FailJob"]);
    const pod = spec.template.spec!;
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.nodeSelector).toEqual({ "nvidia.com/gpu.present": "true" });
    expect(pod.tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(pod.containers[0]!.resources!.limits).toMatchObject({ "nvidia.com/gpu": "1" });
  });

  it("raises that Job as the queue grows, up to the maximum, and makes no second one", async () => {
    const s = scaler();
    await queue(2);
    expect(await s.reconcile()).toMatchObject({ action: "scale", parallelism: 4 });
    await queue(20);
    expect(await s.reconcile()).toEqual({ action: "none", reason: "enough_pods" });
    const all = await jobs();
    expect(all.map((j) => j.spec!.parallelism)).toEqual([4]);
  });

  it("counts a suspended Job (held by Kueue) as queued, not as missing", async () => {
    const [job] = await jobs();
    await k.kubectl("patch", "job", job!.metadata!.name!, "--type=merge", "-p", JSON.stringify({ spec: { suspend: true } }));
    expect(await scaler().reconcile()).toEqual({ action: "none", reason: "queued_behind_suspended" });
    expect((await jobs()).length).toBe(1);
  });

  it("makes a new Job when work is left and its Job is gone", async () => {
    const [job] = await jobs();
    await kube.batch.deleteNamespacedJob({ name: job!.metadata!.name!, namespace: NAMESPACE, propagationPolicy: "Background" });
    await expect.poll(async () => (await jobs()).length).toBe(0);
    expect(await scaler().reconcile()).toEqual({ action: "create", parallelism: 4 });
    const [made] = await jobs();
    expect(made!.metadata!.name).not.toBe(job!.metadata!.name);
  });

  it("after an upgrade changed the template, makes a Job of the new one beside the old one's, which it never raises", async () => {
    await deleteJobs();
    expect(await q.depth()).toBeGreaterThanOrEqual(8);
    // Before the upgrade: the old release's scaler made a Job of one pod, and that pod runs.
    expect(await kube.scaler(OLD_TEMPLATE, q.depth, { ...BOUNDS, maxParallelism: 1 }).reconcile()).toEqual({
      action: "create",
      parallelism: 1,
    });
    const [old] = await jobs();
    const oldName = old!.metadata!.name!;
    expect(old!.metadata!.labels![TEMPLATE_HASH_LABEL]).toBe(templateHash(OLD_TEMPLATE));
    // No Job controller runs here: the old Job's status is written as it would write it.
    const status = (status: V1Job["status"]) =>
      k.kubectl("patch", "job", oldName, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status }));
    await status({ startTime: new Date(), active: 1, ready: 1, uncountedTerminatedPods: {} });
    // After it, the operator restarted with the new template: the queue wants 4 pods, the old Job runs 1, so a new Job of 3.
    expect(await scaler().reconcile()).toEqual({ action: "create", parallelism: 3 });
    const all = await jobs();
    expect(all.length).toBe(2);
    const made = all.find((j) => j.metadata!.name !== oldName)!;
    expect(made.metadata!.labels![TEMPLATE_HASH_LABEL]).toBe(templateHash(TEMPLATE));
    expect(templateHash(TEMPLATE)).not.toBe(templateHash(OLD_TEMPLATE));
    const container = made.spec!.template.spec!.containers[0]!;
    expect(container.image).toBe(TEMPLATE.spec!.template.spec!.containers[0]!.image);
    expect(container.image).not.toBe("registry.example.com/vi:0.0.9-gpu");
    expect(container.resources!.limits).toMatchObject({ "nvidia.com/gpu": "1" });
    // The old Job as it was made: one pod, the old image and GPUs; it drains by itself.
    const oldNow = all.find((j) => j.metadata!.name === oldName)!;
    expect(oldNow.spec!.parallelism).toBe(1);
    expect(oldNow.spec!.template.spec!.containers[0]!.image).toBe("registry.example.com/vi:0.0.9-gpu");
    expect(oldNow.spec!.template.spec!.containers[0]!.resources!.limits).toMatchObject({ "nvidia.com/gpu": "2" });
    expect(await scaler().reconcile()).toEqual({ action: "none", reason: "enough_pods" });
    // Its pod gone, idle: the new Job carries all the growth, the old one left at 1.
    await status({ active: 0, ready: 0, succeeded: 1 });
    expect(await scaler().reconcile()).toEqual({ action: "scale", name: made.metadata!.name, parallelism: 4 });
    expect((await jobs()).map((j) => [j.metadata!.name, j.spec!.parallelism]).sort()).toEqual(
      [
        [oldName, 1],
        [made.metadata!.name, 4],
      ].sort(),
    );
  });

  it("refuses a template that is not a Job, saying what is wrong", () => {
    expect(() => parseJobTemplate(stringify({ metadata: { name: "Bad_Name" }, spec: {} }))).toThrow(/metadata.name: a DNS label/);
    expect(() => parseJobTemplate("kind: Job\n")).toThrow(/the detection Job template is not a Job/);
  });

  it("a Job's pod, an inference worker told to leave when idle, empties the queue and exits 0", async () => {
    const jsm = await q.nats.js.jetstreamManager();
    expect(await q.depth()).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), "vi-pod-"));
    const worker = new ServiceProcess(
      {
        DATA_DIR: dir,
        NATS_URL: natsServer.url,
        ...s3.clientEnv,
        INFERENCE_EXIT_WHEN_IDLE_MS: "1500",
        DAMAGE_MODEL: "none",
        PARTS_MODEL: "none",
      },
      "inference",
    );
    try {
      expect(await worker.exited).toBe(0);
      expect(worker.logs.filter((l) => l.msg === "detection finished").length).toBe(q.published);
      const said = worker.logs.map((l) => l.msg);
      expect(said.indexOf("no detection job for a while; leaving")).toBeGreaterThan(said.lastIndexOf("detection finished"));
      expect(said.lastIndexOf("inference workload stopped")).toBeGreaterThan(said.indexOf("no detection job for a while; leaving"));
      expect(await q.depth()).toBe(0);
      // Every job's result is stored for the operator's runner.
      expect((await jsm.streams.info(DETECTION_QUEUE.results.stream)).state.messages).toBe(q.published);
    } finally {
      worker.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("of two operator replicas one leads through a Kubernetes Lease and makes the Job; killed, the other takes over and makes no second", async () => {
    await deleteJobs();
    await queue(3);
    const dir = mkdtempSync(join(tmpdir(), "vi-jobs-"));
    const template = join(dir, "detection-job.yaml");
    writeFileSync(template, stringify(TEMPLATE));
    const LEASE_MS = 3_000;
    const env = {
      DATA_DIR: join(dir, "data"),
      NATS_URL: natsServer.url,
      ...s3.clientEnv,
      KUBECONFIG: k.kubeconfig,
      OPERATOR_LEASE_BACKEND: "kubernetes",
      OPERATOR_LEASE_MS: String(LEASE_MS),
      DETECTION_JOB_TEMPLATE: template,
      DETECTION_JOB_OWNER: "Deployment/vi-operator",
      DETECTION_JOBS_MAX: "2",
      DETECTION_JOBS_INSPECTIONS_PER_POD: "1",
      DETECTION_JOBS_EVERY_MS: "200",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    };
    const replicas = [new ServiceProcess(env, "operator")];
    const holder = () => k.kubectl("get", "lease", "vehicle-inspection-operator", "-o", "jsonpath={.spec.holderIdentity}");
    try {
      await replicas[0]!.line((l) => l.msg === "detection Job created", 60_000);
      replicas.push(new ServiceProcess(env, "operator"));
      await replicas[1]!.line((l) => l.msg === "waiting to lead", 60_000);
      const [first, second] = replicas as [ServiceProcess, ServiceProcess];
      const made: V1Job[] = await jobs();
      expect(made.map((j) => [j.spec!.parallelism, j.metadata!.ownerReferences![0]!.uid])).toEqual([[2, ownerUid]]);
      // The Lease names the leader (host name and pid), as client-go's election records it.
      expect(await holder()).toMatch(/_\d+$/);
      const leaderIdentity = await holder();
      // The standby waits: it neither leads nor touches the Jobs while the Lease is held.
      await new Promise((r) => setTimeout(r, LEASE_MS));
      expect(second.logs.some((l) => l.msg === "leading")).toBe(false);

      first.kill();
      const killedAt = Date.now();
      await second.line((l) => l.msg === "leading", 30_000);
      console.log(`operator takeover after SIGKILL: ${Date.now() - killedAt} ms (lease ${LEASE_MS} ms)`);
      expect(await holder()).not.toBe(leaderIdentity);
      // The new leader's scaler finds the Job the first one made: still one.
      await second.line((l) => l.msg === "detection Jobs planned", 10_000);
      expect((await jobs()).map((j) => j.metadata!.name)).toEqual(made.map((j) => j.metadata!.name));
    } finally {
      replicas[0]!.kill();
      expect(await replicas[1]?.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("the single-process service with a Job template has an inspection's detection run by the Job's pod, which then leaves", async () => {
    await deleteJobs();
    const dir = mkdtempSync(join(tmpdir(), "vi-start-jobs-"));
    const template = join(dir, "detection-job.yaml");
    writeFileSync(template, stringify(TEMPLATE));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      DATA_DIR: join(dir, "data"),
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: url,
      NATS_URL: natsServer.url,
      ...s3.clientEnv,
      KUBECONFIG: k.kubeconfig,
      DETECTION_JOB_TEMPLATE: template,
      DETECTION_JOB_OWNER: "Deployment/vi-operator",
      DETECTION_JOBS_EVERY_MS: "200",
      CONTROLLER_POLL_MS: "100",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    };
    const service = new ServiceProcess(env);
    let pod: ServiceProcess | undefined;
    try {
      await service.line((l) => l.msg === "vehicle inspection service started", 60_000);
      const key = await createKey(loadConfig(env), "test", "jobs-co");
      const api = (path: string, init: RequestInit = {}) =>
        fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
      const created = await api("/v1/inspections", { method: "POST", body: JSON.stringify({ vehicle: { vin: VALID_VIN } }) });
      const made = await created.json();
      expect(created.status, JSON.stringify(made)).toBe(201);
      const capture = captureBase(made.capture_url);
      await photograph(capture);
      await submit(capture);
      // The submitted inspection's detection job is queued, and a Job made for it.
      const [job] = await until("a detection Job", jobs, (j) => j.length > 0, 30_000);
      expect(job!.spec!.parallelism).toBe(1);
      // What the Job's pod runs (its container's args), as a process here: no kubelet runs pods in this cluster.
      const container = job!.spec!.template.spec!.containers[0]!;
      expect(container.args).toEqual(["inference"]);
      pod = new ServiceProcess(
        { DATA_DIR: join(dir, "pod"), NATS_URL: natsServer.url, ...s3.clientEnv, INFERENCE_EXIT_WHEN_IDLE_MS: "1500" },
        "inference",
      );
      const done = await until(
        "the inspection completed",
        async () => (await api(`/v1/inspections/${made.id}`)).json(),
        (i) => i.status === "completed",
        60_000,
      );
      expect(done.summary.grade).toBe("none");
      expect(pod.logs.some((l) => l.msg === "detection finished" && l.inspection_id === made.id)).toBe(true);
      // Its queue empty, the pod leaves with 0, as a work-queue Job's pods do to complete it.
      expect(await pod.exited).toBe(0);
    } finally {
      pod?.kill();
      expect(await service.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
