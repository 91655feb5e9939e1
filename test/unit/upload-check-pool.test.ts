import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { scaleForModels } from "../../inference/detection/letterbox.ts";
import { modelInputSizes } from "../../inference/detection/model-input.ts";
import { UploadCheckPool } from "../../inference/quality/upload-check-pool.ts";
import { UNCHECKED, UploadChecker } from "../../inference/quality/upload-checker.ts";
import { SUGGESTS_CLOSEUPS } from "../helpers/photos.ts";

const models = { partsModel: DEFAULT_MODELS.parts, judgeModel: DEFAULT_MODELS.judge };
const fail = (error: unknown) => {
  throw error;
};

describe("the upload checks on a worker thread", () => {
  const pool = new UploadCheckPool(models, { onError: fail });
  const inProcess = new UploadChecker(models, { onError: fail });
  afterAll(() => Promise.all([pool.close(), inProcess.close()]));

  it("give the verdict the checks give on the main thread, and leave the upload's buffers whole", async () => {
    const jpeg = readFileSync(SUGGESTS_CLOSEUPS);
    const sizes = modelInputSizes({ damageModel: DEFAULT_MODELS.damage, ...models });
    const inputs = { sizes, scaled: await scaleForModels(jpeg, sizes) };
    const lengths = [jpeg.length, ...inputs.scaled.pixels.map((p) => p.length)];
    const verdict = await pool.check("front", jpeg, inputs);
    // Not the verdict of checks that could not run: the photo has a close-up to suggest.
    expect(verdict.suggestedCloseups.length).toBeGreaterThan(0);
    expect(verdict).toEqual(await inProcess.check("front", jpeg, inputs));
    // Copies went to the thread: the upload still stores and indexes its own JPEG and pixels.
    expect([jpeg.length, ...inputs.scaled.pixels.map((p) => p.length)]).toEqual(lengths);
    expect(await pool.check("rear", jpeg)).toEqual(await inProcess.check("rear", jpeg));
  });

  it("hand a model's failure in the thread to onError, and take the photo unchecked", async () => {
    const errors: unknown[] = [];
    const broken = new UploadCheckPool({ partsModel: "/nonexistent/parts.onnx", judgeModel: null }, { onError: (e) => errors.push(e) });
    try {
      expect(await broken.check("front", readFileSync(SUGGESTS_CLOSEUPS))).toEqual(UNCHECKED);
      expect(errors).toHaveLength(1);
      expect((errors[0] as Error).message).toContain("cannot read the model at /nonexistent/parts.onnx");
    } finally {
      await broken.close();
    }
  });
});
