import { createHash } from "node:crypto";
import {
  type BatchV1Api,
  type KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1OwnerReference,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { parse } from "yaml";
import { z } from "zod";
import {
  type DetectionJobBounds,
  type DetectionJobPlan,
  JOB_STATES,
  type JobState,
  jobState,
  type ObservedJob,
  planDetectionJobs,
} from "../core/domain/detection-jobs.ts";
import { apiStatus, NOT_FOUND } from "../core/adapters/kubernetes/api-status.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import { type Clock, systemClock } from "../core/runtime/time.ts";
import { repeat } from "./repeat.ts";

/** The label every detection Job carries, naming the template it came from: how the scaler finds its own Jobs. */
export const DETECTION_JOB_LABEL = "inspection.dev/detection-job";

/**
 * The label every detection Job carries with the hash of the template it was made from (templateHash):
 * a Job whose hash is not the scaler's was made before a helm upgrade changed the template, and is
 * drained, never raised.
 */
export const TEMPLATE_HASH_LABEL = "inspection.dev/template-hash";

/** JSON with every object's keys sorted: the same text for the same template however its YAML was ordered. */
const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** The first 12 hex digits of the SHA-256 of the template's canonical JSON: what TEMPLATE_HASH_LABEL says. */
export const templateHash = (template: V1Job): string => createHash("sha256").update(canonicalJson(template)).digest("hex").slice(0, 12);

/**
 * What the scaler needs of a template; the API server validates the rest when a Job is created.
 * The name leaves room for the 5 characters generateName adds within the 63 a Job's name may have
 * (its pods carry it in a label).
 */
const JobTemplate = z.looseObject({
  metadata: z.looseObject({ name: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$/, "a DNS label of at most 52 characters") }),
  spec: z.looseObject({
    template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ name: z.string() })).min(1) }) }),
  }),
});

