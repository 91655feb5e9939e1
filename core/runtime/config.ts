import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { DamageClass } from "../domain/damage-types.ts";

const bool = z.enum(["true", "false"]).transform((v) => v === "true");
const retrySchedule = z
  .string()
  .regex(/^\d+(,\d+)*$/, "a comma-separated list of milliseconds")
  .transform((v) => v.split(",").map(Number));

/** The models shipped with the repository (see their model cards). */
const MODELS_DIR = resolve(import.meta.dirname, "../../inference/models");
const DEFAULT_DAMAGE_MODEL = resolve(MODELS_DIR, "damage/model.onnx");
const DEFAULT_PARTS_MODEL = resolve(MODELS_DIR, "parts/model.onnx");
const DEFAULT_JUDGE_MODEL = resolve(MODELS_DIR, "judge/model.onnx");
const DEFAULT_CLOSEUP_MODEL = resolve(MODELS_DIR, "closeups/model.onnx");
/** Where probes and metrics are served when METRICS_PORT is unset (the chart's probes expect it). */
export const DEFAULT_METRICS_PORT = 9464;

export const DEFAULT_MODELS = {
  damage: DEFAULT_DAMAGE_MODEL,
  parts: DEFAULT_PARTS_MODEL,
  judge: DEFAULT_JUDGE_MODEL,
  closeup: DEFAULT_CLOSEUP_MODEL,
};
/**
 * Per-class score thresholds for the shipped damage model, chosen on car-damage/valid (its model
 * card): the F1-best score of each class, but never under 0.25: dent's and scratch's F1-best scores
 * (0.18, 0.23) come with precision of 0.5 or under, so half the findings there would be wrong. Crack,
 * which the model barely finds (AP50 0.05), is held at 0.5.
 */
export const DEFAULT_DETECTION_THRESHOLDS: Readonly<Record<string, number>> = {
  "glass shatter": 0.34,
  "tire flat": 0.64,
  "lamp broken": 0.46,
  dent: 0.25,
  scratch: 0.25,
  crack: 0.5,
} satisfies Record<DamageClass, number>;

/** The contract's retry schedule: after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts in all). */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/**
 * Waits between detection attempts: 5 s, then 30 s, the last repeated for any attempt after
 * (PROCESSING_MAX_ATTEMPTS says how many there are). A failure the model or its node caused rarely
 * lasts, so the first retry comes soon.
 */
