import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { showsVehicle, SURE_GLASS_SHATTER } from "../../inference/detection/detect-photos.ts";
import { partOf } from "../../inference/detection/part-of.ts";
import { fromScaled, letterbox, letterboxes, PAD_GREY, scaleForModels } from "../../inference/detection/letterbox.ts";
import { boxMap } from "../../inference/evaluation/box-map.ts";
import { readYoloFolder } from "../../inference/evaluation/yolo-folder.ts";
import { drawEvidence } from "../../inference/evidence/draw-evidence.ts";
import { carPhoto } from "../helpers/photos.ts";

describe("box mAP", () => {
  it("matches a hand-computed AP: hit, miss, hit against two objects", () => {
    const gt = [
      { cls: 0, x1: 0, y1: 0, x2: 10, y2: 10 },
      { cls: 0, x1: 20, y1: 20, x2: 30, y2: 30 },
    ];
    const dets = [
      { cls: 0, score: 0.9, x1: 0, y1: 0, x2: 10, y2: 10 },
      { cls: 0, score: 0.8, x1: 50, y1: 50, x2: 60, y2: 60 },
      { cls: 0, score: 0.7, x1: 20, y1: 20, x2: 30, y2: 30 },
    ];
    // Precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1; made monotone: 1, 2/3, 2/3.
    // 101-point AP: 51 points (recall 0–0.50) at 1, 50 points at 2/3.
    const expected = (51 + 50 * (2 / 3)) / 101;
    const r = boxMap([dets], [gt], 1);
    expect(r.map50).toBeCloseTo(expected, 10);
    expect(r.map50_95).toBeCloseTo(expected, 10);
    expect(r.perClass.get(0)!.instances).toBe(2);
  });

  it("scores a box by the IoU thresholds it clears: IoU 0.58 counts at 0.50 and 0.55 only", () => {
    const gt = [{ cls: 0, x1: 0, y1: 0, x2: 10, y2: 10 }];
    const det = [{ cls: 0, score: 0.9, x1: 0, y1: 0, x2: 10, y2: 5.8 }]; // IoU 0.58
    const r = boxMap([det], [gt], 2);
    expect(r.map50).toBe(1);
    expect(r.map50_95).toBeCloseTo(2 / 10, 10);
    expect(r.perClass.has(1)).toBe(false);
  });

  it("does not let one detection match two objects, nor two detections one object", () => {
    const gt = [{ cls: 0, x1: 0, y1: 0, x2: 10, y2: 10 }];
    const dets = [
      { cls: 0, score: 0.9, x1: 0, y1: 0, x2: 10, y2: 10 },
      { cls: 0, score: 0.8, x1: 0, y1: 0, x2: 10, y2: 10 },
    ];
    expect(boxMap([dets], [gt], 1).map50).toBe(1);
    expect(boxMap([[dets[0]!]], [[gt[0]!, { cls: 0, x1: 0, y1: 0, x2: 10, y2: 10 }]], 1).map50).toBeCloseTo(51 / 101, 10);
  });
});

describe("YOLO folders", () => {
  it("reads boxes and polygons as normalised boxes", () => {
    const dir = mkdtempSync(join(tmpdir(), "vi-yolo-"));
    mkdirSync(join(dir, "images"));
    mkdirSync(join(dir, "labels"));
    writeFileSync(join(dir, "images", "a.jpg"), "");
    writeFileSync(join(dir, "labels", "a.txt"), "1 0.5 0.5 0.2 0.4\n4 0.1 0.2 0.3 0.2 0.2 0.6\n");
    writeFileSync(join(dir, "images", "b.jpg"), "");
    const [a, b] = readYoloFolder(dir);
    expect(a!.boxes[0]!.cls).toBe(1);
    expect(a!.boxes[0]!.x1).toBeCloseTo(0.4, 10);
    expect(a!.boxes[0]!.y2).toBeCloseTo(0.7, 10);
    expect(a!.boxes[1]).toEqual({ cls: 4, x1: 0.1, y1: 0.2, x2: 0.3, y2: 0.6 });
    expect(b!.boxes).toEqual([]);
  });
});

