import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { detectCloseups } from "../../inference/detection/detect-closeups.ts";
import { MIRRORED, type Detected, type OnnxDetector } from "../../inference/detection/onnx-detector.ts";

/**
 * How a close-up's boxes from the damage model and the close-up model become findings
 * (detect-closeups.ts): the two models' views fused at once, then the damage model's thresholds. The models
 * here answer fixed boxes, so the rule is what is tested; the real models' runs are in
 * test/integration/closeup-mirrored.test.ts.
 */
type Answer = Omit<Detected, "name">;
const detector = (names: string[], size: number, thresholds: number[], answer: Answer[], mirroredAnswer = answer) => {
  const seen: (ArrayLike<number> | undefined)[] = [];
  const model = {
    names,
    size,
    thresholds: Float32Array.from(thresholds),
    // Each close-up's two views (as it is, mirrored): `answer` in the first, `mirroredAnswer` in the second.
    views: async (batch: { mirrored?: boolean }[], th?: ArrayLike<number>) => {
      seen.push(th);
      expect(batch.every((b) => b.mirrored === true)).toBe(true);
      return batch.map(() => [answer, mirroredAnswer].map((view) => view.map((a) => ({ ...a, name: names[a.cls]! }))));
    },
  };
  return { model: model as unknown as OnnxDetector, seen };
};
const box = (x1: number, score: number, cls: number): Answer => ({ x1, y1: 10, x2: x1 + 40, y2: 50, score, cls });

describe("a close-up through two models", async () => {
  // Wide enough to hold every box the fake models answer: findings are clipped to the photo.
  const photo = await sharp({ create: { width: 400, height: 64, channels: 3, background: "#808080" } })
    .jpeg()
    .toBuffer();

  it("fuses their boxes, matches classes by name, and applies the damage model's thresholds to the fused scores", async () => {
    const damage = detector(["dent", "scratch"], 32, [0.3, 0.3], [box(0, 0.5, 0), box(100, 0.5, 1)]);
    // The close-up model numbers the classes otherwise and knows one the damage model does not.
    const closeup = detector(["scratch", "rust", "dent"], 48, [0.9, 0.9, 0.9], [box(2, 0.3, 2), box(200, 0.9, 1), box(300, 0.8, 0)]);
    const { damage: found } = await detectCloseups({ damage: damage.model, closeup: closeup.model, parts: null }, [photo], {
      bytes: [photo],
    });
    // The dent both saw: their mean score. A box only one model saw: half its score, so the damage
    // model's scratch at 0.5 falls under the threshold and the close-up model's at 0.8 stays. The
    // close-up model's "rust" is no class of the damage model's: dropped.
    const byPlace = [...found[0]!.found].sort((a, b) => a.x1 - b.x1);
    expect(byPlace.map((d) => ({ name: d.name, cls: d.cls, score: d.score, x1: d.x1 }))).toEqual([
      { name: "dent", cls: 0, score: expect.closeTo(0.4, 9), x1: expect.closeTo(0.75, 9) },
      { name: "scratch", cls: 1, score: 0.4, x1: 300 },
    ]);
    // Both models read from the floor, the close-up model's classes in its own order.
    expect(damage.seen).toEqual([[MIRRORED.floor, MIRRORED.floor]]);
    expect(closeup.seen).toEqual([[MIRRORED.floor, 1, MIRRORED.floor]]);
  });

  it("fuses the four views at once, not each model's two first", async () => {
    // The damage model sees a dent in one view at x 0 and in the other at x 10 (IoU 0.6, not more:
    // not one box); the close-up model sees it at x 5 in both views, overlapping each by more.
    const damage = detector(["dent"], 32, [0.3], [box(0, 0.8, 0)], [box(10, 0.8, 0)]);
    const closeup = detector(["dent"], 48, [0.3], [box(5, 0.8, 0)]);
    const { damage: found } = await detectCloseups({ damage: damage.model, closeup: closeup.model, parts: null }, [photo], {
      bytes: [photo],
    });
    // At once: the first damage box gathers the close-up model's two, three of four views (0.6); the
    // other damage box alone scores a quarter of 0.8, under the threshold. Each model's views first
    // would give one dent at 0.53: the damage model's two dents at 0.4 each, both joining the close-up
    // model's at 0.8, the mean of three boxes from two models.
    expect(found[0]!.found.map((d) => [d.name, d.score])).toEqual([["dent", expect.closeTo(0.6, 9)]]);
  });

  it("without a close-up model is the damage model's mirrored views under its thresholds", async () => {
    const damage = detector(["dent", "scratch"], 32, [0.3, 0.3], [box(0, 0.5, 0), box(100, 0.2, 1)]);
    const { damage: found } = await detectCloseups({ damage: damage.model, closeup: null, parts: null }, [photo], { bytes: [photo] });
    expect(found[0]!.found.map((d) => [d.name, d.score])).toEqual([["dent", 0.5]]);
  });
});
