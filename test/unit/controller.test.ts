import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { MemoryEventStore } from "../../core/adapters/memory/memory-event-store.ts";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { reportBlobKey } from "../../core/domain/blob-keys.ts";
import type { DetectionResult, DetectionRunner } from "../../core/ports/detection-runner.ts";
import type { InspectionStore } from "../../core/ports/inspection-store.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import { DEFAULT_PROCESSING_RETRY_SCHEDULE_MS } from "../../core/runtime/config.ts";
import { METRIC, Metrics } from "../../core/runtime/metrics.ts";
import { sample } from "../helpers/prometheus.ts";
import { Signals } from "../../core/runtime/signals.ts";
import { Controller } from "../../operator/controller.ts";
import { sampleInspection } from "../contract/fixtures.ts";

const HOUR = 3_600_000;
const QUALITY = { brightness: 0.5, sharpness: 100, glare: 0, passed: true, problems: [] };

/** A runner whose every call waits for the test to answer it. */
class ScriptedRunner implements DetectionRunner {
  readonly calls: { id: string; resolve(r: DetectionResult): void; reject(e: Error): void }[] = [];
  detect(id: string): Promise<DetectionResult> {
    return new Promise((resolve, reject) => this.calls.push({ id, resolve, reject }));
  }
  async close(): Promise<void> {}
}

/** As kubebuilder's controller tests call Reconcile: a store in memory, a clock the test moves, reconcile(id) called directly. */
function setup() {
  const clock = {
    t: Date.UTC(2026, 10, 23, 12),
    now() {
      return this.t;
    },
  };
  const state = new MemoryState();
  const store = new MemoryInspectionStore(state);
  const events = new MemoryEventStore(state);
  const runner = new ScriptedRunner();
  const blobs = new MemoryBlobStore();
  const report = async (id: string) => JSON.parse((await blobs.get(reportBlobKey(id)))!.toString());
  const controllerOver = (over: InspectionStore, with_ = runner, more: Partial<ConstructorParameters<typeof Controller>[0]> = {}) =>
    new Controller({
      store: over,
      blobs,
      runner: with_,
      signals: new Signals(clock),
      clock,
      log: pino({ level: "silent" }),
      publicUrl: "http://localhost",
      pollMs: 60_000,
      maxProcessingAttempts: 2,
      processingRetryScheduleMs: DEFAULT_PROCESSING_RETRY_SCHEDULE_MS,
      shutdownGraceMs: 0,
      ...more,
    });
  const controller = controllerOver(store);
  const make = async (overrides: Partial<InspectionRecord> = {}) => {
    const r = sampleInspection({ createdAt: clock.t, updatedAt: clock.t, expiresAt: clock.t + HOUR, ...overrides });
    await store.create(r, `token-${r.id}`, (a) => ({ id: `evt_${a.id.slice(5)}`, type: "inspection.created", data: "{}" }));
    return r;
  };
  const statusOf = async (id: string) => (await store.getById(id))!.status;
  const types = async (id: string) => (await events.forInspection({ accountId: "acct_a", livemode: false }, id)).map((e) => e.type);
  /** Stores a readable front photo, so a submission has something to detect on. */
  const withPhoto = async (r: InspectionRecord) => {
    await store.putPhoto(
      {
        inspectionId: r.id,
        angle: "front",
        slot: null,
        part: null,
        mediaId: `med_${r.id}`,
        width: 640,
        height: 480,
        quality: QUALITY,
        tries: 1,
        capturedAt: clock.t,
      },
      {
        id: `med_${r.id}`,
        accountId: r.accountId,
        livemode: false,
        inspectionId: r.id,
        kind: "photo",
        blobKey: "b",
        bytes: 1,
        etag: "e",
        width: 640,
        height: 480,
        createdAt: clock.t,
      },
    );
    return { model: null, photos: [{ mediaId: `med_${r.id}`, readable: true, quality: QUALITY }], detections: [] };
  };
  return { clock, store, runner, controller, controllerOver, make, statusOf, types, report, withPhoto };
}

/** Lets the runner's answer and the controller's bookkeeping after it run. */
const settle = () => new Promise((r) => setTimeout(r, 10));

