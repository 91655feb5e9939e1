import type { PHOTO_CONTENT_TYPES } from "../../core/schemas/capture.ts";
import { isHeic } from "./decode-heic.ts";

export type PhotoContentType = (typeof PHOTO_CONTENT_TYPES)[number];

/** What a message calls each accepted format. */
export const PHOTO_FORMAT_NAMES = {
  "image/jpeg": "JPEG",
  "image/png": "PNG",
  "image/webp": "WebP",
  "image/heic": "HEIC",
} as const satisfies Record<PhotoContentType, string>;

/** sharp's name for each format it decodes itself, which its metadata must read back; HEIC goes to libheif instead (decode-heic.ts). */
export const SHARP_FORMATS = { "image/jpeg": "jpeg", "image/png": "png", "image/webp": "webp" } as const satisfies Record<
  Exclude<PhotoContentType, "image/heic">,
  string
>;

/** Whether a decode was refused for its pixel count: sharp's words for its limit, which the HEIC worker uses too. */
export const overPixelLimit = (error: unknown): boolean => /pixel limit/i.test(String((error as Error | undefined)?.message));

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Which accepted format the bytes are, from their magic numbers, or null for anything else. An
 * allow-list, not a list of formats to refuse: SVG has no fixed first bytes (whitespace, a BOM,
 * `<?xml`, a comment), so the only safe answer for bytes that are none of these is no.
 */
export function sniffPhotoType(bytes: Buffer): PhotoContentType | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return "image/png";
  if (bytes.length >= 12 && bytes.toString("latin1", 0, 4) === "RIFF" && bytes.toString("latin1", 8, 12) === "WEBP") return "image/webp";
  if (isHeic(bytes)) return "image/heic";
  return null;
}
