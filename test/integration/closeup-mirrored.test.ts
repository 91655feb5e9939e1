import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import { DEFAULT_MODELS, loadConfig } from "../../core/runtime/config.ts";
import { detectPhotos, type Models } from "../../inference/detection/detect-photos.ts";
import { letterbox, letterboxes } from "../../inference/detection/letterbox.ts";
import { loadModels } from "../../inference/detection/load-models.ts";
import { mirror } from "../../inference/detection/onnx-detector.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { carPhoto, DAMAGE_VALID } from "../helpers/photos.ts";
import { withModels } from "../helpers/service.ts";

/**
 * Close-ups run through the damage model at full strength (issue 36): processing looks at a close-up
 * as it is and mirrored and fuses the two views' boxes (OnnxDetector's MIRRORED; car-damage `valid`
 * mAP50 0.552 → 0.570), a walkaround photo in one view.
 */
describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("a close-up looked at mirrored too", () => {
  let models: Models;
  beforeAll(async () => {
    models = await loadModels(loadConfig({ ...process.env, ...withModels }).models);
  });
  afterAll(async () => {
    await Promise.all([models.damage?.close(), models.parts?.close(), models.judge?.close()]);
  });

  it("runs the damage model on the close-up and its mirror image, the walkaround photo once, and reports the fused boxes", async () => {
    const shatter = readdirSync(join(DAMAGE_VALID, "images")).find((f) => f.startsWith("000314_"))!;
    const closeup = readFileSync(join(DAMAGE_VALID, "images", shatter));
    const blobs: BlobStore = new MemoryBlobStore();
    const photos = [
      { angle: "closeup", bytes: closeup, part: "front_glass" },
      { angle: "front", bytes: carPhoto(0), part: null },
    ];
    const toInspect = await Promise.all(
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
    const damage = models.damage!;
    const forward = vi.spyOn(damage, "forward");
    const result = await detectPhotos(blobs, "insp_test", toInspect, models);
    const views = forward.mock.calls.flatMap(([batch]) => batch);
    forward.mockRestore();

    // One batch: the close-up, the close-up mirrored, the walkaround photo.
    expect(views).toHaveLength(3);
    // Compared as bytes: a deep equality of 442,368 floats takes vitest minutes.
    const same = (a: Float32Array, b: Float32Array) =>
      Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    expect(same(views[1]!, mirror(views[0]!, damage.size))).toBe(true);
    expect(same(views[2]!, (await letterboxes(carPhoto(0), [damage.size, models.parts!.size]))[0]!.chw)).toBe(true);

    // The close-up's findings are the two views' fused boxes, on the customer's part.
    const [fused] = await damage.detect([{ ...(await letterbox(closeup, damage.size)), mirrored: true }]);
    const [single] = await damage.detect([await letterbox(closeup, damage.size)]);
    const found = result.detections.filter((d) => d.mediaId === "med_0" && d.type === "glass_shatter");
    expect(found.length).toBeGreaterThan(0);
    expect(found.map((d) => d.confidence)).toEqual(fused!.map((d) => Math.round(d.score * 1000) / 1000));
    expect(found.map((d) => d.confidence)).not.toEqual(single!.map((d) => Math.round(d.score * 1000) / 1000));
    for (const d of found) expect(d.part).toBe("front_glass");
  });
});
