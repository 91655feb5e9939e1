import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { fingerprintOf } from "../../capture/photos/fingerprint.ts";
import {
  coarseOf,
  hamming,
  likeness,
  mayBeOnePicture,
  mirrored,
  mirroredColour,
  SAME_PICTURE,
  samePicture,
} from "../../core/domain/photo-fingerprint.ts";
import { carPhotos } from "../helpers/photos.ts";

describe("photo fingerprints", () => {
  it("count differing bits", () => {
    expect(hamming("0000000000000000", "0000000000000000")).toBe(0);
    expect(hamming("ffffffffffffffff", "0000000000000000")).toBe(64);
    expect(hamming("8000000000000001", "0000000000000000")).toBe(2);
  });

  it("tell the same picture, resized, cropped or mirrored, from another car's photo", async () => {
    const [a, b] = carPhotos(2);
    const { width = 0, height = 0 } = await sharp(a!).metadata();
    const original = await fingerprintOf(a!);
    const copies = [
      await sharp(a!).resize(200).jpeg({ quality: 50 }).toBuffer(),
      await sharp(a!)
        .extract({ left: 10, top: 8, width: width - 20, height: height - 16 })
        .toBuffer(),
      await sharp(a!).flop().toBuffer(),
    ];
    for (const copy of copies) expect(samePicture(await fingerprintOf(copy), original)).toBe(true);
    // The coarse pictures the index keeps in memory let the copies through (the mirrored one seen in a mirror), not the other car.
    const [resized, cropped, flopped] = await Promise.all(copies.map(fingerprintOf));
    for (const copy of [resized!, cropped!]) expect(mayBeOnePicture(coarseOf(copy), coarseOf(original))).toBe(true);
    const inMirror = { thumb: mirrored(flopped!.thumb), colour: mirroredColour(flopped!.colour) };
    expect(mayBeOnePicture(coarseOf(inMirror), coarseOf(original))).toBe(true);
    const other = await fingerprintOf(b!);
    expect(mayBeOnePicture(coarseOf(other), coarseOf(original))).toBe(false);
    expect(samePicture(other, original)).toBe(false);
    expect(likeness(other.thumb, original.thumb)).toBeLessThan(SAME_PICTURE);
    expect(mirrored(mirrored(original.thumb))).toEqual(original.thumb);
  });
});
