import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { fingerprintOf } from "../../capture/photos/fingerprint.ts";
import {
  CANDIDATE_BITS,
  type Fingerprint,
  hamming,
  likeness,
  mirrored,
  SAME_PICTURE,
  samePicture,
} from "../../core/domain/photo-fingerprint.ts";

/**
 * The recycled-photo check measured (issue 32): every photo of ../shared/datasets is fingerprinted
 * as capture stores it; a sample is sent "again" resized, re-encoded, cropped and mirrored, and must
 * be found; every pair of distinct photos that the hash makes candidates is checked, and none may
 * match. Prints the pairs that match, for a person to look at: datasets hold a few copies of one
 * picture under two names.
 *
 * usage: node inference/evaluation/reuse-eval.ts [every nth photo for the "again" sample]   (npm run eval:reuse)
 */
const DATASETS = join(import.meta.dirname, "../../../shared/datasets");
const dirs = [
  "car-damage-severity/images",
  "car-parts/testset/JPEGImages",
  "car-parts/trainingset/JPEGImages",
  "car-damage/valid/images",
  "car-damage/train/images",
];
const files = dirs.flatMap((d) =>
  readdirSync(join(DATASETS, d))
    .filter((f) => /\.jpe?g$/i.test(f))
    .map((f) => join(d, f)),
);
const every = Number(process.argv[2] ?? 5);

/** What capture stores: upright, re-encoded at the service's quality. */
const stored = async (bytes: Buffer) => sharp(bytes).rotate().jpeg({ quality: 85 }).toBuffer();

const prints: Fingerprint[] = [];
for (const f of files) prints.push(await fingerprintOf(await stored(readFileSync(join(DATASETS, f)))));

const again: Record<string, (b: Buffer, w: number, h: number) => Promise<Buffer>> = {
  "resized to half, JPEG 70": (b, w) =>
    sharp(b)
      .resize(Math.round(w / 2))
      .jpeg({ quality: 70 })
      .toBuffer(),
  "re-encoded, JPEG 40": (b) => sharp(b).jpeg({ quality: 40 }).toBuffer(),
  "2% cut off each side": (b, w, h) =>
    sharp(b)
      .extract({
        left: Math.round(w * 0.02),
        top: Math.round(h * 0.02),
        width: w - 2 * Math.round(w * 0.02),
        height: h - 2 * Math.round(h * 0.02),
      })
      .toBuffer(),
  "5% cut off one side": (b, w, h) =>
    sharp(b)
      .extract({ left: Math.round(w * 0.05), top: 0, width: w - Math.round(w * 0.05), height: h })
      .toBuffer(),
  "4% cut off each side, then resized": (b, w, h) =>
    sharp(b)
      .extract({
        left: Math.round(w * 0.04),
        top: Math.round(h * 0.04),
        width: w - 2 * Math.round(w * 0.04),
        height: h - 2 * Math.round(h * 0.04),
      })
      .resize(Math.round(w * 0.7))
      .toBuffer(),
  mirrored: (b) => sharp(b).flop().jpeg({ quality: 80 }).toBuffer(),
};
console.log(`photos: ${files.length}; the "again" sample: every ${every}th (${Math.ceil(files.length / every)})`);
const started = performance.now();
let checks = 0;
for (const [name, make] of Object.entries(again)) {
  let found = 0;
  let n = 0;
  for (let i = 0; i < files.length; i += every) {
    const bytes = await stored(readFileSync(join(DATASETS, files[i]!)));
    const { width = 0, height = 0 } = await sharp(bytes).metadata();
    const copy = await fingerprintOf(await stored(await make(bytes, width, height)));
    n++;
    checks++;
    if (samePicture(copy, prints[i]!)) found++;
  }
  console.log(`  ${name}: found ${found} of ${n} (${((100 * found) / n).toFixed(1)}%)`);
}
const perCheck = (performance.now() - started) / checks;

let candidates = 0;
const matches: string[] = [];
let worst = 0;
const t0 = performance.now();
for (let i = 0; i < prints.length; i++)
  for (let j = i + 1; j < prints.length; j++) {
    const a = prints[i]!;
    const b = prints[j]!;
    const direct = hamming(a.hash, b.hash) <= CANDIDATE_BITS;
    const mirror = hamming(a.mirrorHash, b.hash) <= CANDIDATE_BITS;
    if (!direct && !mirror) continue;
    candidates++;
    const like = Math.max(direct ? likeness(a.thumb, b.thumb) : 0, mirror ? likeness(mirrored(a.thumb), b.thumb) : 0);
    if (like >= SAME_PICTURE) matches.push(`${like.toFixed(3)} ${files[i]} ${files[j]}`);
    else worst = Math.max(worst, like);
  }
console.log(
  `pairs of distinct files: ${(prints.length * (prints.length - 1)) / 2}; candidates by hash: ${candidates}; matched: ${matches.length}`,
);
console.log(`  highest likeness among candidates that did not match: ${worst.toFixed(3)} (threshold ${SAME_PICTURE})`);
for (const m of matches) console.log(`  match: ${m}`);
console.log(
  `time: fingerprint and check of one photo sent again ${perCheck.toFixed(1)} ms; all pairs ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
