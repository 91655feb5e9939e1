import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evidenceBlobKey, photoBlobKey } from "../../core/domain/blob-keys.ts";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { startVersityGw, type VersityGw } from "../helpers/go-servers.ts";
import { carPhotos, DATASETS } from "../helpers/photos.ts";
import { startService, withModels, type TestService } from "../helpers/service.ts";
import { create, photograph, submitAndWait } from "../helpers/walkaround.ts";
import { until } from "../helpers/webhook-receiver.ts";

/** A damaged car (a shattered windscreen the shipped model finds), so the inspection has evidence photos. */
const DAMAGED_FRONT = join(DATASETS, "car-damage/valid/images/000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg");
const ANGLES: readonly string[] = REQUIRED_ANGLES;
const fill = carPhotos(ANGLES.length);
const photoFor = (angle: string) => (angle === "front" ? readFileSync(DAMAGED_FRONT) : fill[ANGLES.indexOf(angle)]!);

/**
 * The embedded service with S3_BUCKET set: photos, model inputs and evidence go to a real S3
 * server (versitygw, built from the Go module proxy by the test setup), from the API and from the
 * detection worker threads alike, and an S3 outage is a 503 that leaves nothing half-referenced.
 */
describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("blobs in S3", () => {
  let s3: VersityGw;
  let svc: TestService;
  beforeAll(async () => {
    s3 = await startVersityGw();
    // The AWS SDK's standard chain reads these, in this thread and in the detection threads.
    process.env.AWS_ACCESS_KEY_ID = s3.accessKey;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretKey;
    svc = await startService({ S3_BUCKET: s3.bucket, S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: "true", ...withModels });
  });
  afterAll(async () => {
    await svc?.close();
    await s3?.close();
  });

  /** An inspection with its capture link opened, and uploads through it. */
  async function openCapture() {
    const key = await svc.key();
    const made = await create(svc, key);
    const { base } = made;
    await fetch(base);
    const upload = (angle: string) =>
      fetch(`${base}/photos/${angle}`, { method: "PUT", body: photoFor(angle), headers: { "content-type": "image/jpeg" } });
    const session = async () => (await (await fetch(base)).json()) as { steps: { angle: string; done: boolean }[] };
    const complete = async () => {
      expect((await submitAndWait(svc, key, made)).status).toBe("completed");
      return (await svc.api(key, `/v1/inspections/${made.id}/report`)).json();
    };
    return { key, id: made.id, base, upload, session, complete };
  }

  const inBucket = (key: string) => join(s3.bucketDir, key);

  it("keeps photos, model inputs and evidence in the bucket, serves them, and writes none under DATA_DIR", async () => {
    const { key, id, base, complete } = await openCapture();
    const uploaded = await photograph({ base }, { photos: photoFor });
    const media = Object.fromEntries(ANGLES.map((angle) => [angle, uploaded[angle].media_id as string]));
    // Model inputs were stored on upload, in S3 too.
    expect(readdirSync(inBucket(`model-inputs/${id}`)).length).toBeGreaterThan(0);
    const report = await complete();

    // The detection thread read the photos from S3 (else no finding) and wrote the evidence there.
    const found = report.findings.filter((f: any) => f.media_id === media.front && f.type === "glass_shatter");
    expect(found.length).toBeGreaterThan(0);
    for (const f of report.findings.filter((f: any) => f.evidence_url)) {
      const evidenceId = f.evidence_url.match(/\/v1\/media\/(med_\w+)\//)[1];
      expect(existsSync(inBucket(evidenceBlobKey(id, evidenceId))), f.evidence_url).toBe(true);
    }
    for (const angle of ANGLES) {
      expect(readFileSync(inBucket(photoBlobKey(id, media[angle]!))).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    }
    // Every media URL of the report answers with the JPEG that is in the bucket.
    const urls = [...report.photos.map((p: any) => p.url), ...report.findings.map((f: any) => f.evidence_url).filter(Boolean)];
    expect(urls.length).toBeGreaterThan(ANGLES.length);
    for (const url of urls) {
      const answer = await svc.api(key, new URL(url).pathname);
      expect([answer.status, answer.headers.get("content-type")], url).toEqual([200, "image/jpeg"]);
      expect((await answer.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    // Settled: the model inputs are deleted from S3 as they would be from the directory (versitygw
    // then removes the emptied folder too).
    const inputsLeft = () => (existsSync(inBucket(`model-inputs/${id}`)) ? readdirSync(inBucket(`model-inputs/${id}`)) : []);
    await until("model inputs deleted", inputsLeft, (left) => left.length === 0, 10_000);
    expect(existsSync(join(svc.dataDir, "blobs"))).toBe(false);
  });

  it("answers 503 while S3 is unreachable, references nothing half-written, and recovers", async () => {
    const { key, id, upload, session, complete } = await openCapture();
    const first = await (await upload("front")).json();
    await s3.stop();
    try {
      for (const angle of ["front", "left"]) {
        // A retake of the front and a first photo of the left: neither can be stored.
        const answer = await upload(angle);
        expect(answer.status).toBe(503);
        const body = await answer.json();
        expect(body).toEqual({
          error: {
            type: "api_error",
            code: "service_unavailable",
            message: expect.stringMatching(/unreachable.*retry/),
            param: null,
            request_id: expect.stringMatching(/^req_/),
          },
        });
        expect(answer.headers.get("request-id")).toBe(body.error.request_id);
      }
      // The capture session still answers: the front keeps its first photo, the left has none.
      const steps = Object.fromEntries((await session()).steps.map((s) => [s.angle, s.done]));
      expect([steps.front, steps.left]).toEqual([true, false]);
      expect((await svc.api(key, `/v1/media/${first.media_id}/full.jpg`)).status).toBe(503);
    } finally {
      await s3.start();
    }
    // Back on the same port and directory: the first photo is still there, and the uploads go through.
    expect((await svc.api(key, `/v1/media/${first.media_id}/full.jpg`)).status).toBe(200);
    for (const angle of ANGLES.filter((a) => a !== "front")) expect((await upload(angle)).status).toBe(200);
    const report = await complete();
    expect(report.photos.find((p: any) => p.angle === "front").media_id).toBe(first.media_id);
    expect(readdirSync(inBucket(`photos/${id}`))).toHaveLength(ANGLES.length);
  });
});