export const DEFAULT_PROCESSING_RETRY_SCHEDULE_MS = [5_000, 30_000];

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default("0.0.0.0"),
  DATA_DIR: z.string().default("./data"),
  PUBLIC_URL: z.url().optional(),
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: bool.default(false),
  RATE_LIMIT_LIVE_PER_SECOND: z.coerce.number().int().positive().default(100),
  RATE_LIMIT_TEST_PER_SECOND: z.coerce.number().int().positive().default(25),
  RATE_LIMIT_FAILED_AUTH_PER_MINUTE: z.coerce.number().int().positive().default(60),
  RATE_LIMIT_CAPTURE_PER_SECOND: z.coerce.number().int().positive().default(20),
  RATE_LIMIT_SIGN_IN_PER_MINUTE: z.coerce.number().int().positive().default(10),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Not in the contract's list: knobs for operators and tests, with the contract's values as defaults.
  WEBHOOK_RETRY_SCHEDULE_MS: retrySchedule.optional(),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  VIN_DECODE_TIMEOUT_MS: z.coerce.number().int().positive().default(3_000),
  INSPECTION_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24 * 7),
  CONTROLLER_POLL_MS: z.coerce.number().int().positive().default(500),
  // The controller is woken by the store's watch and lists the store only this often (its resync);
  // CONTROLLER_WATCH=false: no watch, a list every CONTROLLER_POLL_MS (the wake before the watch).
  CONTROLLER_WATCH: bool.default(true),
  CONTROLLER_RESYNC_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  DETECTION_THREADS: z.coerce.number().int().positive().default(1),
  PROCESSING_MAX_ATTEMPTS: z.coerce.number().int().positive().default(3),
  PROCESSING_RETRY_SCHEDULE_MS: retrySchedule.optional(),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().nonnegative().default(10_000),
  // How long a detection job may go without word from its inference worker before it goes to another.
  // Cluster mode: how long an operator's lease lasts without renewal before a standby takes over.
  OPERATOR_LEASE_MS: z.coerce.number().int().min(1_000).max(300_000).default(15_000),
  INFERENCE_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
  // Cluster mode in Kubernetes: detection runs as Jobs made from this template (a batch/v1 Job in
  // YAML or JSON, the chart's ConfigMap), scaled by the operator with the detection queue.
  DETECTION_JOB_TEMPLATE: z.string().min(1).optional(),
  // What owns the Jobs, `Deployment/<name>` or `StatefulSet/<name>` (apps/v1): deleting it deletes them.
  DETECTION_JOB_OWNER: z
    .string()
    .regex(/^(Deployment|StatefulSet)\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "Deployment/<name> or StatefulSet/<name>")
    .optional(),
  DETECTION_JOBS_MIN: z.coerce.number().int().min(0).max(1000).default(0),
  DETECTION_JOBS_MAX: z.coerce.number().int().min(1).max(1000).default(4),
  DETECTION_JOBS_INSPECTIONS_PER_POD: z.coerce.number().int().min(1).max(1000).default(4),
  DETECTION_JOBS_EVERY_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  // A Job whose pods have had none ready this long is reported stuck (a GPU node may take minutes to come up).
  DETECTION_JOBS_STUCK_AFTER_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
  // Where operator replicas elect their leader: a NATS KV key, or a coordination.k8s.io Lease
  // (named OPERATOR_LEASE_NAME in POD_NAMESPACE), as Kubernetes controllers do.
  OPERATOR_LEASE_BACKEND: z.enum(["nats", "kubernetes"]).default("nats"),
  OPERATOR_LEASE_NAME: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "a Kubernetes object name")
    .default("vehicle-inspection-operator"),
  // Retired: the Inspection resources are kept as the store (INSPECTION_STORE=kubernetes), never as
  // a copy of the SQLite store's records. Still read, to refuse it with the way forward.
  INSPECTION_RESOURCES: bool.default(false),
  // With INSPECTION_STORE=kubernetes, a finished inspection's resource is archived to the blob store
  // and deleted this long after it finished; its record and report stay readable from the archive.
  INSPECTION_RESOURCES_RETENTION_SECONDS: z.coerce.number().int().min(1).max(31_536_000).default(86_400),
  // Where inspections and their events are kept: the SQLite file under DATA_DIR (one machine), or
  // the Inspection resources in POD_NAMESPACE, which every api and operator replica reads and
  // writes (Kubernetes; replicas on several nodes need NATS_URL and S3_BUCKET for what they share besides).
  INSPECTION_STORE: z.enum(["sqlite", "kubernetes"]).default("sqlite"),
  // The namespace the workloads run in (the chart sets it from the downward API).
  POD_NAMESPACE: z.string().min(1).default("default"),
  // An inference worker that has had no job for this long leaves with exit code 0: a Job's pod, done
  // once the queue is empty. Unset: it runs until stopped.
  INFERENCE_EXIT_WHEN_IDLE_MS: z.coerce.number().int().min(100).max(86_400_000).optional(),
  // Where the operator and inference workloads serve /metrics, /healthz and /readyz (0: any free port).
  // Unset, 9464, or any free port when another process of the machine holds 9464.
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  // Detection: a path to an Ultralytics-format ONNX detection model, or "none".
  DAMAGE_MODEL: z.string().default(DEFAULT_DAMAGE_MODEL),
  PARTS_MODEL: z.string().default(DEFAULT_PARTS_MODEL),
  // The whole-photo judgement (inference/models/judge): a damage score for every exterior photo.
  JUDGE_MODEL: z.string().default(DEFAULT_JUDGE_MODEL),
  // Close-ups also go through this detector, its boxes fused with the damage model's (inference/models/closeups).
  CLOSEUP_MODEL: z.string().default(DEFAULT_CLOSEUP_MODEL),
  ONNX_PROVIDER: z.enum(["cpu", "cuda"]).default("cpu"),
  // Looking closer: 1 searches the full frame only; n also searches an n × n grid of tiles.
  DETECTION_TILES: z.coerce.number().int().min(1).max(4).default(1),
  DETECTION_THRESHOLDS: z
    .string()
    .regex(/^([\w ]+=(0(\.\d+)?|1(\.0+)?))(,[\w ]+=(0(\.\d+)?|1(\.0+)?))*$/, "class=score pairs, comma-separated, scores 0-1")
    .transform((v) =>
      Object.fromEntries(
        v
          .split(",")
          .map((pair) => pair.split("="))
          .map(([k, n]) => [k!.trim(), Number(n)]),
      ),
    )
    .optional(),
  // Cluster mode's bus and shared keys: one or more nats:// URLs, comma-separated.
  NATS_URL: z
    .string()
    .regex(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/, "nats:// URLs, comma-separated")
    .optional(),
  // Blobs in S3 instead of DATA_DIR/blobs; credentials from the AWS SDK's standard chain.
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens")
    .optional(),
  S3_ENDPOINT: z.url().optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  S3_FORCE_PATH_STYLE: bool.default(false),
});

