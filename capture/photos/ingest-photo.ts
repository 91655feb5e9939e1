import sharp, { type Sharp } from "sharp";
import { createHash } from "node:crypto";
import { ApiError } from "../../core/errors.ts";
import type { Quality } from "../../core/schemas/report.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { decodeHeic, isHeic } from "./decode-heic.ts";

export const PHOTO_LIMITS = {
  maxBytes: 15 * 1024 * 1024,
  /** Decompression bombs: a small file that decodes to a huge bitmap is refused before decoding. */
  maxPixels: 40_000_000,
  /** Stored photos are bounded too: 4096 px on the long side keeps damage detail without keeping a 48 MP original. */
  maxStoredSide: 4096,
  jpegQuality: 85,
} as const;

export type IngestedPhoto = { jpeg: Buffer; width: number; height: number; etag: string; quality: Quality };

/**
 * Decodes any accepted format, applies the EXIF orientation, and re-encodes as JPEG. sharp writes
 * no metadata unless asked, so EXIF (GPS location included), XMP and ICC comments are dropped. HEIC
 * is decoded to pixels first, its rotation and mirroring applied by libheif, so no metadata survives
 * that way either.
 */
export async function ingestPhoto(input: Buffer): Promise<IngestedPhoto> {
  let jpeg: Buffer;
  let width: number;
  let height: number;
  try {
    let image: Sharp;
    if (isHeic(input)) {
      const { width: w, height: h, rgba } = await decodeHeic(input, PHOTO_LIMITS.maxPixels);
      image = sharp(rgba, { raw: { width: w, height: h, channels: 4 }, limitInputPixels: PHOTO_LIMITS.maxPixels }).removeAlpha();
    } else {
      image = sharp(input, { limitInputPixels: PHOTO_LIMITS.maxPixels, failOn: "error" });
    }
    const out = await image
      .rotate()
      .resize(PHOTO_LIMITS.maxStoredSide, PHOTO_LIMITS.maxStoredSide, { fit: "inside", withoutEnlargement: true })
      .jpeg({ quality: PHOTO_LIMITS.jpegQuality })
      .toBuffer({ resolveWithObject: true });
    jpeg = out.data;
    width = out.info.width;
    height = out.info.height;
  } catch (error) {
    const message = String((error as Error).message);
    if (/pixel limit/i.test(message)) {
      throw new ApiError("body_too_large", `The photo has more than ${PHOTO_LIMITS.maxPixels / 1e6} megapixels; send it at a lower resolution.`);
    }
    throw new ApiError("parameter_invalid", "The photo could not be decoded; send a JPEG, PNG, WebP or HEIC image.", { param: "photo" });
  }
  const quality = await measureQuality(jpeg);
  return { jpeg, width, height, quality, etag: `"${createHash("sha256").update(jpeg).digest("base64url").slice(0, 27)}"` };
}
