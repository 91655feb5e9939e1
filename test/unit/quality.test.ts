import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { measureQuality, qualityOfGrey } from "../../inference/quality/measure-quality.ts";
import { carPhotos } from "../helpers/photos.ts";

const photos = carPhotos(12);

describe("photo quality on real car photos", () => {
  it("passes the real photos", async () => {
    for (const photo of photos.slice(0, 10)) expect((await measureQuality(photo)).problems).toEqual([]);
  });

  it("flags darkened, blurred, blown-out and sun-spotted versions of them", async () => {
    for (const photo of photos.slice(0, 4)) {
      const dark = await measureQuality(await sharp(photo).linear(0.12, 0).jpeg().toBuffer());
      expect(dark.problems).toContain("too_dark");
      const blurry = await measureQuality(await sharp(photo).blur(10).jpeg().toBuffer());
      expect(blurry.problems).toContain("blurry");
      const blown = await measureQuality(await sharp(photo).linear(4, 140).jpeg().toBuffer());
      expect(blown.problems).toContain("too_bright");
      // The sun reflected off the body: a white patch over the middle of the car, inside the frame.
      const spotted = await measureQuality(await sunSpot(photo));
      expect(spotted.problems).toContain("glare");
      expect(spotted.problems).not.toContain("too_bright");
    }
  });

  it("passes a white backdrop and a dark showroom around the car, which the frame-wide measures failed", async () => {
    // A car in a white studio: a white field joined to the frame's edge around it is not glare.
    const studio = await measureQuality(await onBackdrop(photos[0]!, 255));
    expect(studio.problems).not.toContain("glare");
    // A lit car in a dark showroom: dark around it, the car itself lit.
    const showroom = await measureQuality(await onBackdrop(photos[0]!, 8));
    expect(showroom.brightness).toBeLessThan(0.2);
    expect(showroom.problems).not.toContain("too_dark");
  });
});

/** The photo with a white ellipse (a blurred edge, a clipped core) over the middle third of its frame. */
async function sunSpot(photo: Buffer): Promise<Buffer> {
  const { width, height } = await sharp(photo).metadata();
  const w = width!;
  const h = height!;
  const spot = Buffer.from(
    `<svg width="${w}" height="${h}"><ellipse cx="${w / 2}" cy="${h / 2}" rx="${w * 0.2}" ry="${h * 0.17}" fill="white"/></svg>`,
  );
  return sharp(photo)
    .composite([{ input: await sharp(spot).blur(2).png().toBuffer() }])
    .jpeg()
    .toBuffer();
}

/** The photo shrunk to 40% of the frame's sides, in the middle of a frame of one grey level, as a catalogue shot's backdrop is. */
async function onBackdrop(photo: Buffer, level: number): Promise<Buffer> {
  const { width, height } = await sharp(photo).metadata();
  const inner = await sharp(photo)
    .resize(Math.round(width! * 0.4), Math.round(height! * 0.4))
    .toBuffer();
  return sharp({ create: { width: width!, height: height!, channels: 3, background: { r: level, g: level, b: level } } })
    .composite([{ input: inner }])
    .jpeg()
    .toBuffer();
}

describe("qualityOfGrey", () => {
  it("measures a hand-computed frame", () => {
    // 4×4 frame: a single clipped pixel at (1,1) in a dark field.
    const px = new Uint8Array(16).fill(10);
    px[5] = 255;
    const q = qualityOfGrey(px, 4, 4);
    expect(q.brightness).toBeCloseTo((15 * 10 + 255) / 16 / 255, 3);
    // Interior Laplacians: at (1,1) 10*4-4*255 = -980; at (2,1) and (1,2): 255+3*10-40 = 245; at (2,2): 0.
    const laps = [-980, 245, 245, 0];
    const mean = laps.reduce((a, b) => a + b) / 4;
    const variance = laps.reduce((a, b) => a + b * b, 0) / 4 - mean * mean;
    expect(q.sharpness).toBeCloseTo(variance, 1);
    // The central half of a 4×4 frame is its 2×2 interior: one of its four pixels is clipped and
    // enclosed (no clipped pixel joins it to the edge). 0.25 is the threshold itself: not glare.
    expect(q.glare).toBe(0.25);
    // The brightest tenth of the centre is that pixel: the centre is lit, though the frame's mean is 0.1.
    expect(q.problems).toEqual([]);
  });

  it("counts clipped pixels joined to the frame's edge as backdrop, not glare", () => {
    // 6×6, dark, with a clipped column from the top edge to the bottom one at x = 2. The central
    // half is rows and columns 1 to 4: the column crosses it in 4 of its 16 pixels.
    const px = new Uint8Array(36).fill(60);
    for (let y = 0; y < 6; y++) px[y * 6 + 2] = 255;
    expect(qualityOfGrey(px, 6, 6).glare).toBe(0);
    // Cut off from both edges (rows 0 and 5 dark again): those 4 are enclosed.
    px[2] = 60;
    px[32] = 60;
    expect(qualityOfGrey(px, 6, 6).glare).toBe(0.25);
  });

  it("calls a frame too dark when the brightest tenth of its centre is dark", () => {
    const px = new Uint8Array(100 * 100).fill(40);
    expect(qualityOfGrey(px, 100, 100).problems).toContain("too_dark");
    // Lit centre: a fifth of the central half at 200.
    for (let y = 25; y < 75; y++) for (let x = 25; x < 35; x++) px[y * 100 + x] = 200;
    expect(qualityOfGrey(px, 100, 100).problems).not.toContain("too_dark");
  });
});
