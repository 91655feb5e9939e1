import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";
import { MIN_SIDE_PX } from "../../inference/detection/detect-photos.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";

/** Real car photos from the shared datasets (never copied into the repository). */
export const DATASETS = join(import.meta.dirname, "../../../shared/datasets");

/** car-damage/valid: YOLO-format images and labels the shipped damage model never trained on. */
export const DAMAGE_VALID = join(DATASETS, "car-damage/valid");
/**
 * Real damaged-car photos from car-damage/valid, each with one labelled damage that the shipped
 * model finds, and the angle the tests upload it as.
 */
export const DAMAGED_CASES = [
  { angle: "front", file: "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg", type: "glass_shatter" },
  { angle: "rear_right", file: "001078_jpg.rf.e1f47a21d8b6ec3c11540eddd018192a.jpg", type: "tire_flat" },
  { angle: "left", file: "001377_jpg.rf.dbb81e538b394cd479194e26e826956b.jpg", type: "glass_shatter" },
  // A close-up of a shattered windscreen, on which the parts model finds no part at all: the
  // damage model's sure glass shatter (0.88) vouches that it shows a vehicle.
  { angle: "rear", file: "000215_jpg.rf.7574499536dce9bf8e883ac0998ea3f8.jpg", type: "glass_shatter" },
] as const;
/**
 * A whole damaged car seen from its rear left (car-damage-severity 0423), which the judgement model
 * calls damaged: a rear_left upload of it passes its checks and suggests close-ups.
 */
export const SUGGESTS_CLOSEUPS = join(DATASETS, "car-damage-severity/images/0423_JPEG_jpg.rf.990728d1ae8076ceb1757beef9374cd5.jpg");
/** car-damage-severity: listing, street and phone photos of damaged cars that no model trained on boxes of. */
const SEVERITY_IMAGES = join(DATASETS, "car-damage-severity/images");
/** The car-damage-severity photo whose name starts with `prefix` (its number). */
export const severityPhoto = (prefix: string): Buffer =>
  readFileSync(join(SEVERITY_IMAGES, readdirSync(SEVERITY_IMAGES).find((f) => f.startsWith(`${prefix}_`))!));
const PARTS_DIR = join(DATASETS, "car-parts/testset/JPEGImages");

export function carPhotos(count: number): Buffer[] {
  const files = readdirSync(PARTS_DIR)
    .filter((f) => f.endsWith(".jpg"))
    .sort()
    .slice(0, count);
  return files.map((f) => readFileSync(join(PARTS_DIR, f)));
}

let nextFresh = 9;
/**
 * Nine car photos (a walkaround's eight angles and the VIN's) that no walkaround before it in this
 * test file sent, taken in turn from the car-parts test photos after the first nine (carPhotos(9),
 * what walkarounds send unless told): a report then names no photo as sent before
 * (integrity.reused_photos, core/operations/photo-index.ts) and its review says only what the test is about.
 * Photos with a quality problem are passed over. About ten walkarounds of a file get pictures of
 * their own, then it starts over.
 */
export async function freshPhotos(): Promise<Buffer[]> {
  const pool = carPhotos(100);
  const photos: Buffer[] = [];
  while (photos.length < 9) {
    const photo = pool[nextFresh]!;
    nextFresh = nextFresh + 1 >= pool.length ? 9 : nextFresh + 1;
    // Only photos that pass the upload's checks and are large enough to search (MIN_SIDE_PX): a
    // kept problem is a review reason of its own.
    const { width = 0, height = 0 } = await sharp(photo).metadata();
    if (Math.min(width, height) >= MIN_SIDE_PX && (await measureQuality(photo)).passed) photos.push(photo);
  }
  return photos;
}

/** The first `count` car-damage-severity photos stretched to 1600 × 1200 JPEGs: 2 MP, as a phone sends (the upload benchmarks). */
export function phoneSizedPhotos(count: number): Promise<Buffer[]> {
  return Promise.all(
    readdirSync(SEVERITY_IMAGES)
      .sort()
      .slice(0, count)
      .map((f) =>
        sharp(readFileSync(join(SEVERITY_IMAGES, f)))
          .resize(1600, 1200, { fit: "fill" })
          .jpeg({ quality: 85 })
          .toBuffer(),
      ),
  );
}

/**
 * A real photo with no car in it: trees and a roof edge, the strip above the car in a car-parts
 * test photo. The damage model alone sees a "scratch" in it (0.47); the parts model
 * no part at all.
 */
export async function streetBackground(): Promise<Buffer> {
  return sharp(readFileSync(join(PARTS_DIR, "te78.jpg")))
    .extract({ left: 0, top: 0, width: 1600, height: 340 })
    .jpeg()
    .toBuffer();
}

export const carPhoto = (index = 0): Buffer => carPhotos(index + 1)[index]!;

/**
 * An image as an iPhone would send it: HEIC (HEVC in HEIF), encoded by libheif's heif-enc (Debian's
 * libheif-examples; .ci/run installs it). `preset=ultrafast` keeps a 48-megapixel encode to seconds.
 */
export async function heicOf(image: Buffer): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), "vi-heic-"));
  try {
    writeFileSync(join(dir, "in.png"), await sharp(image).png({ compressionLevel: 1 }).toBuffer());
    await promisify(execFile)("heif-enc", ["-q", "60", "-p", "preset=ultrafast", join(dir, "in.png"), "-o", join(dir, "out.heic")]);
    return readFileSync(join(dir, "out.heic"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
