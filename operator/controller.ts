import type { Logger } from "pino";
import { photoBlobKey } from "../core/domain/blob-keys.ts";
import { buildReport } from "../core/domain/build-report.ts";
import { completedReport, storeReport } from "../core/operations/reports.ts";
import type { Integrity, Report } from "../core/schemas/report.ts";
import { type IndexedPhoto, PhotoIndex } from "../core/operations/photo-index.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import type { BlobStore } from "../core/ports/blob-store.ts";
import { awaitsDetection, dueMove, lookAgainAt } from "../core/domain/reconcile-rules.ts";
import { eventTypeFor, isTerminal, nextStatus, REVIEW_REQUIRED, type Status, type Trigger } from "../core/domain/state-machine.ts";
import type { ReviewPolicy } from "../core/domain/review.ts";
import { sameVehicle } from "../core/domain/same-vehicle.ts";
import { newId } from "../core/domain/ids.ts";
import type { DetectionResult, DetectionRunner } from "../core/ports/detection-runner.ts";
import type { InspectionStore, TransitionPatch } from "../core/ports/inspection-store.ts";
import type { InspectionRecord, PhotoRecord } from "../core/ports/records.ts";
import type { Signals } from "../core/runtime/signals.ts";
import { type Clock, formatTimestamp } from "../core/runtime/time.ts";
import { eventPayload } from "../core/views/inspection-view.ts";
import { isExterior } from "../core/schemas/capture.ts";
import { WorkQueue } from "./work-queue.ts";

export type ControllerOptions = {
  store: InspectionStore;
  /** Where reports are written (core/operations/reports.ts). */
  blobs: BlobStore;
  runner: DetectionRunner;
  signals: Signals;
  clock: Clock;
  log: Logger;
  publicUrl: string;
  /**
   * Without `resyncMs`: how often the store is listed for what is due, the only way this controller
   * hears of what it is not nudged about. With it, the wait before listing again after a full page.
   */
  pollMs: number;
  /**
   * Driven by the store's watch (InspectionStore.watch), as controller-runtime's controllers are by
   * their informers: each write it tells of queues that inspection at once, and the store is listed
   * only this often, a resync that finds what the watch missed and what falls due by the clock.
   * Absent: no watch, the store listed every pollMs (CONTROLLER_WATCH=false).
   */
  resyncMs?: number;
  maxProcessingAttempts: number;
  /** Waits between processing attempts (PROCESSING_RETRY_SCHEDULE_MS); the last is repeated for any attempt after. */
  processingRetryScheduleMs: readonly number[];
  /** How long stop() waits for detection already started before abandoning what is unfinished (see stop). */
  shutdownGraceMs: number;
  /**
   * Run once an inspection has reached a terminal state, to drop what only processing reads (the
   * photos' model inputs). Not awaited by the move; a failure is logged and not retried, since what
   * it drops is a cache that nothing reads again.
   */
  settled?: (r: InspectionRecord) => Promise<void>;
  /** Where detection's duration and the work queue's depth are recorded. */
  metrics?: Metrics;
  /** Told of each move and each failed detection attempt (Kubernetes Events, where there is an API server). */
  recorder?: {
    moved(after: InspectionRecord, from: Status): void;
    detectionFailed(r: InspectionRecord, attempt: number, error: unknown): void;
  };
  /** The review policy a finished inspection's report follows: its own, else its account's (when_unsure when not given). */
  reviewPolicyOf?: (r: InspectionRecord) => Promise<ReviewPolicy>;
};

/** Inspections queued from one list of the store at most. */
const LIST_PAGE = 200;

/** EXIF times carry no zone and are read as UTC: a photo counts as taken before its link only beyond any zone's offset. */
const ANY_TIME_ZONE_MS = 14 * 3_600_000;

/**
 * The only writer of inspection status. Level-driven: each pass reads what is due (intents, links
 * past expires_at, processing without a result) and moves it by the state machine's table; a move
 * and its event are one transaction, so a crash at any point leaves either both or neither, and the
 * next pass (after a restart too) picks up where the last one stopped. Woken as controller-runtime's
 * controllers are: the store's watch (or a nudge) queues an inspection's id, a worker reconciles it,
 * and a periodic list of what is due (the resync) repairs whatever a wake-up missed.
 */
export class Controller {
  readonly #o: ControllerOptions;
  /** Inspections whose detection runs in this process, each with its run; a restart forgets them and re-runs detection. */
  readonly #processing = new Map<string, Promise<void>>();
  /** Runs a stop gave up waiting for: how they end is an interruption, not an attempt. */
  readonly #abandoned = new Set<string>();
  /** Inspections this process failed and scheduled again, so that picking one up is a retry, not a resume. */
  readonly #retrying = new Set<string>();
  readonly #queue: WorkQueue;
  /**
   * The account's photos, one index for the process's life: it holds each account's photos in
   * memory once read and then reads only what is new, so a completion does not read the whole log again.
   */
  readonly #photoIndex: PhotoIndex;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | null = null;
  #stopped = false;
  #unsubscribe: (() => void)[] = [];