export type S3Config = { bucket: string; endpoint: string | null; region: string; forcePathStyle: boolean };
/**
 * Where blobs live, as plain data: the API process and the detection worker threads build their
 * store from the same value (core/adapters/blob-store-from.ts), so the two cannot disagree.
 */
export type BlobStoreConfig = { kind: "fs"; dir: string } | ({ kind: "s3" } & S3Config);

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  publicUrl: string;
  blobs: BlobStoreConfig;
  /** NATS servers for the bus, idempotency keys and API keys (cluster mode); null: SQLite under DATA_DIR. */
  /** Cluster mode: the operator lease's TTL (one active operator among replicas). */
  operatorLeaseMs: number;
  /** Where the operator lease is kept; a Kubernetes Lease has this name in `namespace`. */
  operatorLease: { backend: "nats" } | { backend: "kubernetes"; name: string };
  natsUrl: string | null;
  webhooks: { allowPrivateTargets: boolean; retryScheduleMs: number[]; timeoutMs: number };
  rateLimit: {
    livePerSecond: number;
    testPerSecond: number;
    failedAuthPerMinute: number;
    capturePerSecond: number;
    signInPerMinute: number;
  };
  logLevel: z.infer<typeof EnvSchema>["LOG_LEVEL"];
  inspectionTtlMs: number;
  /** How long a request waits for a VIN's decode; one that runs longer is recorded when it ends (core/vin/vin-decoder.ts). */
  vinDecodeTimeoutMs: number;
  controllerPollMs: number;
  /** The controller's resync with the store's watch on; null: no watch, the store polled every controllerPollMs. */
  controllerResyncMs: number | null;
  detectionThreads: number;
  processingMaxAttempts: number;
  /** Waits between detection attempts; the last is repeated for any attempt after. */
  processingRetryScheduleMs: number[];
  /** How long a stop waits for running detection before leaving it to the next start. */
  shutdownGraceMs: number;
  /** Cluster mode: a job whose inference worker sent no word for this long (it died) is delivered to another. */
  inferenceAckWaitMs: number;
  /** Where the `operator` and `inference` workloads serve their probes and metrics; `api` and `start` serve them on PORT. */
  metricsPort: number;
  /** METRICS_PORT was set: a port taken is an error, not a reason to take another. */
  metricsPortFixed: boolean;
  /** Detection as Kubernetes Jobs (operator/detection-job-scaler.ts); null: inference workers run as they are started. */
  detectionJobs: {
    templatePath: string;
    owner: { apiVersion: "apps/v1"; kind: "Deployment" | "StatefulSet"; name: string } | null;
    bounds: { minParallelism: number; maxParallelism: number; inspectionsPerPod: number };
    everyMs: number;
    stuckAfterMs: number;
  } | null;
  namespace: string;
  /** Where inspections and events are kept (INSPECTION_STORE). */
  inspectionStore: "sqlite" | "kubernetes";
  /** How long a finished inspection's resource stays before it is archived and pruned (INSPECTION_STORE=kubernetes). */
  resourceRetentionMs: number;
  /** An inference worker idle this long exits 0 (a Job's pod); null: never. */
  inferenceExitWhenIdleMs: number | null;
  models: {
    damageModel: string | null;
    partsModel: string | null;
    judgeModel: string | null;
    closeupModel: string | null;
    provider: "cpu" | "cuda";
    thresholds: Record<string, number>;
    tiles: number;
  };
};

export class ConfigError extends Error {}

/** "none" turns a model off; the default path counts only if the repository has that model. */
function modelPath(value: string): string | null {
  if (value === "none") return null;
  if (Object.values(DEFAULT_MODELS).includes(value) && !existsSync(value)) return null;
  return resolve(value);
}

