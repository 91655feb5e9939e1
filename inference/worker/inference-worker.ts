import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import {
  DETECTION_QUEUE,
  type DeadDetectionJob,
  type DetectionJob,
  type DetectionJobResult,
  ensureDetectionStreams,
  ensureInferenceConsumer,
} from "../../core/adapters/nats/detection-queue.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { pullOne } from "../../core/adapters/nats/pull-one.ts";
import type { Metrics } from "../../core/runtime/metrics.ts";
import type { Config } from "../../core/runtime/config.ts";
import { DetectionInterrupted, type DetectionRunner } from "../../core/ports/detection-runner.ts";
import { WorkerPoolRunner } from "../detection/worker-pool-runner.ts";

/** How long one pull for a job waits on the server before the next (the client's default is 30 s). */
const PULL_EXPIRES_MS = 10_000;
/** The longest pause between progress reports on a running job (working()), so ack_wait ends only when the process has died. */
const MAX_HEARTBEAT_MS = 10_000;
/** Tries at publishing a job's result (NATS briefly away), a second apart, before the job is handed back. */
const PUBLISH_TRIES = 5;

export type InferenceWorker = {
  name: string;
  /** Its NATS connection, for /readyz. */
  nats: Nats;
  /** Settles once the worker has had no job for INFERENCE_EXIT_WHEN_IDLE_MS (never where that is unset). */
  idle: Promise<void>;
  close(): Promise<void>;
};

export type InferenceWorkerOptions = {
  config: Config;
  log: Logger;
  /** The detection to run; by default worker threads over the configured models and blob store. */
  runner?: DetectionRunner;
  /** Where each job's duration and the queue's depth are recorded. */
  metrics?: Metrics;
};

/**
 * A detection worker of the cluster mode: it pulls jobs from the DETECTION_JOBS work queue through
 * the durable consumer every inference process shares (so jobs spread over the processes), runs
 * each on a worker thread, publishes the result (its message id the job id: a job run twice is
 * stored once) and only then acks. A job whose worker dies mid-run is delivered again once ack_wait
 * passes; a job delivered for the last time (every earlier worker died on it) is recorded as failed
 * and dead, not run again. One job at a time per detection thread.
 */
export async function startInferenceWorker(options: InferenceWorkerOptions): Promise<InferenceWorker> {
  const { config } = options;
  if (!config.natsUrl) throw new Error("the inference worker needs NATS_URL");
  const name = `${hostname()}-${process.pid}`;
  const log = options.log.child({ worker: name });
  const nats = await connectNats({
    url: config.natsUrl,
    name: `vehicle-inspection-inference-${name}`,
    onStatus: (status) => log.info({ nats: status.type }, "NATS connection status"),
    // Started before NATS is up (a Job's pod, a node's restart): wait for it rather than exit.
    waitForServer: true,
  });
  try {
    const jsm = await nats.js.jetstreamManager();
    await ensureDetectionStreams(jsm);
    await ensureInferenceConsumer(jsm, config.inferenceAckWaitMs);
    const consumer = await nats.js.consumers.get(DETECTION_QUEUE.jobs.stream, DETECTION_QUEUE.consumer);
    const runner = options.runner ?? new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
    // Jobs no worker has taken yet: what an autoscaler of workers (part 2's Jobs) follows.
    options.metrics?.queueDepth("detection", async () => (await consumer.info(true)).num_pending);
    return new Worker({ name, nats, consumer, runner, log, config, metrics: options.metrics }).start();
  } catch (error) {
    await nats.close();
    throw error;
  }
}

type WorkerParts = {
  name: string;
  nats: Nats;
  consumer: Consumer;
  runner: DetectionRunner;
  log: Logger;
  config: Config;
  metrics?: Metrics;
};

class Worker {
  readonly #p: WorkerParts;
  readonly #heartbeatMs: number;
  /** Pulls waiting on the server, stopped on close so that no job is taken after it. */
  readonly #pulls = new Set<ConsumerMessages>();
  /** Jobs running now, each settled when its job has been acked or handed back. */
  readonly #running = new Set<Promise<void>>();
  #loops: Promise<void>[] = [];
  #stopping = false;
  /** Set once close has given up waiting: what detection then throws is the interruption, not the job's fault. */
  #interrupting = false;
  #closing: Promise<void> | undefined;
  /** When a job last started or ended, for the idle exit. */
  #busyAt = Date.now();
  readonly #idle = Promise.withResolvers<void>();
  readonly #pullMs: number;

  constructor(parts: WorkerParts) {
    this.#p = parts;
    // An idle exit is noticed when a pull comes back empty: pulls no longer than the idle time.
    const idleMs = parts.config.inferenceExitWhenIdleMs;
    this.#pullMs = idleMs === null ? PULL_EXPIRES_MS : Math.max(1_000, Math.min(PULL_EXPIRES_MS, idleMs));
    this.#heartbeatMs = Math.min(MAX_HEARTBEAT_MS, Math.max(100, Math.floor(parts.config.inferenceAckWaitMs / 3)));
  }

