import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { THUMB } from "../../core/domain/photo-fingerprint.ts";
import { type IndexedPhoto, PhotoIndex } from "../../core/photo-index.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";

/**
 * How the recycled-photo index (core/photo-index.ts) grows with an account's photos: the time to
 * look up one photo (its hash and its mirror's slices, 144 listings, then the photos within reach
 * read and compared) in an index of N photos with random hashes, in the filesystem blob store
 * embedded mode uses (each photo is 9 files). Prints the median of 20 lookups and its ratio to the
 * smallest index.
 *
 * usage: node test/bench/photo-index-bench.ts   (npm run bench:photo-index; BENCH_SIZES=1000,10000,… to choose)
 */
const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,50000").split(",").map(Number);
const scope = { accountId: "acct_bench", livemode: false };
const hex = () => Array.from({ length: 16 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
const photo = (i: number): IndexedPhoto => ({
  hash: hex(),
  mirrorHash: hex(),
  thumb: Uint8Array.from({ length: THUMB * THUMB }, () => Math.floor(Math.random() * 256)),
  colour: Uint8Array.from({ length: 3 * THUMB * THUMB }, () => Math.floor(Math.random() * 256)),
  mediaId: `med_${i}`,
  inspectionId: `insp_${Math.floor(i / 9)}`,
  takenAt: null,
  paint: null,
  at: i,
});

async function run(name: string, blobs: BlobStore, sizes: number[]) {
  const index = new PhotoIndex(blobs);
  let have = 0;
  let base: number | null = null;
  for (const n of sizes) {
    for (; have < n; have++) await index.add(scope, photo(have));
    const times: number[] = [];
    for (let k = 0; k < 20; k++) {
      const query = photo(1_000_000 + k);
      const t = performance.now();
      await index.firstSent(scope, query);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const median = times[10]!;
    base ??= median;
    console.log(
      `${name}: ${n.toLocaleString("en")} photos indexed, lookup median ${median.toFixed(1)} ms (${(median / base).toFixed(2)}× the smallest)`,
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), "photo-index-bench-"));
try {
  await run("filesystem", new FsBlobStore(dir), SIZES);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
