import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { THUMB } from "../../core/domain/photo-fingerprint.ts";
import { type IndexedPhoto, PhotoIndex } from "../../core/operations/photo-index.ts";
import { median } from "./stats.ts";

/**
 * How the recycled-photo index (core/operations/photo-index.ts) grows with an account's photos, in the
 * filesystem blob store embedded mode uses: an index of N photos with random fingerprints (so no
 * candidate passes the gates, and what is timed is what grows with N: reading the log, holding it,
 * scanning it), then, for each N:
 * - the first lookup of a process that has not read the log yet (a fresh PhotoIndex);
 * - the median of 20 lookups once it has, each reading what the log gained since (nothing here),
 *   its ratio to the smallest index's, and the CPU a lookup took (less noisy on a shared machine);
 * - the memory the photos take in that process (heap and array buffers, after a collection).
 * What a lookup reads on top (the candidates' fingerprints) is counted on real photos by
 * `npm run eval:reuse`.
 *
 * usage: node --expose-gc test/bench/photo-index-bench.ts   (npm run bench:photo-index; BENCH_SIZES=1000,10000,… to choose)
 */
const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,100000").split(",").map(Number);
const scope = { accountId: "acct_bench", livemode: false };
const hex = () => Array.from({ length: 16 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
const start = Date.parse("2026-01-01T00:00:00Z");
const photo = (i: number, every: number): IndexedPhoto => ({
  hash: hex(),
  mirrorHash: hex(),
  thumb: Uint8Array.from({ length: THUMB * THUMB }, () => Math.floor(Math.random() * 256)),
  colour: Uint8Array.from({ length: 3 * THUMB * THUMB }, () => Math.floor(Math.random() * 256)),
  mediaId: `med_${String(i).padStart(24, "0")}`,
  inspectionId: `insp_${Math.floor(i / 9)}`,
  takenAt: null,
  // Spread over a year, as an account's photos are.
  at: start + i * every,
  paint: null,
});
const gc = (globalThis as { gc?: () => void }).gc;
const memory = () => {
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const dir = mkdtempSync(join(tmpdir(), "photo-index-bench-"));
try {
  const blobs = new FsBlobStore(dir);
  const writer = new PhotoIndex(blobs);
  const last = SIZES.at(-1)!;
  const every = Math.floor((365 * 86_400_000) / last);
  let have = 0;
  let base: number | null = null;
  if (!gc) console.log("(run with --expose-gc for the memory figure)");
  for (const n of SIZES) {
    const [t, from] = [performance.now(), have];
    // Fifty at a time, as many uploads at once would write them.
    for (; have < n; have += 50)
      await Promise.all(Array.from({ length: Math.min(50, n - have) }, (_, k) => writer.add(scope, photo(have + k, every))));
    const addMs = (performance.now() - t) / (n - from);
    const before = memory();
    const reader = new PhotoIndex(blobs);
    const query = () => photo(10_000_000 + Math.floor(Math.random() * 1e6), every);
    const c0 = performance.now();
    await reader.firstSent(scope, query());
    const cold = performance.now() - c0;
    const held = memory() - before;
    const times: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let k = 0; k < 20; k++) {
      const q = query();
      const t1 = performance.now();
      await reader.firstSent(scope, q);
      times.push(performance.now() - t1);
    }
    const { user, system } = process.cpuUsage(cpu0);
    const cpuMs = (user + system) / 1000 / 20;
    const middle = median(times);
    base ??= middle;
    console.log(
      `${n.toLocaleString("en")} photos: indexed at ${(1000 / addMs).toFixed(0)} photos a second; first lookup of a process ${cold.toFixed(0)} ms; ` +
        `lookup median ${middle.toFixed(2)} ms (${(middle / base).toFixed(2)}× the smallest), ${cpuMs.toFixed(2)} ms of CPU` +
        (gc ? `; held in memory ${(held / 2 ** 20).toFixed(1)} MB (${Math.round(held / n)} bytes a photo)` : ""),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
