import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../core/config.ts";

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
