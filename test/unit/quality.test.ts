import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { measureQuality, qualityOfGrey } from "../../inference/quality/measure-quality.ts";
import { carPhotos } from "../helpers/photos.ts";

const photos = carPhotos(12);

describe("photo quality on real car photos", () => {
  it("passes the real photos", async () => {
    for (const photo of photos.slice(0, 10)) expect((await measureQuality(photo)).problems).toEqual([]);
  });

  it("flags darkened, blurred and blown-out versions of them", async () => {
    for (const photo of photos.slice(0, 4)) {
      const dark = await measureQuality(await sharp(photo).linear(0.12, 0).jpeg().toBuffer());
      expect(dark.problems).toContain("too_dark");
      const blurry = await measureQuality(await sharp(photo).blur(10).jpeg().toBuffer());
      expect(blurry.problems).toContain("blurry");
      const blown = await measureQuality(await sharp(photo).linear(4, 140).jpeg().toBuffer());
      expect(blown.problems).toEqual(expect.arrayContaining(["too_bright", "glare"]));
    }
  });
});

describe("qualityOfGrey", () => {
  it("measures a hand-computed frame", () => {
    // 4×4 frame: a single bright pixel at (1,1) in a dark field.
    const px = new Uint8Array(16).fill(10);
    px[5] = 250;
    const q = qualityOfGrey(px, 4, 4);
    expect(q.brightness).toBeCloseTo((15 * 10 + 250) / 16 / 255, 3);
    // Interior Laplacians: at (1,1) 10*4-4*250 = -960; at (2,1) and (1,2): 250+3*10-40 = 240; at (2,2): 0.
    const laps = [-960, 240, 240, 0];
    const mean = laps.reduce((a, b) => a + b) / 4;
    const variance = laps.reduce((a, b) => a + b * b, 0) / 4 - mean * mean;
    expect(q.sharpness).toBeCloseTo(variance, 1);
    // Central half of a 4×4 frame is the 2×2 interior: one of four pixels is blown out.
    expect(q.glare).toBe(0.25);
    // 0.25 is the threshold itself: glare is flagged only above it.
    expect(q.problems).toEqual(["too_dark"]);
  });
});