  start(): InferenceWorker {
    const slots = this.#p.config.detectionThreads;
    this.#loops = Array.from({ length: slots }, () => this.#takeJobs());
    this.#p.log.info(
      { slots, ack_wait_ms: this.#p.config.inferenceAckWaitMs, blobs: this.#p.config.blobs.kind },
      "inference worker started",
    );
    return { name: this.#p.name, nats: this.#p.nats, idle: this.#idle.promise, close: () => (this.#closing ??= this.#close()) };
  }

  /**
   * Stops taking jobs, gives the running ones SHUTDOWN_GRACE_MS to finish (their results published
   * and acked), then interrupts the rest at their next safe point and hands them back to the queue
   * (nak: another worker takes them at once).
   */
  async #close(): Promise<void> {
    this.#stopping = true;
    this.#p.log.info({ running: this.#running.size }, "inference worker stopping");
    for (const pull of this.#pulls) pull.stop();
    const grace = sleep(this.#p.config.shutdownGraceMs, undefined, { ref: false });
    await Promise.race([Promise.all(this.#running), grace]);
    this.#interrupting = true;
    await this.#p.runner.close();
    await Promise.all(this.#loops);
    await this.#p.nats.close();
    this.#p.log.info("inference worker stopped");
  }

  async #takeJobs(): Promise<void> {
    while (!this.#stopping) {
      try {
        const msg = await this.#next();
        if (!msg) {
          this.#noteIfIdle();
          continue;
        }
        this.#busyAt = Date.now();
        if (this.#stopping) {
          msg.nak();
          continue;
        }
        const run = this.#run(msg);
        this.#running.add(run);
        await run.finally(() => {
          this.#running.delete(run);
          this.#busyAt = Date.now();
        });
      } catch (error) {
        if (this.#stopping) break;
        this.#p.log.warn({ err: error }, "pulling a detection job failed; trying again");
        await sleep(1_000);
      }
    }
  }

  /** One job, or null when the pull expired (or was stopped) without one. */
  #next(): Promise<JsMsg | null> {
    return pullOne(this.#p.consumer, this.#pulls, () => this.#stopping, this.#pullMs);
  }

  #noteIfIdle(): void {
    const idleMs = this.#p.config.inferenceExitWhenIdleMs;
    if (idleMs !== null && this.#running.size === 0 && Date.now() - this.#busyAt >= idleMs) this.#idle.resolve();
  }

  async #run(msg: JsMsg): Promise<void> {
    let job: DetectionJob;
    try {
      job = msg.json<DetectionJob>();
    } catch (error) {
      this.#p.log.error({ err: error, subject: msg.subject }, "unreadable detection job dropped");
      msg.term("unreadable job");
      return;
    }
    const delivery = msg.info.deliveryCount;
    const log = this.#p.log.child({ inspection_id: job.inspectionId, job_id: job.jobId, delivery });
    if (delivery >= DETECTION_QUEUE.maxDeliver) return this.#deadLetter(msg, job, log);

    log.info({ photos: job.photos.length }, "detection started");
    const since = Date.now();
    const beat = setInterval(() => msg.working(), this.#heartbeatMs);
    let outcome: DetectionJobResult;
    try {
      const result = await this.#p.runner.detect(job.inspectionId, job.photos, undefined, { locale: job.locale });
      outcome = { jobId: job.jobId, worker: this.#p.name, ok: true, result };
    } catch (error) {
      if (error instanceof DetectionInterrupted || this.#interrupting) {
        log.warn("detection interrupted by shutdown; the job goes back to the queue");
        msg.nak();
        return;
      }
      log.error({ err: error }, "detection failed");
      outcome = { jobId: job.jobId, worker: this.#p.name, ok: false, error: (error as Error).message ?? String(error) };
    } finally {
      clearInterval(beat);
    }
    if (!(await this.#publish(DETECTION_QUEUE.results.subject(job.inspectionId), outcome, job.jobId, msg, log))) return;
    await this.#ack(msg, log);
    this.#p.metrics?.inferenceSeconds.observe({ outcome: outcome.ok ? "completed" : "failed" }, (Date.now() - since) / 1000);
    const findings = outcome.ok ? outcome.result.detections.length : null;
    log.info({ ok: outcome.ok, findings, ms: Date.now() - since }, "detection finished");
  }

  /**
   * The last delivery of a job every earlier worker died on (a photo that crashes the process, a
   * worker killed each time): not run again. Its failed result lets the operator count the attempt;
   * its copy in DETECTION_DEAD stays for someone to look at.
   */
  async #deadLetter(msg: JsMsg, job: DetectionJob, log: Logger): Promise<void> {
    const error = `the job was delivered ${msg.info.deliveryCount} times and no worker finished it`;
    const dead: DeadDetectionJob = { job, deliveries: msg.info.deliveryCount, error, worker: this.#p.name };
    const result: DetectionJobResult = { jobId: job.jobId, worker: this.#p.name, ok: false, error };
    if (!(await this.#publish(DETECTION_QUEUE.dead.subject(job.inspectionId), dead, job.jobId, msg, log))) return;
    if (!(await this.#publish(DETECTION_QUEUE.results.subject(job.inspectionId), result, job.jobId, msg, log))) return;
    msg.term(error);
    log.error({ deliveries: dead.deliveries }, "detection job dead-lettered");
  }

  /** Publishes with the job id as message id (stored once however often it is sent); false, and the job handed back, where NATS stays away. */
  async #publish(subject: string, body: unknown, jobId: string, msg: JsMsg, log: Logger): Promise<boolean> {
    for (let tries = 1; ; tries++) {
      try {
        await this.#p.nats.js.publish(subject, JSON.stringify(body), { msgID: jobId });
        return true;
      } catch (error) {
        if (tries >= PUBLISH_TRIES || this.#interrupting) {
          log.error({ err: error, subject }, "publishing a detection result failed; the job goes back to the queue");
          msg.nak();
          return false;
        }
        msg.working();
        await sleep(1_000);
      }
    }
  }

  async #ack(msg: JsMsg, log: Logger): Promise<void> {
    try {
      await msg.ackAck();
    } catch (error) {
      // The result is stored: a second run after redelivery publishes it again under the same id, stored once.
      log.warn({ err: error }, "acking a detection job failed; it may run again");
    }
  }
}
