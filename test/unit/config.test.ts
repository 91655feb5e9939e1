import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_MODELS, loadConfig } from "../../core/runtime/config.ts";

describe("configuration: where blobs live", () => {
  it("is a directory under DATA_DIR unless S3_BUCKET is set", () => {
    expect(loadConfig({ DATA_DIR: "/srv/vi" }).blobs).toEqual({ kind: "fs", dir: join(resolve("/srv/vi"), "blobs") });
  });

  it("is S3 with S3_BUCKET, region us-east-1 and virtual-hosted style unless told", () => {
    expect(loadConfig({ S3_BUCKET: "inspections" }).blobs).toEqual({
      kind: "s3",
      bucket: "inspections",
      endpoint: null,
      region: "us-east-1",
      forcePathStyle: false,
    });
    const env = { S3_BUCKET: "vi-photos", S3_ENDPOINT: "http://127.0.0.1:7070", S3_REGION: "eu-west-1", S3_FORCE_PATH_STYLE: "true" };
    expect(loadConfig(env).blobs).toEqual({
      kind: "s3",
      bucket: "vi-photos",
      endpoint: "http://127.0.0.1:7070",
      region: "eu-west-1",
      forcePathStyle: true,
    });
  });

  it.each([
    [{ S3_BUCKET: "Not_A_Bucket" }, /S3_BUCKET/],
    [{ S3_BUCKET: "inspections", S3_FORCE_PATH_STYLE: "yes" }, /S3_FORCE_PATH_STYLE/],
    [{ S3_BUCKET: "inspections", S3_ENDPOINT: "not a url" }, /S3_ENDPOINT/],
    // Without a bucket, the endpoint would be quietly ignored and the blobs kept on local disk.
    [{ S3_ENDPOINT: "http://127.0.0.1:7070" }, /S3_BUCKET is not/],
  ])("refuses %o at boot", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("configuration: where metrics are served", () => {
  it("is METRICS_PORT, 9464 unless told, and never the API's port", () => {
    expect(loadConfig({}).metricsPort).toBe(9464);
    expect(loadConfig({ METRICS_PORT: "0", PORT: "0" }).metricsPort).toBe(0);
    expect(() => loadConfig({ PORT: "9000", METRICS_PORT: "9000" })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: "9000", METRICS_PORT: "9000" })).toThrow(/METRICS_PORT is PORT/);
  });
});

describe("configuration: detection as Kubernetes Jobs, and the operator's lease", () => {
  const jobs = { DETECTION_JOB_TEMPLATE: "/etc/vi/job.yaml", NATS_URL: "nats://nats:4222", S3_BUCKET: "inspections" };

  it("is off without a template; with one, bounded as told and owned as told", () => {
    expect(loadConfig({}).detectionJobs).toBeNull();
    expect(loadConfig({ ...jobs, DETECTION_JOB_OWNER: "StatefulSet/vi", DETECTION_JOBS_MAX: "8" }).detectionJobs).toEqual({
      templatePath: "/etc/vi/job.yaml",
      owner: { apiVersion: "apps/v1", kind: "StatefulSet", name: "vi" },
      bounds: { minParallelism: 0, maxParallelism: 8, inspectionsPerPod: 4 },
      everyMs: 5_000,
      stuckAfterMs: 600_000,
    });
    expect(loadConfig({}).operatorLease).toEqual({ backend: "nats" });
    expect(loadConfig({}).inspectionStore).toBe("sqlite");
    expect(loadConfig({ INSPECTION_STORE: "kubernetes", NATS_URL: "nats://n:4222", S3_BUCKET: "inspections" }).inspectionStore).toBe(
      "kubernetes",
    );
    // Embedded mode's one pod: the resources are the store, keys and photos stay under DATA_DIR.
    expect(loadConfig({ INSPECTION_STORE: "kubernetes" }).inspectionStore).toBe("kubernetes");
    expect(loadConfig({ OPERATOR_LEASE_BACKEND: "kubernetes" }).operatorLease).toEqual({
      backend: "kubernetes",
      name: "vehicle-inspection-operator",
    });
  });

  it.each([
    [{ DETECTION_JOB_TEMPLATE: "/etc/vi/job.yaml", S3_BUCKET: "inspections" }, /needs NATS_URL and S3_BUCKET/],
    [{ DETECTION_JOB_TEMPLATE: "/etc/vi/job.yaml", NATS_URL: "nats://nats:4222" }, /needs NATS_URL and S3_BUCKET/],
    [{ ...jobs, DETECTION_JOBS_MIN: "5", DETECTION_JOBS_MAX: "2" }, /DETECTION_JOBS_MIN \(5\) is above DETECTION_JOBS_MAX \(2\)/],
    [{ ...jobs, DETECTION_JOB_OWNER: "Pod/vi" }, /DETECTION_JOB_OWNER/],
    [{ OPERATOR_LEASE_BACKEND: "etcd" }, /OPERATOR_LEASE_BACKEND/],
    [{ INFERENCE_EXIT_WHEN_IDLE_MS: "10" }, /INFERENCE_EXIT_WHEN_IDLE_MS/],
    [{ INSPECTION_RESOURCES: "true" }, /INSPECTION_RESOURCES is retired: set INSPECTION_STORE=kubernetes/],
    [
      { INSPECTION_STORE: "kubernetes", NATS_URL: "nats://n:4222", S3_BUCKET: "inspections", INSPECTION_RESOURCES: "true" },
      /INSPECTION_RESOURCES is retired/,
    ],
    [{ INSPECTION_STORE: "etcd" }, /INSPECTION_STORE/],
  ])("refuses %o at boot", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("configuration: retry schedules", () => {
  it("waits 5 s, then 30 s, between detection attempts unless PROCESSING_RETRY_SCHEDULE_MS says otherwise", () => {
    expect(loadConfig({}).processingRetryScheduleMs).toEqual([5_000, 30_000]);
    expect(loadConfig({ PROCESSING_RETRY_SCHEDULE_MS: "1000,60000,600000" }).processingRetryScheduleMs).toEqual([1_000, 60_000, 600_000]);
  });

  it.each(["5s", "1000,", ""])("refuses PROCESSING_RETRY_SCHEDULE_MS=%j at boot", (value) => {
    expect(() => loadConfig({ PROCESSING_RETRY_SCHEDULE_MS: value })).toThrow(/PROCESSING_RETRY_SCHEDULE_MS/);
  });
});

describe("configuration: the models", () => {
  it("runs the shipped close-up model beside the damage model unless CLOSEUP_MODEL says otherwise", () => {
    expect(loadConfig({}).models.closeupModel).toBe(DEFAULT_MODELS.closeup);
    expect(loadConfig({ CLOSEUP_MODEL: "none" }).models.closeupModel).toBeNull();
    expect(loadConfig({ CLOSEUP_MODEL: "models/other.onnx" }).models.closeupModel).toBe(resolve("models/other.onnx"));
  });
});
