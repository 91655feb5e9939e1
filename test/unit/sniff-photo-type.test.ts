import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { sniffPhotoType } from "../../capture/photos/sniff-photo-type.ts";
import { billionLaughsSvg, tinyPdf } from "../helpers/hostile-photos.ts";

const image = sharp({ create: { width: 8, height: 8, channels: 3, background: "#808080" } });
const heifHeader = (brands: string) => {
  const box = Buffer.alloc(8 + brands.length);
  box.writeUInt32BE(box.length, 0);
  box.write(`ftyp${brands}`, 4, "latin1");
  return Buffer.concat([box, Buffer.alloc(16)]);
};

describe("sniffPhotoType", () => {
  it("names each accepted format from its first bytes", async () => {
    expect(sniffPhotoType(await image.clone().jpeg().toBuffer())).toBe("image/jpeg");
    expect(sniffPhotoType(await image.clone().png().toBuffer())).toBe("image/png");
    expect(sniffPhotoType(await image.clone().webp().toBuffer())).toBe("image/webp");
    expect(sniffPhotoType(heifHeader("heic\0\0\0\0mif1heic"))).toBe("image/heic");
  });

  it("is null for everything else, however it starts", async () => {
    for (const bytes of [
      await image.clone().gif().toBuffer(),
      await image.clone().tiff().toBuffer(),
      await image.clone().avif().toBuffer(),
      billionLaughsSvg(),
      Buffer.from("\ufeff <svg xmlns='http://www.w3.org/2000/svg'/>"),
      tinyPdf(),
      Buffer.from("RIFF\0\0\0\0WAVEfmt "),
      Buffer.from([0xff, 0xd8]),
      Buffer.alloc(0),
    ]) {
      expect(sniffPhotoType(bytes), bytes.subarray(0, 12).toString("latin1")).toBeNull();
    }
  });
});