describe("Controller.reconcile(id)", () => {
  it("moves an opened inspection to in_progress, with its event, and looks again when its link expires", async () => {
    const { clock, store, controller, make, statusOf, types } = setup();
    const r = await make();
    expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: HOUR });
    expect(await statusOf(r.id)).toBe("created");
    await store.recordOpened(r.id, clock.t + 1_000);
    clock.t += 2_000;
    expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: HOUR - 2_000 });
    expect(await statusOf(r.id)).toBe("in_progress");
    expect(await types(r.id)).toEqual(["inspection.created", "inspection.in_progress"]);
    // Reconciled: nothing is left for a poll to find.
    expect(await store.needingReconcile(clock.t, 10)).toEqual([]);
  });

  it("expires an open link at expires_at, and not before", async () => {
    const { clock, controller, make, statusOf } = setup();
    const r = await make();
    clock.t += HOUR - 1;
    await controller.reconcile(r.id);
    expect(await statusOf(r.id)).toBe("created");
    clock.t += 1;
    expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: null });
    expect(await statusOf(r.id)).toBe("expired");
  });

  it("takes a submission through processing to completed, running detection once", async () => {
    const { clock, store, runner, controller, make, statusOf, types, report, withPhoto } = setup();
    const r = await make();
    const result = await withPhoto(r);
    await store.recordSubmitRequested(r.id, clock.t);
    // created → in_progress → processing in one reconcile; detection started, so nothing to requeue.
    expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: null });
    expect(await statusOf(r.id)).toBe("processing");
    expect(runner.calls.map((c) => c.id)).toEqual([r.id]);
    // Reconciling again while it runs starts nothing twice.
    await controller.reconcile(r.id);
    expect(runner.calls).toHaveLength(1);
    runner.calls[0]!.resolve(result);
    await settle();
    expect(await statusOf(r.id)).toBe("completed");
    // No VIN was confirmed, so the report asks for review: its event is sent with the completion's.
    expect(await report(r.id)).toMatchObject({ grade: "none", summary: { findings: 0, needs_review: true } });
    expect(await types(r.id)).toEqual([
      "inspection.created",
      "inspection.in_progress",
      "inspection.processing",
      "inspection.completed",
      "inspection.review_required",
    ]);
  });

  it("writes the report before the move: after a crash between the two, the retry completes with the first report", async () => {
    const { clock, store, runner, controllerOver, make, statusOf, report, withPhoto } = setup();
    const r = await make();
    const result = await withPhoto(r);
    await store.recordSubmitRequested(r.id, clock.t);
    // The move to completed fails once, after the report is written: as a process killed between them.
    let crashes = 1;
    const crashing = new Proxy(store, {
      get(target, prop) {
        if (prop === "transition") {
          return async (...args: Parameters<MemoryInspectionStore["transition"]>) => {
            if (args[2] === "completed" && crashes-- > 0) throw new Error("killed between the report and the move");
            return target.transition(...args);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const controller = controllerOver(crashing);
    await controller.reconcile(r.id);
    runner.calls[0]!.resolve(result);
    await settle();
    expect(await statusOf(r.id)).toBe("processing");
    const first = await report(r.id);
    // The retry runs detection again, later, and builds a report of its own; the first one stays.
    clock.t += 60_000;
    await controller.reconcile(r.id);
    runner.calls.at(-1)!.resolve(result);
    await settle();
    expect(await statusOf(r.id)).toBe("completed");
    expect(await report(r.id)).toEqual(first);
    expect((await store.getById(r.id))!.summary).toEqual(first.summary);
  });

  it("a new leader resuming detection whose evidence its predecessor stored completes on its first try, no row twice", async () => {
    const { clock, store, runner, controllerOver, make, statusOf, report, withPhoto } = setup();
    const r = await make();
    const plain = await withPhoto(r);
    const evidence = { mediaId: `med_ev_${r.id}`, blobKey: `evidence/${r.id}.jpg`, bytes: 2, etag: "ev", width: 640, height: 480 };
    const result: DetectionResult = {
      ...plain,
      detections: [
        { mediaId: `med_${r.id}`, type: "dent", part: "hood", severity: "moderate", confidence: 0.8, bbox: [0.1, 0.1, 0.2, 0.2], evidence },
      ],
    };
    await store.recordSubmitRequested(r.id, clock.t);
    // The first leader dies once the evidence rows are stored: no write it makes after that returns.
    let stored = false;
    const dying = new Proxy(store, {
      get(target, prop) {
        if (prop === "transition" || prop === "scheduleProcessingRetry") {
          const write = Reflect.get(target, prop, target).bind(target) as (...args: unknown[]) => Promise<unknown>;
          return (...args: unknown[]) => (stored ? new Promise(() => {}) : write(...args));
        }
        if (prop === "putMedia") {
          return async (...args: Parameters<MemoryInspectionStore["putMedia"]>) => {
            await target.putMedia(...args);
            stored = true;
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await controllerOver(dying).reconcile(r.id);
    runner.calls[0]!.resolve(result);
    await settle();
    expect(stored).toBe(true);
    expect(await statusOf(r.id)).toBe("processing");
    // The standby leads: detection again (a Job's stored result gives the same evidence), then done.
    const next = new ScriptedRunner();
    await controllerOver(store, next).reconcile(r.id);
    next.calls[0]!.resolve(result);
    await settle();
    expect(await statusOf(r.id)).toBe("completed");
    const done = (await store.getById(r.id))!;
    expect(done.processingAttempts).toBe(0);
    expect((await report(r.id)).findings.map((f: { evidence_url: string }) => f.evidence_url)).toEqual([
      `http://localhost/v1/media/${evidence.mediaId}/full.jpg`,
    ]);
    expect(await store.getMedia({ accountId: r.accountId, livemode: false }, evidence.mediaId)).toMatchObject({ kind: "evidence" });
  });

  it("lets a cancel win over a submission recorded with it", async () => {
    const { clock, store, runner, controller, make, statusOf } = setup();
    const r = await make();
    await store.recordSubmitRequested(r.id, clock.t);
    await store.recordCancelRequested(r.id, clock.t);
    await controller.reconcile(r.id);
    expect(await statusOf(r.id)).toBe("canceled");
    expect(runner.calls).toHaveLength(0);
  });

  it("retries failed detection after its wait, then fails the inspection when attempts run out", async () => {
    const { clock, store, runner, controller, make, statusOf } = setup();
    const r = await make();
    await store.recordSubmitRequested(r.id, clock.t);
    await controller.reconcile(r.id);
    runner.calls[0]!.reject(new Error("model crashed"));
    await settle();
    const after = (await store.getById(r.id))!;
    expect(after).toMatchObject({ status: "processing", processingAttempts: 1, processingDueAt: clock.t + 5_000 });
    // Not due yet: nothing starts, and the answer says when it is.
    expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: 5_000 });
    expect(runner.calls).toHaveLength(1);
    clock.t += 5_000;
    await controller.reconcile(r.id);
    expect(runner.calls).toHaveLength(2);
    runner.calls[1]!.reject(new Error("model crashed again"));
    await settle();
    expect(await statusOf(r.id)).toBe("failed");
    expect((await store.getById(r.id))!.failure).toMatchObject({ code: "processing_error" });
  });

  it("waits between detection attempts as its retry schedule says, the last wait repeated", async () => {
    const { clock, store, runner, controllerOver, make } = setup();
    const controller = controllerOver(store, runner, { maxProcessingAttempts: 4, processingRetryScheduleMs: [1_000, 2_000] });
    const r = await make();
    await store.recordSubmitRequested(r.id, clock.t);
    await controller.reconcile(r.id);
    for (const [attempt, wait] of [1_000, 2_000, 2_000].entries()) {
      runner.calls[attempt]!.reject(new Error("model crashed"));
      await settle();
      expect(await store.getById(r.id)).toMatchObject({
        status: "processing",
        processingAttempts: attempt + 1,
        processingDueAt: clock.t + wait,
      });
      expect(await controller.reconcile(r.id)).toEqual({ requeueAfterMs: wait });
      clock.t += wait;
      await controller.reconcile(r.id);
      expect(runner.calls).toHaveLength(attempt + 2);
    }
  });

  it("answers 'again at once' when another writer moved the inspection between its read and its move", async () => {
    const { clock, store, controllerOver, make } = setup();
    const r = await make();
    await store.recordOpened(r.id, clock.t);
    // Another operator moves it first: this controller's compare-and-set then finds it moved.
    const racing = new Proxy(store, {
      get(target, prop) {
        if (prop === "transition") {
          return async (...args: Parameters<MemoryInspectionStore["transition"]>) => {
            await target.transition(args[0], "created", "in_progress", clock.t, {}, () => ({
              id: "evt_other",
              type: "inspection.in_progress",
              data: "{}",
            }));
            return target.transition(...args);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const c = controllerOver(racing, new ScriptedRunner());
    expect(await c.reconcile(r.id)).toEqual({ requeueAfterMs: 0 });
    expect((await store.getById(r.id))!.status).toBe("in_progress");
  });

  it("counts a reconcile that throws on reconcile_errors_total and reconcile_total{result=error}, and retries it", async () => {
    const { store, make, clock, controllerOver } = setup();
    const r = await make();
    let failures = 0;
    // The store is away for this inspection's reads: each reconcile of it throws.
    const away = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (prop !== "getById") return typeof value === "function" ? value.bind(target) : value;
        return async (id: string) => {
          if (id !== r.id) return target.getById(id);
          failures++;
          throw new Error("store away");
        };
      },
    });
    const metrics = new Metrics("operator");
    const signals = new Signals(clock);
    const controller = controllerOver(away, new ScriptedRunner(), { signals, metrics });
    controller.start();
    signals.nudgeController(r.id);
    const errors = async () => (await metrics.registry.getSingleMetric(METRIC.reconcileErrors)!.get()).values;
    // The queue's backoff runs on the injected clock: move it on while waiting.
    for (let i = 0; i < 100 && failures < 2; i++) {
      clock.t += 200;
      await new Promise((done) => setTimeout(done, 20));
    }
    await controller.stop();
    expect(failures).toBeGreaterThanOrEqual(2);
    const counted = (await errors()).find((v) => v.labels.controller === "inspection")?.value ?? 0;
    expect(counted).toBeGreaterThanOrEqual(2);
    // Each is a reconcile too, with result error: the two counts agree; and each took a time.
    const results = (await metrics.registry.getSingleMetric(METRIC.reconciles)!.get()).values;
    expect(results.find((v) => v.labels.controller === "inspection" && v.labels.result === "error")?.value).toBe(counted);
    const runs = sample(await metrics.registry.metrics(), `${METRIC.reconcileSeconds}_count`, { controller: "inspection" });
    expect(runs).toBe(results.reduce((sum, v) => sum + v.value, 0));
  });

  it("answers nothing to do for an unknown id", async () => {
    const { controller } = setup();
    expect(await controller.reconcile("insp_unknown")).toEqual({ requeueAfterMs: null });
  });
});

describe("Controller woken by the store's watch (controller-runtime's informer → queue → reconcile)", () => {
  /**
   * Starts `controller` over `store`, makes an inspection and records its opening with no nudge,
   * then runs `check` on its id (real time) and stops the controller.
   */
  async function openedUnder(t: ReturnType<typeof setup>, controller: Controller, check: (id: string) => Promise<void>): Promise<void> {
    controller.start();
    try {
      const r = await t.make();
      await t.store.recordOpened(r.id, t.clock.t);
      await check(r.id);
    } finally {
      await controller.stop();
    }
  }
  /** Waits (real time) until the inspection is in_progress, or fails after a second. */
  const movesOn = (t: ReturnType<typeof setup>) => (id: string) =>
    vi.waitFor(async () => expect(await t.statusOf(id)).toBe("in_progress"), { timeout: 1_000, interval: 10 });

  it("reconciles an intent the store's watch tells of at once, with no nudge and no list due for an hour", async () => {
    const t = setup();
    await openedUnder(t, t.controllerOver(t.store, undefined, { pollMs: HOUR, resyncMs: HOUR }), movesOn(t));
  });

  it("without the watch (CONTROLLER_WATCH=false) the same intent waits for the poll", async () => {
    const t = setup();
    await openedUnder(t, t.controllerOver(t.store, undefined, { pollMs: HOUR }), async (id) => {
      await new Promise((done) => setTimeout(done, 200));
      expect(await t.statusOf(id)).toBe("created");
    });
  });

  it("finds by its resync what the watch missed", async () => {
    const t = setup();
    // A watch that tells nothing: a lost event, a watch down.
    const deaf = new Proxy(t.store, {
      get(target, prop) {
        if (prop === "watch") return () => () => {};
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await openedUnder(t, t.controllerOver(deaf, undefined, { pollMs: HOUR, resyncMs: 100 }), movesOn(t));
  });
});