/** The Job template from its file's text (YAML or JSON), or an error that says what is wrong with it. */
export function parseJobTemplate(text: string): V1Job {
  const parsed = JobTemplate.safeParse(parse(text));
  if (!parsed.success) {
    throw new Error(
      `the detection Job template is not a Job: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  }
  return parsed.data as V1Job;
}

/** Who owns the Jobs (the operator's Deployment, say): deleting it deletes them. */
export type JobOwner = { apiVersion: string; kind: string; name: string };

export type DetectionJobScalerOptions = {
  batch: BatchV1Api;
  /** Reads the owner, for its uid. */
  objects: KubernetesObjectApi;
  namespace: string;
  /** The Job as the chart renders it (pods, GPU limits, node selector, tolerations, failure policy); its name prefixes every Job's. */
  template: V1Job;
  owner: JobOwner | null;
  bounds: DetectionJobBounds;
  /** Detection jobs waiting or being run. */
  depth: () => Promise<number>;
  everyMs: number;
  /** A Job with pods and none of them ready this long is reported stuck. */
  stuckAfterMs: number;
  log: Logger;
  metrics?: Metrics;
  clock?: Clock;
};

const finishedOf = (job: V1Job) =>
  (job.status?.conditions ?? []).some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");

/**
 * Runs detection as Kubernetes Jobs: every `everyMs` it reads the detection queue's depth and the
 * Jobs of its template, and creates or raises one as planDetectionJobs says. Only the leading
 * operator runs it. Each Job is the template with a generated name, the template's label, an owner
 * reference and the planned parallelism; its pods are `vehicle-inspection inference` processes
 * that leave once the queue has been empty a while (INFERENCE_EXIT_WHEN_IDLE_MS), so the Job
 * completes by itself.
 *
 * An upgrade rolls the Jobs as a Deployment's rollout rolls its ReplicaSets: each Job is labelled
 * with its template's hash, and a Job of another hash (an older template: another image, GPU count,
 * anything) is never raised nor deleted; its ready pods count as capacity while they finish their
 * work and leave, idle, and whatever more the queue wants goes to a Job of the current template.
 */
export class DetectionJobScaler {
  readonly #o: DetectionJobScalerOptions;
  readonly #hash: string;
  #ownerReference: V1OwnerReference | null = null;
  #loop: { stop(): Promise<void> } | undefined;
  #lastPlan = "";
  /** Since when each Job has been seen with no ready pod; and the Jobs already reported stuck. */
  readonly #unreadySince = new Map<string, number>();
  readonly #reportedStuck = new Set<string>();
  /** Each Job's state at the last pass. */
  states = new Map<string, JobState>();

  constructor(options: DetectionJobScalerOptions) {
    this.#o = options;
    this.#hash = templateHash(options.template);
  }

  /** Resolves the owner (its uid) and starts the passes. */
  async start(): Promise<void> {
    this.#ownerReference = await this.#resolveOwner();
    this.#loop = repeat(
      async () => void (await this.reconcile()),
      this.#o.everyMs,
      (err) => this.#o.log.warn({ err }, "scaling detection Jobs failed; trying again"),
    );
  }

  async stop(): Promise<void> {
    await this.#loop?.stop();
  }

  /** One pass: what the queue and the Jobs called for, and done. */
  async reconcile(): Promise<DetectionJobPlan> {
    const [depth, jobs] = await Promise.all([this.#o.depth(), this.#jobs()]);
    this.#observe(jobs);
    const plan = planDetectionJobs(depth, jobs, this.#o.bounds);
    const said = JSON.stringify({ depth, plan });
    if (said !== this.#lastPlan) {
      const outdated = jobs.filter((j) => j.outdated && !j.finished).length;
      this.#o.log.info({ depth, plan, jobs: jobs.length, outdated }, "detection Jobs planned");
    }
    this.#lastPlan = said;
    if (plan.action === "create") await this.#create(plan.parallelism);
    if (plan.action === "scale") await this.#scale(plan.name, plan.parallelism);
    return plan;
  }

  /** Notes each Job's state, for the gauge and the log: a Job newly stuck is said once. */
  #observe(jobs: ObservedJob[]): void {
    const now = (this.#o.clock ?? systemClock).now();
    const states = new Map<string, JobState>();
    for (const job of jobs) {
      if (job.ready > 0 || job.suspended || job.finished) this.#unreadySince.delete(job.name);
      else if (!this.#unreadySince.has(job.name)) this.#unreadySince.set(job.name, now);
      const state = jobState(job, this.#unreadySince.get(job.name) ?? null, now, this.#o.stuckAfterMs);
      states.set(job.name, state);
      if (state === "stuck" && !this.#reportedStuck.has(job.name)) {
        this.#reportedStuck.add(job.name);
        this.#o.log.warn(
          { job: job.name, pods: job.active, unready_ms: now - this.#unreadySince.get(job.name)! },
          "detection Job stuck: none of its pods is ready (no node with a free GPU? an image that cannot be pulled?)",
        );
      }
    }
    for (const name of this.#unreadySince.keys()) if (!states.has(name)) this.#unreadySince.delete(name);
    for (const name of this.#reportedStuck) if (states.get(name) !== "stuck") this.#reportedStuck.delete(name);
    this.states = states;
    for (const state of JOB_STATES) this.#o.metrics?.detectionJobs.set({ state }, [...states.values()].filter((s) => s === state).length);
  }

  get #selector(): string {
    return `${DETECTION_JOB_LABEL}=${this.#o.template.metadata!.name!}`;
  }

  async #jobs(): Promise<ObservedJob[]> {
    const list = await this.#o.batch.listNamespacedJob({ namespace: this.#o.namespace, labelSelector: this.#selector });
    return list.items.map((job) => ({
      name: job.metadata!.name!,
      parallelism: job.spec?.parallelism ?? 1,
      suspended: job.spec?.suspend === true,
      finished: finishedOf(job),
      outdated: job.metadata?.labels?.[TEMPLATE_HASH_LABEL] !== this.#hash,
      createdAt: job.metadata?.creationTimestamp ? new Date(job.metadata.creationTimestamp).getTime() : 0,
      active: job.status?.active ?? 0,
      ready: job.status?.ready ?? 0,
      succeeded: job.status?.succeeded ?? 0,
    }));
  }

  async #create(parallelism: number): Promise<void> {
    const { template } = this.#o;
    const name = template.metadata!.name!;
    const body: V1Job = {
      ...template,
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: {
        ...template.metadata,
        name: undefined,
        generateName: `${name}-`,
        namespace: this.#o.namespace,
        labels: { ...template.metadata?.labels, [DETECTION_JOB_LABEL]: name, [TEMPLATE_HASH_LABEL]: this.#hash },
        ownerReferences: this.#ownerReference ? [this.#ownerReference] : undefined,
      },
      // A work queue: no completions count; the Job is done once a pod has finished and none runs.
      spec: { ...template.spec!, parallelism, completions: undefined },
    };
    const made = await this.#o.batch.createNamespacedJob({ namespace: this.#o.namespace, body });
    this.#o.log.info({ job: made.metadata?.name, parallelism, template_hash: this.#hash }, "detection Job created");
  }

  async #scale(name: string, parallelism: number): Promise<void> {
    try {
      await this.#o.batch.patchNamespacedJob(
        { name, namespace: this.#o.namespace, body: { spec: { parallelism } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      this.#o.log.info({ job: name, parallelism }, "detection Job raised");
    } catch (error) {
      // Gone (finished and collected) since the list: the next pass creates another if work remains.
      if (apiStatus(error) !== NOT_FOUND) throw error;
    }
  }

  async #resolveOwner(): Promise<V1OwnerReference | null> {
    const owner = this.#o.owner;
    if (!owner) return null;
    const found = await this.#o.objects.read({
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      metadata: { name: owner.name, namespace: this.#o.namespace },
    });
    // Not a controller reference: the Job controller is the Jobs' controller; this one only ties their lifetime to the owner's.
    return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: found.metadata!.uid!, blockOwnerDeletion: false };
  }
}
