import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { modelInputBlobKey, photoBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { DetectionResult, PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { DEFAULT_MODELS, loadConfig } from "../../core/runtime/config.ts";
import { detectPhotos, type Models } from "../../inference/detection/detect-photos.ts";
import { fuseViews } from "../../inference/detection/postprocess.ts";
import { letterbox, letterboxes } from "../../inference/detection/letterbox.ts";
import { closeModels, loadModels } from "../../inference/detection/load-models.ts";
import { BlobModelInputStore, inputSizesFor } from "../../inference/detection/model-input.ts";
import { MIRRORED, mirror } from "../../inference/detection/onnx-detector.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { carPhoto, DAMAGE_VALID } from "../helpers/photos.ts";
import { withModels } from "../helpers/service.ts";

/**
 * Close-ups run through the damage model at full strength (issue 36): processing looks at a close-up
 * as it is and mirrored and fuses the two views' boxes (OnnxDetector's MIRRORED; car-damage `valid`
 * mAP50 0.552 → 0.570), then through the close-up model the same way at its own size, and fuses the
 * four views' boxes at once (detect-closeups.ts; 0.570 → 0.597); a walkaround photo goes through the
 * damage model once.
 */
describe.skipIf(!existsSync(DEFAULT_MODELS.damage) || !existsSync(DEFAULT_MODELS.closeup))(
  "a close-up looked at mirrored, by two models",
  () => {
    let models: Models;
    let blobs: BlobStore;
    let toInspect: PhotoToInspect[];
    let closeup: Buffer;
    beforeAll(async () => {
      models = await loadModels(loadConfig({ ...process.env, ...withModels }).models);
      const shatter = readdirSync(join(DAMAGE_VALID, "images")).find((f) => f.startsWith("000314_"))!;
      closeup = readFileSync(join(DAMAGE_VALID, "images", shatter));
      blobs = new MemoryBlobStore();
      const photos = [
        { angle: "closeup", bytes: closeup, part: "front_glass" },
        { angle: "front", bytes: carPhoto(0), part: null },
      ];
      toInspect = await Promise.all(
        photos.map(async (p, i) => {
          await blobs.put(photoBlobKey("insp_test", `med_${i}`), p.bytes, "image/jpeg");
          return {
            mediaId: `med_${i}`,
            angle: p.angle,
            blobKey: photoBlobKey("insp_test", `med_${i}`),
            quality: await measureQuality(p.bytes),
            part: p.part,
          };
        }),
      );
    });
    afterAll(async () => {
      await closeModels(models);
    });
    // Compared as bytes: a deep equality of 442,368 floats takes vitest minutes.
    const same = (a: Float32Array, b: Float32Array) =>
      Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    const found = (result: DetectionResult, mediaId: string) =>
      result.detections.filter((d) => d.mediaId === mediaId).map(({ type, part, confidence, bbox }) => ({ type, part, confidence, bbox }));

    it("runs each model on the close-up and its mirror image, the damage model once on the walkaround photo", async () => {
      const damage = vi.spyOn(models.damage!, "forward");
      const close = vi.spyOn(models.closeup!, "forward");
      await detectPhotos(blobs, "insp_test", toInspect, models);
      const damageViews = damage.mock.calls.map(([batch]) => batch);
      const closeViews = close.mock.calls.flatMap(([batch]) => batch);
      damage.mockRestore();
      close.mockRestore();

      // The walkaround photo in one view, then the close-up and the close-up mirrored.
      expect(damageViews.map((b) => b.length)).toEqual([1, 2]);
      expect(same(damageViews[0]![0]!, (await letterboxes(carPhoto(0), [models.damage!.size, models.parts!.size]))[0]!.chw)).toBe(true);
      expect(same(damageViews[1]![1]!, mirror(damageViews[1]![0]!, models.damage!.size))).toBe(true);
      // The close-up model sees the close-up alone, at its own size, and mirrored.
      expect(models.closeup!.size).not.toBe(models.damage!.size);
      expect(closeViews).toHaveLength(2);
      expect(same(closeViews[0]!, (await letterbox(closeup, models.closeup!.size)).chw)).toBe(true);
      expect(same(closeViews[1]!, mirror(closeViews[0]!, models.closeup!.size))).toBe(true);
    });

    it("reports the two models' fused boxes on the customer's part, under the damage model's thresholds", async () => {
      const result = await detectPhotos(blobs, "insp_test", toInspect, models);
      const damage = models.damage!;
      const floor = Array.from(damage.thresholds, (t) => Math.min(t, MIRRORED.floor));
      // The close-up model's classes are the damage model's, in the same order (both trained by train.py).
      expect(models.closeup!.names).toEqual(damage.names);
      const [own] = await damage.views([{ ...(await letterbox(closeup, damage.size)), mirrored: true }], floor);
      const [other] = await models.closeup!.views([{ ...(await letterbox(closeup, models.closeup!.size)), mirrored: true }], floor);
      // Each model's two views, the four fused at once.
      expect([own!.length, other!.length]).toEqual([2, 2]);
      const expected = fuseViews([...own!, ...other!], MIRRORED.fuseIou).filter((c) => c.score >= damage.thresholds[c.cls]!);
      const shatters = found(result, "med_0").filter((d) => d.type === "glass_shatter");
      expect(shatters.length).toBeGreaterThan(0);
      expect(shatters.map((d) => d.confidence)).toEqual(
        expected.filter((c) => damage.names[c.cls] === "glass shatter").map((c) => Math.round(c.score * 1000) / 1000),
      );
      for (const d of found(result, "med_0")) expect(d.part).toBe("front_glass");

      // Without the close-up model, the close-up's findings are the damage model's two views alone
      // (scores that differ from the fused ones); the walkaround photo's are the same either way.
      const alone = await detectPhotos(blobs, "insp_test", toInspect, { ...models, closeup: null });
      const [mirroredOnly] = await damage.detect([{ ...(await letterbox(closeup, damage.size)), mirrored: true }]);
      expect(
        found(alone, "med_0")
          .filter((d) => d.type === "glass_shatter")
          .map((d) => d.confidence),
      ).toEqual(mirroredOnly!.filter((c) => c.name === "glass shatter").map((c) => Math.round(c.score * 1000) / 1000));
      expect(found(alone, "med_0")).not.toEqual(found(result, "med_0"));
      expect(found(alone, "med_1")).toEqual(found(result, "med_1"));
    });

    it("reads the close-up from the model inputs stored on upload, the close-up model from the judgement's 512 px", async () => {
      const decoded = found(await detectPhotos(blobs, "insp_test", toInspect, models), "med_0");
      const sizes = inputSizesFor(models.damage!.size, models.parts!.size, models.judge!.size, models.closeup!.size);
      // The shipped close-up model shares the judgement's size: no input of its own is stored.
      expect(sizes).toEqual([models.damage!.size, models.parts!.size, models.judge!.size]);
      const stored = new BlobModelInputStore(blobs, sizes);
      await stored.write("insp_test", { mediaId: "med_0", angle: "closeup" }, closeup);
      expect(found(await detectPhotos(blobs, "insp_test", toInspect, models), "med_0")).toEqual(decoded);
      // Grey pixels in place of the 512 px input alone: the damage model's input is untouched, yet the
      // glass shatter's scores change, so the close-up model read that stored input, not the photo.
      const key = modelInputBlobKey("insp_test", "med_0", models.closeup!.size);
      await blobs.put(key, Buffer.alloc((await blobs.get(key))!.length, 128), "application/octet-stream");
      const shatters = (f: ReturnType<typeof found>) => f.filter((d) => d.type === "glass_shatter").map((d) => d.confidence);
      const grey = found(await detectPhotos(blobs, "insp_test", toInspect, models), "med_0");
      expect(shatters(decoded).length).toBeGreaterThan(0);
      expect(shatters(grey)).not.toEqual(shatters(decoded));
      await stored.delete("insp_test", [{ mediaId: "med_0", angle: "closeup" }]);
    });
  },
);
