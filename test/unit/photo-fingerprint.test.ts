import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { fingerprintOf } from "../../capture/photos/fingerprint.ts";
import { hamming, likeness, mirrored, probesOf, SAME_PICTURE, samePicture, slicesOf } from "../../core/domain/photo-fingerprint.ts";
import { carPhotos } from "../helpers/photos.ts";

describe("photo fingerprints", () => {
  it("count differing bits, slice a hash for the index, and probe each slice and its one-bit neighbours", () => {
    expect(hamming("0000000000000000", "0000000000000000")).toBe(0);
    expect(hamming("ffffffffffffffff", "0000000000000000")).toBe(64);
    expect(hamming("8000000000000001", "0000000000000000")).toBe(2);
    expect(slicesOf("0123456789abcdef")).toEqual(["001", "123", "245", "367", "489", "5ab", "6cd", "7ef"]);
    const probes = probesOf("0123456789abcdef");
    expect(probes).toHaveLength(72);
    expect(probes.slice(0, 9)).toEqual(["001", "000", "003", "005", "009", "011", "021", "041", "081"]);
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
    const other = await fingerprintOf(b!);
    expect(samePicture(other, original)).toBe(false);
    expect(likeness(other.thumb, original.thumb)).toBeLessThan(SAME_PICTURE);
    expect(mirrored(mirrored(original.thumb))).toEqual(original.thumb);
  });
});
