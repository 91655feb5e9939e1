import exifReader from "exif-reader";
import sharp from "sharp";
import { type Fingerprint, mirrored, THUMB } from "../../core/domain/photo-fingerprint.ts";

/** The lowest DCT frequencies kept: 8 × 8, less the mean, 63 bits, padded with a 0 to 64. */
const K = 8;
const COS = Array.from({ length: K }, (_, u) =>
  Float64Array.from({ length: THUMB }, (_, x) => Math.cos(((2 * x + 1) * u * Math.PI) / (2 * THUMB))),
);

/** The perceptual hash of a THUMB × THUMB grey thumbnail (core/domain/photo-fingerprint.ts), as 16 hex digits. */
function hashOf(thumb: Uint8Array): string {
  const rows: number[][] = [];
  for (let y = 0; y < THUMB; y++) {
    const row: number[] = [];
    for (let u = 0; u < K; u++) {
      let s = 0;
      for (let x = 0; x < THUMB; x++) s += COS[u]![x]! * thumb[y * THUMB + x]!;
      row.push(s);
    }
    rows.push(row);
  }
  const low: number[] = [];
  for (let v = 0; v < K; v++)
    for (let u = 0; u < K; u++) {
      if (u === 0 && v === 0) continue;
      let s = 0;
      for (let y = 0; y < THUMB; y++) s += COS[v]![y]! * rows[y]![u]!;
      low.push(s);
    }
  const median = [...low].sort((a, b) => a - b)[low.length >> 1]!;
  const bits = [...low.map((c) => (c > median ? 1 : 0)), 0];
  let hex = "";
  for (let i = 0; i < 64; i += 4) hex += ((bits[i]! << 3) | (bits[i + 1]! << 2) | (bits[i + 2]! << 1) | bits[i + 3]!).toString(16);
  return hex;
}

/** A stored photo's fingerprint: from the JPEG the service keeps (upright, re-encoded), so every copy of a picture is read alike. */
export async function fingerprintOf(jpeg: Buffer): Promise<Fingerprint> {
  const small = sharp(jpeg).removeAlpha().resize(THUMB, THUMB, { fit: "fill" });
  const [grey, colour] = await Promise.all([small.clone().greyscale().raw().toBuffer(), small.clone().raw().toBuffer()]);
  const thumb = new Uint8Array(grey);
  return { hash: hashOf(thumb), mirrorHash: hashOf(mirrored(thumb)), thumb, colour: new Uint8Array(colour) };
}

/**
 * When the camera says the photo was taken (EXIF DateTimeOriginal), read from the upload as sent
 * (the stored copy is re-encoded without it); null when it does not say. EXIF times carry no zone:
 * they are read as UTC, and whoever compares them allows for any zone.
 */
export async function takenAt(upload: Buffer): Promise<number | null> {
  try {
    const { exif } = await sharp(upload).metadata();
    if (!exif) return null;
    const when = exifReader(exif).Photo?.DateTimeOriginal;
    return when instanceof Date && !Number.isNaN(when.getTime()) ? when.getTime() : null;
  } catch {
    // A photo whose EXIF cannot be read says nothing of when it was taken.
    return null;
  }
}
