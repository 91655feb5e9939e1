import { readFileSync, writeFileSync } from "node:fs";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos, streetBackground } from "../helpers/photos.ts";
import { startService, withModels, type TestService } from "../helpers/service.ts";
import { create, photograph, submitAndWait } from "../helpers/walkaround.ts";

/** Uploads one photo per required angle (`override` replaces some), submits, and returns the settled inspection. */
async function inspect(
  svc: TestService,
  key: string,
  override: Record<string, Buffer> = {},
  corrupt: string[] = [],
  truncate: string[] = [],
) {
  const made = await create(svc, key);
  const uploaded = await photograph(made, { open: true, over: Object.entries(override).map(([angle, bytes]) => ({ angle, bytes })) });
  const media = Object.fromEntries(Object.entries(uploaded).map(([angle, photo]) => [angle, photo.media_id as string]));
  // Storage damaged after upload: the stored photo is no longer a JPEG.
  for (const angle of corrupt) writeFileSync(svc.blobPath(photoBlobKey(made.id, media[angle]!)), "not a jpeg any more");
  // Cut short: the header still parses, the image data ends half-way.
  for (const angle of truncate) {
    const path = svc.blobPath(photoBlobKey(made.id, media[angle]!));
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
  }
  const settled = await submitAndWait(svc, key, made);
  return { inspection: settled, media };
}

describe("bad photos and broken models never crash processing", () => {
  it("reports unreadable, too small and car-less photos, with no findings on them", async () => {
    const svc = await startService(withModels);
    try {
      const key = await svc.key();
      const tiny = await sharp(carPhotos(1)[0]!).resize(120, 90).jpeg().toBuffer();
      // A real photo with no car in it, where the damage model alone would report scratches.
      const { inspection, media } = await inspect(svc, key, { left: tiny, rear: await streetBackground() }, ["right"], ["front_right"]);
      expect(inspection.status).toBe("completed");
      const report = await (await svc.api(key, `/v1/inspections/${inspection.id}/report`)).json();
      const photo = (angle: string) => report.photos.find((p: any) => p.media_id === media[angle]);
      expect(photo("left").quality.problems).toContain("too_small");
      expect(photo("right").quality.problems).toEqual(["unreadable"]);
      expect(photo("front_right").quality.problems).toEqual(["unreadable"]);
      const found = (angle: string) => report.findings.filter((f: any) => f.media_id === media[angle]);
      expect(found("left")).toEqual([]);
      expect(found("right")).toEqual([]);
      expect(found("front_right")).toEqual([]);
      // The shipped parts model finds no car part on it: it shows no vehicle, and gets no findings.
      expect(report.model).not.toBeNull();
      expect(photo("rear").quality.problems).toContain("no_vehicle");
      expect(found("rear")).toEqual([]);
    } finally {
      await svc.close();
    }
  }, 90_000);

  it("fails the inspection with processing_error when the model cannot load", async () => {
    const svc = await startService({ DAMAGE_MODEL: "/nonexistent/model.onnx", PROCESSING_MAX_ATTEMPTS: "1" });
    try {
      const key = await svc.key();
      const { inspection } = await inspect(svc, key);
      expect(inspection.status).toBe("failed");
      expect(inspection.failure.code).toBe("processing_error");
      const report = await svc.api(key, `/v1/inspections/${inspection.id}/report`);
      expect(report.status).toBe(409);
      expect((await report.json()).error.code).toBe("report_unavailable");
    } finally {
      await svc.close();
    }
  }, 90_000);

  it("fails with photos_unusable when no vehicle photo can be read", async () => {
    const svc = await startService(withModels);
    try {
      const { inspection } = await inspect(svc, await svc.key(), {}, [...EXTERIOR_ANGLES]);
      expect(inspection.status).toBe("failed");
      expect(inspection.failure.code).toBe("photos_unusable");
    } finally {
      await svc.close();
    }
  }, 90_000);
});
