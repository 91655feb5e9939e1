/**
 * How many detection pods a cluster should run for the detection queue: the work-queue Job pattern,
 * where each pod of a Job pulls jobs from the queue until it has been idle a while, then exits 0,
 * and the Job completes once its pods have. Plain data in, a plan out; operator/detection-job-scaler.ts
 * reads the queue and the Jobs and carries the plan out.
 */

export type DetectionJobBounds = {
  /** Pods kept however short the queue, while it has any work (0: none). */
  minParallelism: number;
  maxParallelism: number;
  /** Queued inspections one pod is expected to take on before another pod is worth starting. */
  inspectionsPerPod: number;
};

/** A detection Job as the scaler sees it. */
export type ObservedJob = {
  name: string;
  parallelism: number;
  /** Held by a queueing system (Kueue sets spec.suspend until it admits the Job): queued, not stuck. */
  suspended: boolean;
  /** A Complete or Failed condition: its pods are gone, whatever work is left needs another Job. */
  finished: boolean;
  /**
   * Made from another Job template than the scaler's (a helm upgrade since changed the image, the
   * GPUs, anything): never raised; its ready pods count as capacity until they leave, idle.
   */
  outdated: boolean;
  createdAt: number;
  /** Pods the Job has now (pending or running), and of them those ready. */
  active: number;
  ready: number;
  /**
   * Pods that exited 0. Once one has, a work-queue Job starts no new pod, whatever its parallelism:
   * it is draining, its active pods finishing what they took.
   */
  succeeded: number;
};

/**
 * Where a Job stands, for the `vehicle_inspection_detection_jobs` gauge and the log: `queued` (suspended: waiting its
 * turn, not stuck), `starting` (its pods not ready yet), `running` (a pod ready), `stuck` (pods,
 * none of them ready, for stuckAfterMs: no GPU node to be had, an image that cannot be pulled),
 * `finished`.
 */
export type JobState = "queued" | "starting" | "running" | "stuck" | "finished";
export const JOB_STATES: readonly JobState[] = ["queued", "starting", "running", "stuck", "finished"];

/** `unreadySince`: since when the scaler has seen it with no ready pod (null: it has one now). */
export function jobState(job: ObservedJob, unreadySince: number | null, now: number, stuckAfterMs: number): JobState {
  if (job.finished) return "finished";
  if (job.suspended) return "queued";
  if (job.ready > 0) return "running";
  return unreadySince !== null && now - unreadySince >= stuckAfterMs ? "stuck" : "starting";
}

export type DetectionJobPlan =
  | { action: "none"; reason: "no_work" | "enough_pods" | "queued_behind_suspended" }
  | { action: "create"; parallelism: number }
  | { action: "scale"; name: string; parallelism: number };

/** The pods wanted for `depth` inspections waiting or running: none for none, else within the bounds. */
export function wantedPods(depth: number, bounds: DetectionJobBounds): number {
  if (depth <= 0) return 0;
  const wanted = Math.ceil(depth / Math.max(1, bounds.inspectionsPerPod));
  return Math.min(bounds.maxParallelism, Math.max(bounds.minParallelism, wanted, 1));
}

/**
 * What to do for a queue `depth` (jobs waiting plus jobs being run) given the Jobs that exist:
 * - work to do and fewer pods than wanted: raise the newest Job that can still start pods (so one
 *   Job carries the growth), or make one when there is none (none unfinished, or all draining: a
 *   Job one of whose pods exited 0 starts no more). A suspended Job is raised too: it is queued, and
 *   is admitted at the size the queue needs then;
 * - never lowered: a pod leaves by itself once idle, whereas a lowered parallelism deletes running
 *   pods, whose jobs then wait out their ack wait to be taken again;
 * - a rollout, as a Deployment's: an outdated Job (an older template's) is never raised, only
 *   drained; its ready pods count as running (not its pending ones: the upgrade may be what lets
 *   pods be scheduled or pulled at all), and the growth goes to a Job of the current template.
 */
export function planDetectionJobs(depth: number, jobs: readonly ObservedJob[], bounds: DetectionJobBounds): DetectionJobPlan {
  const wanted = wantedPods(depth, bounds);
  const unfinished = jobs.filter((j) => !j.finished).sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
  // What runs or will: an outdated Job's ready pods, a draining Job's active pods, any other Job's parallelism.
  const running = unfinished.reduce((sum, j) => sum + (j.outdated ? j.ready : j.succeeded > 0 ? j.active : j.parallelism), 0);
  const raisable = unfinished.filter((j) => !j.outdated && j.succeeded === 0).at(-1);
  if (wanted > running) {
    return raisable
      ? { action: "scale", name: raisable.name, parallelism: raisable.parallelism + (wanted - running) }
      : { action: "create", parallelism: wanted - running };
  }
  if (raisable?.suspended) return { action: "none", reason: "queued_behind_suspended" };
  return { action: "none", reason: wanted === 0 ? "no_work" : "enough_pods" };
}
