import sharp from "sharp";
import { overPixelLimit, PHOTO_FORMAT_NAMES, SHARP_FORMATS, sniffPhotoType } from "../../capture/photos/sniff-photo-type.ts";

/** What the settings page takes: a PNG, JPEG or WebP of at most 200 KB (SVG never: it can carry script). */
export const LOGO_LIMITS = {
  maxBytes: 200 * 1024,
  /** A 200 KB file may still declare a huge canvas (a decompression bomb): refused before decoding. */
  maxPixels: 4096 * 4096,
  /** The stored logo fits in this box: 3x the capture page's 160 × 40 px header, for sharp phone screens. */
  width: 480,
  height: 120,
} as const;

const kb = (n: number) => `${Math.ceil(n / 1024)} KB`;

/**
 * The logo as uploaded, made into what the capture page loads: decoded (the first frame of an
 * animation, turned upright by its EXIF orientation), scaled down to fit LOGO_LIMITS' box, and
 * written again as a palette PNG, so nothing of the upload but its pixels reaches a customer
 * (no metadata, no trailing bytes). Or why it is refused, in words for the settings page.
 */
export async function logoImage(
  bytes: Buffer,
): Promise<{ ok: true; png: Buffer; width: number; height: number } | { ok: false; error: string }> {
  if (bytes.length > LOGO_LIMITS.maxBytes)
    return {
      ok: false,
      error: `The logo is ${kb(bytes.length)}; it may be at most ${kb(LOGO_LIMITS.maxBytes)}. Save it smaller and try again.`,
    };
  // The format the first bytes say, whatever the browser declared: a photo's formats but HEIC.
  const type = sniffPhotoType(bytes);
  if (!type || type === "image/heic") return { ok: false, error: "The logo must be a PNG, JPEG or WebP image." };
  const format = SHARP_FORMATS[type];
  try {
    const image = sharp(bytes, { limitInputPixels: LOGO_LIMITS.maxPixels, failOn: "error", animated: false });
    const meta = await image.metadata();
    if (meta.format !== format) return { ok: false, error: "The logo must be a PNG, JPEG or WebP image." };
    const { data, info } = await image
      .rotate()
      .resize({ width: LOGO_LIMITS.width, height: LOGO_LIMITS.height, fit: "inside", withoutEnlargement: true })
      .png({ palette: true, compressionLevel: 9, effort: 10 })
      .toBuffer({ resolveWithObject: true });
    return { ok: true, png: data, width: info.width, height: info.height };
  } catch (error) {
    if (overPixelLimit(error))
      return { ok: false, error: `The logo's canvas is too large to read (over ${LOGO_LIMITS.maxPixels.toLocaleString("en")} pixels).` };
    return {
      ok: false,
      error: `The logo could not be read as a ${PHOTO_FORMAT_NAMES[type]} image; it may be damaged. Export it again and try again.`,
    };
  }
}
