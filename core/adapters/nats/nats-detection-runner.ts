import type { JetStreamManager } from "@nats-io/jetstream";
import { type Msg, nuid, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  DetectionInterrupted,
  type DetectionResult,
  type DetectionRunner,
  type DetectOptions,
  type PhotoToInspect,
} from "../../ports/detection-runner.ts";
import { DETECTION_QUEUE, type DetectionJob, type DetectionJobResult, ensureDetectionStreams, jobIdFor } from "./detection-queue.ts";
import type { Nats } from "./nats-connection.ts";

/** How often a waiting detect looks in the streams again, for a result its subscription missed (while disconnected). */
const RECHECK_MS = 15_000;

type Waiter = {
  inspectionId: string;
  jobId: string;
  job: DetectionJob;
  sub: Subscription;
  resolve(result: DetectionResult): void;
  reject(error: Error): void;
};

export type NatsDetectionRunnerOptions = { log?: Logger; recheckMs?: number };

/**
 * The cluster's detection runner: `detect` queues a job on the DETECTION_JOBS work queue
 * (detection-queue.ts) and waits for its result on `detection.results.<id>`; the inference workers
 * (`vehicle-inspection inference`) run it. Restart-safe: the job id is the inspection id and the
 * controller's attempt number, so an operator that restarts mid-job and asks again for the same
 * attempt finds the job still queued (and waits for it) or its result already stored (and takes
 * it), and never runs it twice; two publishes that race are stored once (the job id is the message id).
 */
export class NatsDetectionRunner implements DetectionRunner {
  readonly #nats: Nats;
  readonly #jsm: JetStreamManager;
  readonly #log: Logger | undefined;
  readonly #waiting = new Set<Waiter>();
  readonly #recheck: NodeJS.Timeout;
  #closed = false;

  private constructor(nats: Nats, jsm: JetStreamManager, options: NatsDetectionRunnerOptions) {
    this.#nats = nats;
    this.#jsm = jsm;
    this.#log = options.log;
    this.#recheck = setInterval(() => this.#recheckAll(), options.recheckMs ?? RECHECK_MS).unref();
  }

  /** Makes the detection streams where they are missing. The connection stays the caller's to close. */
  static async open(nats: Nats, options: NatsDetectionRunnerOptions = {}): Promise<NatsDetectionRunner> {
    const jsm = await nats.js.jetstreamManager();
    await ensureDetectionStreams(jsm);
    return new NatsDetectionRunner(nats, jsm, options);
  }

  async detect(inspectionId: string, photos: PhotoToInspect[], attempt?: number, options?: DetectOptions): Promise<DetectionResult> {
    if (this.#closed) throw new DetectionInterrupted();
    // Without an attempt number the job is this call's alone: nothing found later can be taken for it.
    const jobId = jobIdFor(inspectionId, attempt ?? `once-${nuid.next()}`);
    const { promise, resolve, reject } = Promise.withResolvers<DetectionResult>();
    // Subscribed before looking in the streams, and registered with the server (flush): a result
    // published from now on arrives here, and one published before is found stored.
    const sub = this.#nats.nc.subscribe(DETECTION_QUEUE.results.subject(inspectionId), {
      callback: (error, msg) => {
        if (!error) this.#received(waiter, msg);
      },
    });
    const waiter: Waiter = {
      inspectionId,
      jobId,
      job: { jobId, inspectionId, photos, locale: options?.locale ?? null },
      sub,
      resolve,
      reject,
    };
    this.#waiting.add(waiter);
    try {
      await this.#nats.nc.flush();
      await this.#ensureQueued(waiter);
    } catch (error) {
      this.#settle(waiter, () => reject(error as Error));
    }
    return promise;
  }

  /** Rejects every waiting detect with DetectionInterrupted; their jobs run on, and their results wait in the stream. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#recheck);
    for (const waiter of [...this.#waiting]) this.#settle(waiter, () => waiter.reject(new DetectionInterrupted()));
  }

  /**
   * Takes the job's stored result, or publishes the job where it is neither stored nor queued. The
   * job is looked for before the result: a worker publishes the result before it acks the job, so a
   * job gone from the queue has its result stored by then, and no finished job is published again.
   */
  async #ensureQueued(waiter: Waiter): Promise<void> {
    const queued = await this.#stored(DETECTION_QUEUE.jobs.stream, DETECTION_QUEUE.jobs.subject(waiter.inspectionId), waiter.jobId);
    const stored = await this.#stored(DETECTION_QUEUE.results.stream, DETECTION_QUEUE.results.subject(waiter.inspectionId), waiter.jobId);
    if (stored) {
      this.#log?.info({ inspection_id: waiter.inspectionId, job_id: waiter.jobId }, "detection result found stored");
      this.#take(waiter, stored as DetectionJobResult);
      return;
    }
    if (queued || !this.#waiting.has(waiter)) return;
    const ack = await this.#nats.js.publish(DETECTION_QUEUE.jobs.subject(waiter.inspectionId), JSON.stringify(waiter.job), {
      msgID: waiter.jobId,
    });
    const message = ack.duplicate ? "detection job already queued" : "detection job queued";
    this.#log?.info({ inspection_id: waiter.inspectionId, job_id: waiter.jobId, photos: waiter.job.photos.length }, message);
  }

  /** The last message on a subject, where it belongs to this job. */
  async #stored(stream: string, subject: string, jobId: string): Promise<{ jobId: string } | null> {
    const last = await this.#jsm.streams.getMessage(stream, { last_by_subj: subject });
    const value = last?.json<{ jobId: string }>();
    return value?.jobId === jobId ? value : null;
  }

  #received(waiter: Waiter, msg: Msg): void {
    let message: DetectionJobResult;
    try {
      message = msg.json<DetectionJobResult>();
    } catch {
      return;
    }
    // Results of earlier attempts at the same inspection are not this job's.
    if (message.jobId === waiter.jobId) this.#take(waiter, message);
  }

  #take(waiter: Waiter, message: DetectionJobResult): void {
    if (message.ok) this.#settle(waiter, () => waiter.resolve(message.result));
    else this.#settle(waiter, () => waiter.reject(new Error(`detection failed on ${message.worker}: ${message.error}`)));
  }

  #settle(waiter: Waiter, settle: () => void): void {
    if (!this.#waiting.delete(waiter)) return;
    waiter.sub.unsubscribe();
    settle();
  }

  /** A subscription misses what is published while the connection is down: the streams keep it. */
  #recheckAll(): void {
    for (const waiter of this.#waiting) {
      this.#ensureQueued(waiter).catch((error) =>
        this.#log?.warn({ err: error, inspection_id: waiter.inspectionId }, "checking on a detection job failed; checking again later"),
      );
    }
  }
}
