import { describe, expect, it } from "vitest";
import { findingSeverity, overallGrade } from "../../core/domain/grading.ts";
import { mirror } from "../../inference/detection/onnx-detector.ts";
import { candidates, fuseViews, iou, nms, relativeBbox, unletterbox, unmirror } from "../../inference/detection/postprocess.ts";

describe("post-processing", () => {
  // Two classes, three anchors, one image: [cx, cy, w, h, score0, score1] per anchor, laid out [6, 3].
  const anchors = [
    [100, 100, 40, 20, 0.9, 0.1],
    [104, 100, 40, 20, 0.8, 0.2],
    [300, 50, 10, 10, 0.05, 0.3],
  ];
  const data = new Float32Array(6 * 3);
  for (const [i, a] of anchors.entries()) for (const [row, v] of a.entries()) data[row * 3 + i] = v;

  it("decodes centre boxes into corners and keeps classes over their thresholds", () => {
    expect(candidates(data, 0, 2, 3, [0.5, 0.25])).toEqual([
      { x1: 80, y1: 90, x2: 120, y2: 110, score: expect.closeTo(0.9, 5), cls: 0 },
      { x1: 84, y1: 90, x2: 124, y2: 110, score: expect.closeTo(0.8, 5), cls: 0 },
      { x1: 295, y1: 45, x2: 305, y2: 55, score: expect.closeTo(0.3, 5), cls: 1 },
    ]);
    expect(candidates(data, 0, 2, 3, [0.95, 0.5])).toEqual([]);
  });

  it("computes IoU by hand: 36×20 overlap of two 40×20 boxes", () => {
    const a = { x1: 80, y1: 90, x2: 120, y2: 110 };
    const b = { x1: 84, y1: 90, x2: 124, y2: 110 };
    expect(iou(a, b)).toBeCloseTo((36 * 20) / (2 * 800 - 36 * 20), 10);
    expect(iou(a, { x1: 200, y1: 200, x2: 210, y2: 210 })).toBe(0);
  });

  it("suppresses overlaps within a class only", () => {
    const c = candidates(data, 0, 2, 3, [0.5, 0.25]);
    const kept = nms(c, 0.5);
    expect(kept.map((k) => k.score.toFixed(1))).toEqual(["0.9", "0.3"]);
    const otherClass = nms([c[0]!, { ...c[1]!, cls: 1 }], 0.5);
    expect(otherClass).toHaveLength(2);
    expect(nms(c, 0.95)).toHaveLength(3);
  });

  it("undoes the letterbox: a 1000×500 photo in a 384 square is scaled 0.384 and padded 96 px top and bottom", () => {
    const lb = { scale: 0.384, padX: 0, padY: 96, width: 1000, height: 500 };
    const box = unletterbox({ x1: 38.4, y1: 96 + 19.2, x2: 76.8, y2: 96 + 38.4 }, lb);
    expect(box.x1).toBeCloseTo(100, 6);
    expect(box.y1).toBeCloseTo(50, 6);
    expect(box.x2).toBeCloseTo(200, 6);
    expect(box.y2).toBeCloseTo(100, 6);
    expect(relativeBbox(box, 1000, 500)).toEqual([0.1, 0.1, 0.1, 0.1]);
    // Boxes reaching into the padding are clipped to the photo.
    expect(unletterbox({ x1: -5, y1: 0, x2: 400, y2: 384 }, lb)).toEqual({ x1: 0, y1: 0, x2: 1000, y2: 500 });
  });
});

describe("grading table", () => {
  it.each([
    ["scratch", 0.05, "minor"],
    ["scratch", 0.2, "moderate"],
    ["scratch", 0.5, "severe"],
    ["dent", 0.07, "minor"],
    ["dent", 0.08, "moderate"],
    ["crack", 0.25, "severe"],
    ["glass_shatter", 0.01, "moderate"],
    ["glass_shatter", 0.3, "severe"],
    ["lamp_broken", 0.1, "moderate"],
    ["tire_flat", 0.01, "severe"],
  ] as const)("%s covering %f of its part is %s", (type, share, severity) => {
    expect(findingSeverity(type, share)).toBe(severity);
  });

  it("grades an inspection from its findings", () => {
    const severities = [findingSeverity("scratch", 0.05), findingSeverity("scratch", 0.06), findingSeverity("dent", 0.01)];
    expect(overallGrade(severities)).toBe("moderate");
  });
});

describe("a close-up's two views (mirrored too, fused)", () => {
  it("mirrors each row of each channel, and maps a box found mirrored back", () => {
    // Two channels of a 3×3 square.
    const chw = Float32Array.from({ length: 18 }, (_, i) => i);
    expect([...mirror(chw, 3)]).toEqual([2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9, 14, 13, 12, 17, 16, 15]);
    expect(unmirror({ x1: 10, y1: 5, x2: 50, y2: 20, score: 0.5, cls: 1 }, 384)).toEqual({
      x1: 334,
      y1: 5,
      x2: 374,
      y2: 20,
      score: 0.5,
      cls: 1,
    });
  });

  it("fuses a box both views found into their score-weighted mean with the mean score; one view's box scores half", () => {
    const a = { x1: 0, y1: 0, x2: 100, y2: 100, score: 0.6, cls: 0 };
    const b = { x1: 10, y1: 0, x2: 110, y2: 100, score: 0.3, cls: 0 };
    const lone = { x1: 300, y1: 300, x2: 320, y2: 320, score: 0.8, cls: 0 };
    const otherClass = { x1: 0, y1: 0, x2: 100, y2: 100, score: 0.5, cls: 1 };
    const fused = fuseViews(
      [
        [a, lone],
        [b, otherClass],
      ],
      0.7,
    );
    expect(fused).toEqual([
      {
        x1: expect.closeTo(10 / 3, 6),
        y1: 0,
        x2: expect.closeTo(100 + 10 / 3, 6),
        y2: expect.closeTo(100, 6),
        score: expect.closeTo(0.45, 6),
        cls: 0,
      },
      { ...lone, score: expect.closeTo(0.4, 6) },
      { ...otherClass, score: expect.closeTo(0.25, 6) },
    ]);
    // Under the overlap threshold they stay apart, each at half its score.
    expect(fuseViews([[a], [{ ...b, x1: 60, x2: 160 }]], 0.7).map((d) => d.score)).toEqual([
      expect.closeTo(0.3, 6),
      expect.closeTo(0.15, 6),
    ]);
  });
});