  constructor(options: ControllerOptions) {
    this.#o = options;
    this.#photoIndex = new PhotoIndex(options.blobs);
    this.#queue = new WorkQueue({
      clock: options.clock,
      handle: async (id) => {
        const { requeueAfterMs } = await this.reconcile(id);
        // What is due only after the next list is not held here: the list finds it (expired links,
        // detection due), so a store of open inspections does not pile up in this process's memory.
        return requeueAfterMs !== null && requeueAfterMs <= this.#listEveryMs ? requeueAfterMs : null;
      },
      onResult: (result, seconds) => {
        options.metrics?.reconciles.inc({ controller: "inspection", result });
        options.metrics?.reconcileSeconds.observe({ controller: "inspection" }, seconds);
      },
      // Counted with result "error" too: the two counts agree, as controller-runtime's do.
      onError: (id, error, retryInMs) => {
        options.metrics?.reconcileErrors.inc({ controller: "inspection" });
        options.log.error({ err: error, inspection_id: id, retry_in_ms: retryInMs }, "reconcile failed; this inspection is retried");
      },
    });
    options.metrics?.queueDepth("controller", () => this.#queue.dueNow());
  }

  /** How often the store is listed: the resync of a watching controller, else the poll. */
  get #listEveryMs(): number {
    return this.#o.resyncMs ?? this.#o.pollMs;
  }

  start(): void {
    this.#unsubscribe = [
      this.#o.signals.onNudge((id) => (id ? this.#queue.add(id) : this.#poll())),
      ...(this.#o.resyncMs === undefined ? [] : [this.#o.store.watch((id) => this.#queue.add(id))]),
    ];
    this.#poll();
  }

  /**
   * Starts nothing more, then waits up to shutdownGraceMs for the detection already started. What is
   * unfinished at the deadline is abandoned: a restart is not a failed attempt, so if closing the
   * runner ends it, nothing is counted, the inspection stays `processing`, and the next start runs
   * it again at once. If it finishes after all (the runner lets a thread finish its inference), its
   * result is kept.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const stop of this.#unsubscribe) stop();
    clearTimeout(this.#timer);
    await this.#polling;
    await this.#queue.stop();
    if (this.#processing.size === 0) return;
    const grace = this.#o.shutdownGraceMs;
    this.#o.log.info({ inspection_ids: [...this.#processing.keys()], grace_ms: grace }, "waiting for running detection");
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(this.#processing.values()), new Promise((r) => (deadline = setTimeout(r, grace)))]);
    clearTimeout(deadline);
    if (this.#processing.size === 0) return;
    for (const id of this.#processing.keys()) this.#abandoned.add(id);
    this.#o.log.warn({ inspection_ids: [...this.#abandoned], grace_ms: grace }, "detection unfinished at the shutdown deadline");
  }

  /**
   * Queues what the store says is due (intents recorded, by any process; links past expires_at;
   * detection due), then again every resyncMs (watching) or pollMs: level-driven, so what a wake-up
   * missed is found. A full page is followed by the next after pollMs, so a backlog is not read
   * a page per resync.
   */
  #poll(): void {
    if (this.#stopped || this.#polling) return;
    clearTimeout(this.#timer);
    let next = this.#listEveryMs;
    this.#polling = (async () => {
      const due = await this.#o.store.needingReconcile(this.#o.clock.now(), LIST_PAGE);
      for (const r of due) this.#queue.add(r.id);
      if (due.length >= LIST_PAGE) next = Math.min(next, this.#o.pollMs);
    })()
      .catch((error) => this.#o.log.error({ err: error }, "controller poll failed; retrying on the next poll"))
      .finally(() => {
        this.#polling = null;
        if (!this.#stopped) this.#timer = setTimeout(() => this.#poll(), next).unref();
      });
  }

  /**
   * Brings one inspection where its intents and the clock say it should be, as kubebuilder's
   * Reconcile does for one key: cancel first, then the customer's moves, expiry, then detection.
   * Answers when to look again (its link's expiry, its next detection attempt), or null when only
   * a new intent can move it. An error is thrown to the queue, which retries this key with backoff.
   */
  async reconcile(id: string): Promise<{ requeueAfterMs: number | null }> {
    const initial = await this.#o.store.getById(id);
    if (!initial) return { requeueAfterMs: null };
    let r: InspectionRecord = initial;
    for (let step = 0; step < 4; step++) {
      const move = dueMove(r, this.#o.clock.now());
      if (!move) break;
      const after = await this.#move(r, move.on, move.patch);
      // Moved meanwhile by another writer (a second operator, say): read it again at once.
      if (!after) return { requeueAfterMs: 0 };
      r = after;
    }
    const now = this.#o.clock.now();
    if (!this.#stopped && awaitsDetection(r) && !this.#processing.has(r.id) && (r.processingDueAt ?? 0) <= now) {
      this.#startProcessing(r, r === initial);
    }
    if (initial.reconcileGeneration > 0) await this.#o.store.clearReconcile(id, initial.reconcileGeneration);
    const at = lookAgainAt(r);
    return { requeueAfterMs: at === null || this.#processing.has(r.id) ? null : Math.max(0, at - now) };
  }

  async #move(r: InspectionRecord, on: Trigger, patch: TransitionPatch): Promise<InspectionRecord | null> {
    const to = nextStatus(r.status, on);
    if (!to) return null;
    const after = await this.#o.store.transition(r.id, r.status, to, this.#o.clock.now(), patch, (a) => {
      const types = [eventTypeFor(a.status), ...(a.status === "completed" && a.summary?.needs_review ? [REVIEW_REQUIRED] : [])];
      return types.map((type) => {
        const id = newId("evt");
        return { id, type, data: eventPayload(id, type, a, this.#o.publicUrl) };
      });
    });
    if (after) {
      this.#o.log.info({ inspection_id: r.id, from: r.status, to }, "inspection moved");
      this.#o.recorder?.moved(after, r.status);
      this.#o.signals.changed(r.id);
      if (isTerminal(to)) this.#retrying.delete(r.id);
      if (isTerminal(to) && this.#o.settled) {
        this.#o
          .settled(after)
          .catch((error) => this.#o.log.warn({ err: error, inspection_id: r.id }, "clean-up after the inspection settled failed"));
      }
    }
    return after;
  }

  /** `found` says the inspection was already `processing` when read: a retry, or work from before this start. */
  #startProcessing(r: InspectionRecord, found: boolean): void {
    if (found) {
      const message = this.#retrying.delete(r.id) ? "retrying detection" : "resuming detection";
      this.#o.log.info({ inspection_id: r.id, attempts: r.processingAttempts }, message);
    }
    const run = this.#process(r)
      .catch((error) => (this.#abandoned.has(r.id) ? this.#interrupted(r, error) : this.#processingFailed(r, error)))
      // Recording the failure can fail too (the store unreachable): the inspection stays `processing`
      // and the next pass, or the next start, runs it again.
      .catch((error) => this.#o.log.error({ err: error, inspection_id: r.id }, "recording a detection failure failed"))
      .finally(() => {
        this.#processing.delete(r.id);
        this.#abandoned.delete(r.id);
        this.#queue.add(r.id);
      });
    this.#processing.set(r.id, run);
  }

  async #process(r: InspectionRecord): Promise<void> {
    const photos = await this.#o.store.photos(r.id);
    const media = photos.map((p) => ({
      mediaId: p.mediaId,
      angle: p.angle,
      blobKey: photoBlobKey(r.id, p.mediaId),
      quality: p.quality,
      part: p.part,
    }));
    const started = performance.now();
    const observe = (outcome: string) => this.#o.metrics?.detectionSeconds.observe({ outcome }, (performance.now() - started) / 1000);
    let result: DetectionResult;
    try {
      result = await this.#o.runner.detect(r.id, media, r.processingAttempts, { locale: r.capture.locale });
    } catch (error) {
      observe("failed");
      throw error;
    }
    const current = await this.#o.store.getById(r.id);
    if (!current || !awaitsDetection(current)) return; // canceled meanwhile: the result is not wanted
    const exterior = new Set(photos.filter((p) => isExterior(p.angle)).map((p) => p.mediaId));
    if (!result.photos.some((p) => p.readable && exterior.has(p.mediaId))) {
      observe("unusable");
      await this.#move(current, "processing_failed", {
        failure: { code: "photos_unusable", message: "None of the vehicle photos could be read." },
      });
      return;
    }
    const now = this.#o.clock.now();
    // Evidence photos were stored by the detection runner; they become media of the inspection here.
    for (const d of result.detections) {
      if (!d.evidence) continue;
      const e = d.evidence;
      await this.#o.store.putMedia({
        id: e.mediaId,
        accountId: current.accountId,
        livemode: current.livemode,
        inspectionId: current.id,
        kind: "evidence",
        blobKey: e.blobKey,
        bytes: e.bytes,
        etag: e.etag,
        width: e.width,
        height: e.height,
        createdAt: now,
      });
    }
    const baseline = await this.#baselineReport(current);
    const report = buildReport({
      inspection: current,
      photos,
      result,
      publicUrl: this.#o.publicUrl,
      now,
      newFindingId: () => newId("fnd"),
      evidenceMediaIds: result.detections.map((d) => d.evidence?.mediaId ?? null),
      reviewPolicy: await (this.#o.reviewPolicyOf?.(current) ?? current.reviewPolicy ?? "when_unsure"),
      baseline,
      ...(await this.#integrity(current, photos, baseline)),
    });
    observe("completed");
    // The report first, then the move: a crash between them leaves a report the retry keeps (storeReport).
    const stored = await storeReport(this.#o.blobs, current.id, report);
    // A report stored by an earlier version (a crash between the two writes, across an upgrade) lacks needs_review and new_findings.
    await this.#move(current, "report_stored", {
      completedAt: now,
      summary: { ...stored.summary, needs_review: stored.summary.needs_review === true, new_findings: stored.summary.new_findings ?? null },
    });
  }

  /**
   * The baseline's report as it reads now, its review applied. A baseline was completed when this
   * inspection was created and completed inspections never move, so it is there; a store that lost it
   * leaves the report without a comparison rather than failing the inspection.
   */
  async #baselineReport(r: InspectionRecord): Promise<Report | null> {
    const baseline = r.baselineInspectionId ? await this.#o.store.getById(r.baselineInspectionId) : null;
    if (baseline?.status !== "completed") return null;
    return JSON.parse(await completedReport(this.#o, baseline)) as Report;
  }

  /**
   * What the photo index tells of this inspection's photos (core/operations/photo-index.ts). Reused: a picture
   * sent before in another inspection of the account, or one whose camera time is well before the
   * capture link was made. The vehicle: whether the exterior photos, and the baseline's, show one
   * (core/domain/same-vehicle.ts, from the paints read on upload). A photo missing from the index
   * (sent before it existed) is not judged.
   */
  async #integrity(r: InspectionRecord, photos: PhotoRecord[], baseline: Report | null) {
    const index = this.#photoIndex;
    const indexed = new Map(await Promise.all(photos.map(async (p) => [p.mediaId, await index.get(r, p.mediaId)] as const)));
    const baselinePhotos = (baseline?.photos ?? []).filter((p) => isExterior(p.angle));
    const baselinePaints = await Promise.all(baselinePhotos.map(async (p) => (await index.get(r, p.media_id))?.paint ?? null));
    const vehicle = sameVehicle([
      ...baselinePhotos.map((p, i) => ({ mediaId: p.media_id, paint: baselinePaints[i]!, baseline: true })),
      ...photos
        .filter((p) => isExterior(p.angle))
        .map((p) => ({ mediaId: p.mediaId, paint: indexed.get(p.mediaId)?.paint ?? null, baseline: false })),
    ]);
    return { reused: await this.#reusedPhotos(r, photos, indexed), vehicle };
  }

  async #reusedPhotos(
    r: InspectionRecord,
    photos: PhotoRecord[],
    indexed: Map<string, IndexedPhoto | null>,
  ): Promise<Integrity["reused_photos"]> {
    const judged = await Promise.all(
      photos.map(async (p): Promise<Integrity["reused_photos"][number] | null> => {
        const photo = indexed.get(p.mediaId);
        if (!photo) return null;
        const first = await this.#photoIndex.firstSent(r, photo);
        const taken_at = formatTimestamp(photo.takenAt);
        if (first) return { media_id: p.mediaId, inspection: first.inspectionId, reason: "sent_before", taken_at };
        if (photo.takenAt !== null && photo.takenAt < r.createdAt - ANY_TIME_ZONE_MS)
          return { media_id: p.mediaId, inspection: null, reason: "taken_before_link", taken_at };
        return null;
      }),
    );
    return judged.filter((x) => x !== null);
  }

  /** A run a stop abandoned was ended by closing the runner: not an attempt, so nothing is recorded. */
  #interrupted(r: InspectionRecord, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.#o.log.warn(
      { inspection_id: r.id, attempts: r.processingAttempts, reason },
      "detection interrupted by shutdown; the next start runs it again",
    );
  }

  async #processingFailed(r: InspectionRecord, error: unknown): Promise<void> {
    const attempts = r.processingAttempts + 1;
    this.#o.log.error({ err: error, inspection_id: r.id, attempt: attempts }, "detection failed");
    this.#o.recorder?.detectionFailed(r, attempts, error);
    const current = await this.#o.store.getById(r.id);
    if (!current || !awaitsDetection(current)) return;
    if (attempts >= this.#o.maxProcessingAttempts) {
      await this.#move(current, "processing_failed", {
        failure: { code: "processing_error", message: "Detection and grading could not finish after several attempts." },
      });
      return;
    }
    const schedule = this.#o.processingRetryScheduleMs;
    const wait = schedule[Math.min(attempts - 1, schedule.length - 1)]!;
    await this.#o.store.scheduleProcessingRetry(r.id, attempts, this.#o.clock.now() + wait);
    this.#retrying.add(r.id);
  }
}
