import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { fingerprintOf } from "../../capture/photos/fingerprint.ts";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { samePicture } from "../../core/domain/photo-fingerprint.ts";
import { type IndexedPhoto, PhotoIndex } from "../../core/operations/photo-index.ts";

/**
 * The recycled-photo check measured as the service runs it (issue 32): every photo of
 * ../shared/datasets is fingerprinted as capture stores it and indexed (core/operations/photo-index.ts, in
 * the filesystem blob store), each as another inspection's; a sample is sent "again" resized, re-encoded, cropped and
 * mirrored, and must be found through the index; then every photo is looked up among all the others,
 * and any match between two files is printed, for a person to look at (the datasets hold some
 * copies of one picture under two names).
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

// Each dataset photo is an inspection's photo of its own, indexed as capture indexes it.
const indexDir = mkdtempSync(join(tmpdir(), "reuse-eval-"));
process.on("exit", () => rmSync(indexDir, { recursive: true, force: true }));
const index = new PhotoIndex(new FsBlobStore(indexDir));
const scope = { accountId: "acct_eval", livemode: false };
const indexed: IndexedPhoto[] = [];
for (const [i, f] of files.entries()) {
  const photo = {
    ...(await fingerprintOf(await stored(readFileSync(join(DATASETS, f))))),
    mediaId: `med_${i}`,
    inspectionId: `insp_${i}`,
    takenAt: null,
    paint: null,
    at: i,
  };
  indexed.push(photo);
  await index.add(scope, photo);
}

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
console.log(
  `photos indexed: ${files.length}; sent again: every ${every}th (${Math.ceil(files.length / every)}) in each of ${Object.keys(again).length} ways`,
);
const lookups: number[] = [];
for (const [name, make] of Object.entries(again)) {
  let found = 0;
  let n = 0;
  for (let i = 0; i < files.length; i += every) {
    const bytes = await stored(readFileSync(join(DATASETS, files[i]!)));
    const { width = 0, height = 0 } = await sharp(bytes).metadata();
    const copy = {
      ...(await fingerprintOf(await stored(await make(bytes, width, height)))),
      mediaId: "med_again",
      inspectionId: "insp_again",
      takenAt: null,
      paint: null,
      at: 1e9,
    };
    const t = performance.now();
    const first = await index.firstSent(scope, copy);
    lookups.push(performance.now() - t);
    n++;
    // The earliest photo of that picture: the one sent again, or a copy of it the datasets hold under another name.
    if (first && (first.mediaId === `med_${i}` || samePicture(indexed[i]!, first))) found++;
  }
  console.log(`  ${name}: found ${found} of ${n} (${((100 * found) / n).toFixed(1)}%)`);
}
lookups.sort((a, b) => a - b);

// Every photo looked up among all the others: a match is two files of the datasets taken for one picture.
const matches: string[] = [];
let read = 0;
for (const [i, photo] of indexed.entries()) {
  const { first, candidates } = await index.lookUp(scope, photo);
  read += candidates;
  if (first && first.at < photo.at) matches.push(`${files[Number(first.mediaId.slice(4))]} ~ ${files[i]}`);
}
console.log(`distinct files matched to an earlier one: ${matches.length} (each below, for a person to look at)`);
for (const m of matches) console.log(`  ${m}`);
console.log(
  `lookup in an index of ${files.length} photos: median ${lookups[lookups.length >> 1]!.toFixed(1)} ms, p95 ${lookups[Math.floor(lookups.length * 0.95)]!.toFixed(1)} ms`,
);
// What the hash and the coarse pictures leave to read and compare: it grows with the account's photos.
const perLookup = read / indexed.length;
console.log(
  `candidates read and compared a lookup: ${perLookup.toFixed(2)} among ${files.length} photos (${((perLookup / files.length) * 10_000).toFixed(2)} per 10,000 photos indexed)`,
);