describe("letterbox", () => {
  it("fits a 2:1 photo into the square without stretching, padding top and bottom with grey", async () => {
    const photo = await sharp({ create: { width: 200, height: 100, channels: 3, background: "#ff0000" } })
      .png()
      .toBuffer();
    const { chw, lb } = await letterbox(photo, 64);
    expect(lb).toEqual({ scale: 0.32, padX: 0, padY: 16, width: 200, height: 100 });
    const plane = 64 * 64;
    expect(chw[5 * 64 + 10]).toBeCloseTo(PAD_GREY / 255, 5); // padding (red channel)
    expect(chw[32 * 64 + 10]).toBeCloseTo(1, 2); // red photo
    expect(chw[plane + 32 * 64 + 10]).toBeCloseTo(0, 2); // green channel of the photo
  });
  it("letterboxes a photo for two models from one decode, each tensor as its own letterbox gives it", async () => {
    // A gradient, so that a wrong scale or offset shows in the pixels.
    const raw = Buffer.alloc(150 * 100 * 3);
    for (let i = 0; i < 150 * 100; i++) raw.set([i % 150, (i / 150) & 255, (i * 7) & 255], i * 3);
    const photo = await sharp(raw, { raw: { width: 150, height: 100, channels: 3 } })
      .jpeg()
      .toBuffer();
    const [big, small] = await letterboxes(photo, [96, 64]);
    const [alone96, alone64] = [await letterbox(photo, 96), await letterbox(photo, 64)];
    expect(big!.lb).toEqual(alone96.lb);
    expect(small!.lb).toEqual({ scale: 64 / 150, padX: 0, padY: 10, width: 150, height: 100 });
    expect(Buffer.from(big!.chw.buffer)).toEqual(Buffer.from(alone96.chw.buffer));
    expect(Buffer.from(small!.chw.buffer)).toEqual(Buffer.from(alone64.chw.buffer));
  });

  it("gives the same tensors from pixels scaled once and kept (the model inputs stored on upload), and refuses pixels of another size", async () => {
    const photo = carPhoto(2);
    const scaled = await scaleForModels(photo, [96, 64]);
    const { width = 0, height = 0 } = await sharp(photo).metadata();
    expect([scaled.width, scaled.height]).toEqual([width, height]);
    const [fromKept, fromPhoto] = [fromScaled(scaled, [96, 64]), await letterboxes(photo, [96, 64])];
    for (const k of [0, 1]) {
      expect(fromKept[k]!.lb).toEqual(fromPhoto[k]!.lb);
      expect(Buffer.from(fromKept[k]!.chw.buffer)).toEqual(Buffer.from(fromPhoto[k]!.chw.buffer));
    }
    expect(() => fromScaled({ ...scaled, pixels: [scaled.pixels[0]!.subarray(3), scaled.pixels[1]!] }, [96, 64])).toThrow(/expected/);
  });
});

describe("parts", () => {
  const part = (name: string, x1: number, y1: number, x2: number, y2: number, score = 0.9) => ({ name, x1, y1, x2, y2, score, cls: 0 });
  it("puts a damage on the part that holds most of it, if it holds enough", () => {
    const parts = [part("hood", 0, 0, 100, 50), part("front_bumper", 0, 50, 100, 80)];
    expect(partOf({ x1: 10, y1: 40, x2: 30, y2: 70 }, parts)!.name).toBe("front_bumper");
    expect(partOf({ x1: 10, y1: 10, x2: 30, y2: 20 }, parts)!.name).toBe("hood");
    expect(partOf({ x1: 200, y1: 200, x2: 210, y2: 210 }, parts)).toBeNull();
  });

  it("only puts a damage on a part its type can be on", () => {
    const parts = [part("front_bumper", 0, 0, 100, 100), part("front_glass", 0, 0, 100, 40), part("wheel", 60, 60, 100, 100)];
    expect(partOf({ x1: 10, y1: 10, x2: 90, y2: 90 }, parts, "glass_shatter")!.name).toBe("front_glass");
    expect(partOf({ x1: 10, y1: 50, x2: 50, y2: 90 }, parts, "glass_shatter")).toBeNull();
    expect(partOf({ x1: 10, y1: 50, x2: 50, y2: 90 }, parts, "dent")!.name).toBe("front_bumper");
    expect(partOf({ x1: 65, y1: 65, x2: 95, y2: 95 }, parts, "tire_flat")!.name).toBe("wheel");
  });
});

describe("vehicle gate", () => {
  const found = (name: string, score: number) => ({ name, score, cls: 0, x1: 0, y1: 0, x2: 10, y2: 10 });
  it("sees a vehicle where there is a part, or a glass shatter the damage model is sure of", () => {
    expect(showsVehicle([found("hood", 0.05)], [])).toBe(true);
    expect(showsVehicle([], [found("glass shatter", SURE_GLASS_SHATTER)])).toBe(true);
    expect(showsVehicle([], [found("glass shatter", SURE_GLASS_SHATTER - 0.01)])).toBe(false);
    // Only broken glass vouches: the damage model sees scratches on walls and trees.
    expect(showsVehicle([], [found("scratch", 0.95), found("dent", 0.9)])).toBe(false);
    expect(showsVehicle([], [])).toBe(false);
  });
});

describe("evidence drawing", () => {
  it("outlines the finding in its colour and keeps the photo's size", async () => {
    const photo = carPhoto(0);
    const { width = 0, height = 0 } = await sharp(photo).metadata();
    const box = { x1: width * 0.25, y1: height * 0.4, x2: width * 0.6, y2: height * 0.8 };
    const out = await drawEvidence(photo, box, "dent · front_bumper · 87%", "dent");
    expect([out.width, out.height]).toEqual([width, height]);
    const { data, info } = await sharp(out.jpeg).raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) =>
      Array.from(
        data.subarray(
          (Math.round(y) * info.width + Math.round(x)) * info.channels,
          (Math.round(y) * info.width + Math.round(x)) * info.channels + 3,
        ),
      );
    // On the left edge of the box: the dent colour, #f59e0b (within JPEG error).
    const [r, g, b] = at(box.x1, (box.y1 + box.y2) / 2);
    expect(r).toBeGreaterThan(200);
    expect(g).toBeGreaterThan(120);
    expect(g).toBeLessThan(190);
    expect(b).toBeLessThan(70);
    // Inside the box, the photo is untouched.
    const original = await sharp(photo).raw().toBuffer();
    const cx = Math.round((box.x1 + box.x2) / 2),
      cy = Math.round((box.y1 + box.y2) / 2);
    const o = Array.from(original.subarray((cy * width + cx) * 3, (cy * width + cx) * 3 + 3));
    for (const [i, v] of at(cx, cy).entries()) expect(Math.abs(v - o[i]!)).toBeLessThan(20);
  });
});
