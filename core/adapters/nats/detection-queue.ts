import { AckPolicy, type JetStreamManager, JetStreamApiError, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { DetectionResult, PhotoToInspect } from "../../ports/detection-runner.ts";

/**
 * Detection as a JetStream work queue: the one place its streams, subjects, consumer and messages
 * are named, for the operator's runner (nats-detection-runner.ts) and the inference workers
 * (inference/worker/inference-worker.ts) alike.
 *
 * - `DETECTION_JOBS` (`detection.jobs.<inspection id>`): work-queue retention, so a job is stored
 *   until a worker acks it. Published with the job id as its message id: within the duplicate
 *   window a job published again (an operator restarted, two replicas racing) is stored once.
 * - `DETECTION_RESULTS` (`detection.results.<inspection id>`): what each job came to, kept a day,
 *   so a runner opened after the result was published still finds it.
 * - `DETECTION_DEAD` (`detection.dead.<inspection id>`): jobs that ran out of deliveries (the
 *   workers died on each), kept for someone to look at.
 */
export const DETECTION_QUEUE = {
  jobs: { stream: "DETECTION_JOBS", subject: (id: string) => `detection.jobs.${id}` },
  results: { stream: "DETECTION_RESULTS", subject: (id: string) => `detection.results.${id}` },
  dead: { stream: "DETECTION_DEAD", subject: (id: string) => `detection.dead.${id}` },
  /** The durable pull consumer every inference process shares, so jobs spread over them. */
  consumer: "inference",
  /** Deliveries of one job, the last of which only records it as dead (see the worker). */
  maxDeliver: 4,
} as const;

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** Longer than an operator takes to restart: a job it publishes again within this is stored once. */
const DUPLICATE_WINDOW_MS = 10 * MINUTE_MS;

const STREAMS: (Partial<StreamConfig> & { name: string })[] = [
  {
    name: DETECTION_QUEUE.jobs.stream,
    subjects: [DETECTION_QUEUE.jobs.subject("*")],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  },
  {
    name: DETECTION_QUEUE.results.stream,
    subjects: [DETECTION_QUEUE.results.subject("*")],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(DAY_MS),
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  },
  {
    name: DETECTION_QUEUE.dead.stream,
    subjects: [DETECTION_QUEUE.dead.subject("*")],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(30 * DAY_MS),
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  },
];

/** A stream that exists with another configuration (an older release's): updated in place. */
const STREAM_NAME_IN_USE = 10058;

/** Makes the three streams where they are missing; every runner and worker calls it at open. */
export async function ensureDetectionStreams(jsm: JetStreamManager): Promise<void> {
  for (const config of STREAMS) {
    try {
      await jsm.streams.add(config);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === STREAM_NAME_IN_USE)) throw error;
      await jsm.streams.update(config.name, config);
    }
  }
}

/** A consumer that exists with another configuration (another ACK wait): updated in place. */
const CONSUMER_EXISTS = 10148;

/** Makes (or updates, where its ack wait changed) the shared consumer the inference workers pull from. */
export async function ensureInferenceConsumer(jsm: JetStreamManager, ackWaitMs: number): Promise<void> {
  const config = { ack_wait: nanos(ackWaitMs), max_deliver: DETECTION_QUEUE.maxDeliver };
  try {
    await jsm.consumers.add(DETECTION_QUEUE.jobs.stream, {
      durable_name: DETECTION_QUEUE.consumer,
      ack_policy: AckPolicy.Explicit,
      ...config,
    });
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === CONSUMER_EXISTS)) throw error;
    await jsm.consumers.update(DETECTION_QUEUE.jobs.stream, DETECTION_QUEUE.consumer, config);
  }
}

/** Jobs waiting for a worker plus jobs a worker holds: what detection's Jobs are scaled by. */
export async function detectionQueueDepth(jsm: JetStreamManager): Promise<number> {
  const info = await jsm.consumers.info(DETECTION_QUEUE.jobs.stream, DETECTION_QUEUE.consumer);
  return info.num_pending + info.num_ack_pending;
}

/**
 * A job: one attempt at one inspection's detection. `jobId` is `<inspection id>.<attempt>`, the
 * same for the same attempt whoever publishes it, so it is the message id of the job and of its result.
 */
/** `locale`: the evidence labels' language (DetectOptions); absent from jobs queued by older versions. */
export type DetectionJob = { jobId: string; inspectionId: string; photos: PhotoToInspect[]; locale?: string | null };

/** What a job came to; `worker` names the process that ran it (host name and pid). */
export type DetectionJobResult = { jobId: string; worker: string } & ({ ok: true; result: DetectionResult } | { ok: false; error: string });

/** A job that ran out of deliveries, as kept in DETECTION_DEAD. */
export type DeadDetectionJob = { job: DetectionJob; deliveries: number; error: string; worker: string };

export const jobIdFor = (inspectionId: string, attempt: number | string) => `${inspectionId}.${attempt}`;
