import { describe, expect, it } from "vitest";
import { jobState, type ObservedJob, planDetectionJobs, wantedPods } from "../../core/domain/detection-jobs.ts";

const bounds = { minParallelism: 0, maxParallelism: 4, inspectionsPerPod: 3 };
const job = (over: Partial<ObservedJob> = {}): ObservedJob => ({
  name: "detection-a",
  parallelism: 1,
  suspended: false,
  finished: false,
  outdated: false,
  createdAt: 1,
  active: 1,
  ready: 0,
  succeeded: 0,
  ...over,
});

describe("detection Jobs follow the queue", () => {
  it("wants no pod for an empty queue, one per few inspections, within the bounds", () => {
    expect([0, 1, 3, 4, 9, 12, 100].map((d) => wantedPods(d, bounds))).toEqual([0, 1, 1, 2, 3, 4, 4]);
    expect(wantedPods(1, { ...bounds, minParallelism: 2 })).toBe(2);
    expect(wantedPods(0, { ...bounds, minParallelism: 2 })).toBe(0);
  });

  it("creates a Job for work with none running, and none for no work", () => {
    expect(planDetectionJobs(7, [], bounds)).toEqual({ action: "create", parallelism: 3 });
    expect(planDetectionJobs(0, [], bounds)).toEqual({ action: "none", reason: "no_work" });
    // A finished Job's pods are gone: work left needs a new one.
    expect(planDetectionJobs(2, [job({ finished: true, parallelism: 4 })], bounds)).toEqual({ action: "create", parallelism: 1 });
  });

  it("raises the newest unfinished Job to what the queue wants, and never lowers one", () => {
    expect(planDetectionJobs(10, [job({ parallelism: 1 })], bounds)).toEqual({ action: "scale", name: "detection-a", parallelism: 4 });
    const two = [job({ name: "old", parallelism: 1, createdAt: 1 }), job({ name: "new", parallelism: 1, createdAt: 2 })];
    expect(planDetectionJobs(12, two, bounds)).toEqual({ action: "scale", name: "new", parallelism: 3 });
    expect(planDetectionJobs(1, [job({ parallelism: 4 })], bounds)).toEqual({ action: "none", reason: "enough_pods" });
    expect(planDetectionJobs(0, [job({ parallelism: 4 })], bounds)).toEqual({ action: "none", reason: "no_work" });
  });

  it("makes a new Job rather than raise one that is draining (a pod of it exited 0, so it starts no more)", () => {
    const draining = job({ parallelism: 4, active: 1, succeeded: 3 });
    // One pod still running; the queue wants three: two more, in a Job of their own.
    expect(planDetectionJobs(9, [draining], bounds)).toEqual({ action: "create", parallelism: 2 });
    expect(planDetectionJobs(2, [draining], bounds)).toEqual({ action: "none", reason: "enough_pods" });
    // Beside it a Job that can grow carries the growth.
    const growing = job({ name: "detection-b", parallelism: 1, createdAt: 2 });
    expect(planDetectionJobs(12, [draining, growing], bounds)).toEqual({ action: "scale", name: "detection-b", parallelism: 3 });
  });

  it("counts a suspended Job as queued: no second Job beside it, raised as the queue grows", () => {
    expect(planDetectionJobs(3, [job({ suspended: true })], bounds)).toEqual({ action: "none", reason: "queued_behind_suspended" });
    expect(planDetectionJobs(9, [job({ suspended: true })], bounds)).toEqual({ action: "scale", name: "detection-a", parallelism: 3 });
  });

  it("rolls out a new template as a Deployment does: an outdated Job is drained, never raised; its ready pods count, its pending ones not", () => {
    // Made before the upgrade: four pods, all ready. Enough for the queue: no new Job yet, and the old one is left as it is.
    const old = job({ name: "old", outdated: true, parallelism: 4, active: 4, ready: 4 });
    expect(planDetectionJobs(12, [old], bounds)).toEqual({ action: "none", reason: "enough_pods" });
    // Two of them have left, idle: the queue's growth goes to a Job of the current template, never to the old one.
    const leaving = { ...old, active: 2, ready: 2, succeeded: 2 };
    expect(planDetectionJobs(12, [leaving], bounds)).toEqual({ action: "create", parallelism: 2 });
    const current = job({ name: "new", parallelism: 2, createdAt: 2 });
    expect(planDetectionJobs(12, [leaving, current], bounds)).toEqual({ action: "none", reason: "enough_pods" });
    expect(planDetectionJobs(12, [{ ...leaving, active: 0, ready: 0, finished: true }, current], bounds)).toEqual({
      action: "scale",
      name: "new",
      parallelism: 4,
    });
    // Its pods pending (the GPUs or the image the upgrade replaced): they are not capacity, and the old Job is not raised though it is the newest.
    const pending = job({ name: "old", outdated: true, parallelism: 2, active: 2, ready: 0, createdAt: 3 });
    expect(planDetectionJobs(12, [current, pending], bounds)).toEqual({ action: "scale", name: "new", parallelism: 4 });
    // An outdated suspended Job holds nothing back: a current Job is made beside it.
    expect(planDetectionJobs(3, [job({ outdated: true, suspended: true, active: 0 })], bounds)).toEqual({
      action: "create",
      parallelism: 1,
    });
  });

  it("calls a Job stuck only after its pods have had none ready for the whole wait; a suspended one is queued", () => {
    const minute = 60_000;
    expect(jobState(job(), 0, 9 * minute, 10 * minute)).toBe("starting");
    expect(jobState(job(), 0, 10 * minute, 10 * minute)).toBe("stuck");
    expect(jobState(job({ ready: 1 }), null, 60 * minute, 10 * minute)).toBe("running");
    expect(jobState(job({ suspended: true, active: 0 }), 0, 60 * minute, 10 * minute)).toBe("queued");
    expect(jobState(job({ finished: true }), 0, 60 * minute, 10 * minute)).toBe("finished");
  });
});
