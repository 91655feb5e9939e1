import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import { DEFAULT_MODELS, loadConfig } from "../../core/runtime/config.ts";
import { overallGrade } from "../../core/domain/grading.ts";
import { reviewOf } from "../../core/domain/review.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { detectPhotos, type Models } from "../../inference/detection/detect-photos.ts";
import { closeModels, loadModels } from "../../inference/detection/load-models.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { carPhotos, DATASETS, severityPhoto } from "../helpers/photos.ts";
import { withModels } from "../helpers/service.ts";

/** The three crashed cars a customer's walkaround was graded `none` over (issue 36), with their angles. */
const WRECKS = [
  { prefix: "0371", angle: "front" },
  { prefix: "0423", angle: "rear_left" },
  { prefix: "0333", angle: "front_right" },
] as const;

/** A walkaround through processing's pipeline, as the controller runs it, with the report's grade and review. */
async function walkaround(models: Models, photos: { angle: string; bytes: Buffer; part?: string }[]) {
  const blobs: BlobStore = new MemoryBlobStore();
  const toInspect = await Promise.all(
    photos.map(async (p, i) => {
      const mediaId = `med_${i}`;
      await blobs.put(photoBlobKey("insp_test", mediaId), p.bytes, "image/jpeg");
      return {
        mediaId,
        angle: p.angle,
        blobKey: photoBlobKey("insp_test", mediaId),
        quality: await measureQuality(p.bytes),
        part: p.part ?? null,
      };
    }),
  );
  const result = await detectPhotos(blobs, "insp_test", toInspect, models);
  const { status, reasons } = reviewOf({ findings: result.detections, photos: result.photos, vinConfirmed: true, policy: "when_unsure" });
  return { result, grade: overallGrade(result.detections.map((d) => d.severity)), reasons, review: status };
}

describe.skipIf(!existsSync(DEFAULT_MODELS.judge))("the whole photo judged: damaged cars are never called undamaged", () => {
  let models: Models;
  beforeAll(async () => {
    models = await loadModels(loadConfig({ ...process.env, ...withModels }).models);
  });
  afterAll(async () => {
    await closeModels(models);
  });

  it("grades three crashed cars among five clean photos severe, each wreck with a broken part or suspected damage", async () => {
    const clean = carPhotos(5);
    const angles = EXTERIOR_ANGLES.filter((a) => !WRECKS.some((w) => w.angle === a));
    const photos = [
      ...WRECKS.map((w) => ({ angle: w.angle, bytes: severityPhoto(w.prefix) })),
      ...clean.map((bytes, i) => ({ angle: angles[i]!, bytes })),
    ];
    const { result, grade } = await walkaround(models, photos);
    expect(grade).toBe("severe");
    for (const i of [0, 1, 2]) {
      const onWreck = result.detections.filter((d) => d.mediaId === `med_${i}`);
      expect(
        onWreck.some((d) => d.type === "broken_part" || d.type === "damage_suspected"),
        `wreck ${WRECKS[i]!.prefix}`,
      ).toBe(true);
      expect(result.photos[i]!.damageScore).toBeGreaterThan(0.5);
    }
    expect(result.detections.filter((d) => d.type === "broken_part").some((d) => d.severity === "severe")).toBe(true);
    // Every exterior photo is judged, the clean ones too.
    for (const p of result.photos) expect(p.damageScore).toBeTypeOf("number");
  });

  it("leaves a clean walkaround at none, with nobody asked to review it", async () => {
    const photos = carPhotos(8).map((bytes, i) => ({ angle: EXTERIOR_ANGLES[i]!, bytes }));
    const { result, grade, reasons, review } = await walkaround(models, photos);
    expect(result.detections).toEqual([]);
    expect(grade).toBe("none");
    expect(reasons).toEqual([]);
    expect(review).toBe("not_required");
  });

  it("leaves out what the damage model alone sees on no part of the car, on a photo judged clean", async () => {
    // A camouflage-wrapped car (car-parts test te23): a broken lamp at 0.50 on no light, the photo judged 0.02.
    const wrapped = readFileSync(join(DATASETS, "car-parts/testset/JPEGImages/te23.jpg"));
    // A damaged car the judgement calls clean (car-damage-severity 0409, judged 0.02): its dent lies on the hood, and stays.
    const dented = severityPhoto("0409");
    const { result } = await walkaround(models, [
      { angle: "front_left", bytes: wrapped },
      { angle: "front", bytes: dented },
    ]);
    for (const p of result.photos) expect(p.damageScore).toBeLessThan(0.1);
    expect(result.detections.filter((d) => d.mediaId === "med_0")).toEqual([]);
    const onDented = result.detections.filter((d) => d.mediaId === "med_1");
    expect(onDented.map((d) => `${d.type} on ${d.part}`)).toEqual(["dent on hood"]);
  });

  it("names the customer's part on a close-up's findings", async () => {
    const [shatter] = readdirSync(join(DATASETS, "car-damage/valid/images")).filter((f) => f.startsWith("000314_"));
    const closeup = readFileSync(join(DATASETS, "car-damage/valid/images", shatter!));
    const { result } = await walkaround(models, [{ angle: "closeup", bytes: closeup, part: "front_glass" }]);
    const found = result.detections.filter((d) => d.mediaId === "med_0");
    expect(found.length).toBeGreaterThan(0);
    for (const d of found) expect(d.part).toBe("front_glass");
  });
});