/** The one place that reads process.env: validated once at boot into a typed object. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join("; ")}`);
  }
  const e = parsed.data;
  // An endpoint without a bucket would quietly keep blobs on local disk.
  if (e.S3_ENDPOINT && !e.S3_BUCKET) throw new ConfigError("invalid configuration: S3_ENDPOINT is set, but S3_BUCKET is not");
  if (e.METRICS_PORT !== 0 && e.METRICS_PORT === e.PORT) {
    throw new ConfigError(
      `invalid configuration: METRICS_PORT is PORT (${e.PORT}); metrics are served apart from the API, on a port of their own`,
    );
  }
  if (e.DETECTION_JOBS_MIN > e.DETECTION_JOBS_MAX) {
    throw new ConfigError(
      `invalid configuration: DETECTION_JOBS_MIN (${e.DETECTION_JOBS_MIN}) is above DETECTION_JOBS_MAX (${e.DETECTION_JOBS_MAX})`,
    );
  }
  // The Jobs' pods take their work from NATS and read the photos from S3: they run on other nodes.
  if (e.DETECTION_JOB_TEMPLATE && (!e.NATS_URL || !e.S3_BUCKET)) {
    throw new ConfigError(
      "invalid configuration: DETECTION_JOB_TEMPLATE needs NATS_URL and S3_BUCKET (the Jobs' pods take their work from NATS, their photos from S3)",
    );
  }
  // The projection of the SQLite store's records as resources was retired for one story: where there
  // are Inspection resources, they are the store.
  if (e.INSPECTION_RESOURCES) {
    throw new ConfigError(
      "invalid configuration: INSPECTION_RESOURCES is retired: set INSPECTION_STORE=kubernetes, and the Inspection resources are the store (`start` moves the SQLite store's inspections into them at its first start)",
    );
  }
  const [ownerKind, ownerName] = (e.DETECTION_JOB_OWNER?.split("/") ?? []) as ["Deployment" | "StatefulSet", string];
  const dataDir = resolve(e.DATA_DIR);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ""),
    natsUrl: e.NATS_URL ?? null,
    blobs: e.S3_BUCKET
      ? { kind: "s3", bucket: e.S3_BUCKET, endpoint: e.S3_ENDPOINT ?? null, region: e.S3_REGION, forcePathStyle: e.S3_FORCE_PATH_STYLE }
      : { kind: "fs", dir: join(dataDir, "blobs") },
    webhooks: {
      allowPrivateTargets: e.WEBHOOKS_ALLOW_PRIVATE_TARGETS,
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_RETRY_SCHEDULE_MS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    },
    rateLimit: {
      livePerSecond: e.RATE_LIMIT_LIVE_PER_SECOND,
      testPerSecond: e.RATE_LIMIT_TEST_PER_SECOND,
      failedAuthPerMinute: e.RATE_LIMIT_FAILED_AUTH_PER_MINUTE,
      capturePerSecond: e.RATE_LIMIT_CAPTURE_PER_SECOND,
      signInPerMinute: e.RATE_LIMIT_SIGN_IN_PER_MINUTE,
    },
    logLevel: e.LOG_LEVEL,
    inspectionTtlMs: e.INSPECTION_TTL_HOURS * 3_600_000,
    vinDecodeTimeoutMs: e.VIN_DECODE_TIMEOUT_MS,
    controllerPollMs: e.CONTROLLER_POLL_MS,
    controllerResyncMs: e.CONTROLLER_WATCH ? e.CONTROLLER_RESYNC_MS : null,
    detectionThreads: e.DETECTION_THREADS,
    processingMaxAttempts: e.PROCESSING_MAX_ATTEMPTS,
    processingRetryScheduleMs: e.PROCESSING_RETRY_SCHEDULE_MS ?? DEFAULT_PROCESSING_RETRY_SCHEDULE_MS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    inferenceAckWaitMs: e.INFERENCE_ACK_WAIT_MS,
    metricsPort: e.METRICS_PORT ?? DEFAULT_METRICS_PORT,
    metricsPortFixed: e.METRICS_PORT !== undefined,
    operatorLeaseMs: e.OPERATOR_LEASE_MS,
    operatorLease: e.OPERATOR_LEASE_BACKEND === "kubernetes" ? { backend: "kubernetes", name: e.OPERATOR_LEASE_NAME } : { backend: "nats" },
    detectionJobs: e.DETECTION_JOB_TEMPLATE
      ? {
          templatePath: resolve(e.DETECTION_JOB_TEMPLATE),
          owner: ownerKind ? { apiVersion: "apps/v1", kind: ownerKind, name: ownerName } : null,
          bounds: {
            minParallelism: e.DETECTION_JOBS_MIN,
            maxParallelism: e.DETECTION_JOBS_MAX,
            inspectionsPerPod: e.DETECTION_JOBS_INSPECTIONS_PER_POD,
          },
          everyMs: e.DETECTION_JOBS_EVERY_MS,
          stuckAfterMs: e.DETECTION_JOBS_STUCK_AFTER_MS,
        }
      : null,
    namespace: e.POD_NAMESPACE,
    inspectionStore: e.INSPECTION_STORE,
    resourceRetentionMs: e.INSPECTION_RESOURCES_RETENTION_SECONDS * 1000,
    inferenceExitWhenIdleMs: e.INFERENCE_EXIT_WHEN_IDLE_MS ?? null,
    models: {
      damageModel: modelPath(e.DAMAGE_MODEL),
      partsModel: modelPath(e.PARTS_MODEL),
      judgeModel: modelPath(e.JUDGE_MODEL),
      closeupModel: modelPath(e.CLOSEUP_MODEL),
      provider: e.ONNX_PROVIDER,
      thresholds: { ...DEFAULT_DETECTION_THRESHOLDS, ...e.DETECTION_THRESHOLDS },
      tiles: e.DETECTION_TILES,
    },
  };
}
