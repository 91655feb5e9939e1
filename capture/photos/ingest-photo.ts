import { createHash } from "node:crypto";
import { type Readable, Transform, type TransformCallback } from "node:stream";
import pLimit from "p-limit";
import sharp, { type OutputInfo, type Sharp } from "sharp";
import { ApiError, isApiError } from "../../core/domain/errors.ts";
import type { IngestedPhoto } from "../../core/ports/photo-intake.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { decodeHeic } from "./decode-heic.ts";
import { overPixelLimit, PHOTO_FORMAT_NAMES, SHARP_FORMATS, sniffPhotoType, type PhotoContentType } from "./sniff-photo-type.ts";

export const PHOTO_LIMITS = {
  maxBytes: 15 * 1024 * 1024,
  /** Decompression bombs: a small file that decodes to a huge bitmap is refused before decoding. */
  maxPixels: 40_000_000,
  /** Stored photos are bounded too: 4096 px on the long side keeps damage detail without keeping a 48 MP original. */
  maxStoredSide: 4096,
  jpegQuality: 85,
  /**
   * Above this many pixels (a 12 MP phone photo is below) a photo decodes only after the heavy one
   * before it is done. So a burst of heavy photos holds at most one of libuv's four threads, and
   * ordinary photos never queue behind them: a gate on every decode, measured by `npm run
   * bench:uploads`, put that wait into other customers' uploads (issue 16).
   */
  heavyPixels: 16_000_000,
} as const;

const names = Object.values(PHOTO_FORMAT_NAMES);
const ACCEPTED = `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
const heavyDecodes = pLimit(1);

const notAccepted = () =>
  new ApiError("unsupported_media_type", `The photo is not a ${ACCEPTED} image; send one of those.`, { param: "photo" });
const tooLarge = () =>
  new ApiError("body_too_large", `The photo has more than ${PHOTO_LIMITS.maxPixels / 1e6} megapixels; send it at a lower resolution.`);

/**
 * The photo's format from its bytes, which must be the one its Content-Type declares. Checked before
 * anything decodes them: libvips would otherwise pick a loader from the bytes alone, and render an
 * SVG (nested entities held a thread for tens of seconds, issue 16), a GIF, a TIFF sent as image/jpeg.
 */
export function photoType(input: Buffer, declaredType: string): PhotoContentType {
  const found = sniffPhotoType(input);
  if (!found) throw notAccepted();
  if (found !== declaredType) {
    throw new ApiError(
      "unsupported_media_type",
      `The photo is a ${PHOTO_FORMAT_NAMES[found]} image but was sent as ${declaredType}; send it as ${found}.`,
      { param: "photo" },
    );
  }
  return found;
}

const toStoredJpeg = (image: Sharp) =>
  image
    .rotate()
    .resize(PHOTO_LIMITS.maxStoredSide, PHOTO_LIMITS.maxStoredSide, { fit: "inside", withoutEnlargement: true })
    .jpeg({ quality: PHOTO_LIMITS.jpegQuality })
    .toBuffer({ resolveWithObject: true });

/**
 * HEIC goes to libheif, on its own single thread (decode-heic.ts). Any other format's header is read
 * first: the magic numbers steer libvips to the loader they name, and its own reading is checked
 * too; a decompression bomb is refused there, and a heavy photo waits for the one before it.
 */
async function decode(input: Buffer, type: PhotoContentType): Promise<{ data: Buffer; info: OutputInfo }> {
  if (type === "image/heic") {
    const { width, height, rgba } = await decodeHeic(input, PHOTO_LIMITS.maxPixels);
    return toStoredJpeg(sharp(rgba, { raw: { width, height, channels: 4 }, limitInputPixels: PHOTO_LIMITS.maxPixels }).removeAlpha());
  }
  const image = sharp(input, { limitInputPixels: PHOTO_LIMITS.maxPixels, failOn: "error" });
  const { format, width = 0, height = 0 } = await image.metadata();
  if (format !== SHARP_FORMATS[type]) throw notAccepted();
  if (width * height > PHOTO_LIMITS.maxPixels) throw tooLarge();
  return width * height > PHOTO_LIMITS.heavyPixels ? heavyDecodes(() => toStoredJpeg(image)) : toStoredJpeg(image);
}

/**
 * Checks the format, decodes, applies the EXIF orientation, and re-encodes as JPEG. sharp writes no
 * metadata unless asked, so EXIF (GPS location included), XMP and ICC comments are dropped. HEIC is
 * decoded to pixels first, its rotation and mirroring applied by libheif, so no metadata survives
 * that way either.
 */
/** Enough of a photo's first bytes to tell its format: HEIC's brands sit in its first box. */
const HEAD_BYTES = 4096;

/**
 * The upload's body as it arrives, refused (415) as soon as its first bytes say it is not what it
 * claims: a hostile upload costs the service a few kilobytes, not the whole body read into memory
 * before the check (a Fastify preParsing stream; it keeps `receivedEncodedLength` for Fastify's
 * length checks).
 */
export function checkedAsItArrives(payload: Readable & { receivedEncodedLength?: number }, declaredType: string): Readable {
  let head: Buffer | null = Buffer.alloc(0);
  const check = (chunk: Buffer | null, done: TransformCallback) => {
    if (chunk) head = Buffer.concat([head!, chunk]);
    if (chunk && head!.length < HEAD_BYTES) return done();
    try {
      photoType(head!, declaredType);
    } catch (error) {
      return done(error as Error);
    }
    const first = head;
    head = null;
    done(null, first);
  };
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      (checked as { receivedEncodedLength?: number }).receivedEncodedLength = payload.receivedEncodedLength ?? 0;
      if (head === null) return done(null, chunk);
      check(chunk, done);
    },
    flush(done) {
      if (head === null || head.length === 0) return done();
      check(null, done);
    },
  });
  // Fastify may answer without reading the body (a Content-Length over the limit): the refusal
  // then has no reader, and must not become an unhandled error.
  checked.on("error", () => {});
  return payload.pipe(checked);
}

export async function ingestPhoto(input: Buffer, declaredType: string): Promise<IngestedPhoto> {
  const type = photoType(input, declaredType);
  let out: { data: Buffer; info: OutputInfo };
  try {
    out = await decode(input, type);
  } catch (error) {
    if (isApiError(error)) throw error;
    if (overPixelLimit(error)) throw tooLarge();
    throw new ApiError("parameter_invalid", `The photo could not be decoded; send a ${ACCEPTED} image.`, { param: "photo" });
  }
  const { data: jpeg, info } = out;
  const quality = await measureQuality(jpeg);
  return {
    jpeg,
    width: info.width,
    height: info.height,
    quality,
    etag: `"${createHash("sha256").update(jpeg).digest("base64url").slice(0, 27)}"`,
  };
}
