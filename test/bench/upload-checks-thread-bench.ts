/**
 * `npm run bench:upload-checks-thread`: what an exterior upload's checks cost the rest of the API,
 * run on the main thread (UploadChecker, as before) and on a worker thread (UploadCheckPool, as the
 * services build them). Each variant takes the same 2 MP photos one after another, as uploads come,
 * with the pixels scaled as an upload scales them, while (1) perf_hooks' event-loop delay histogram
 * runs and (2) a client GETs a tiny node:http server in this process every 10 ms: a request that
 * arrives while session.run holds the loop waits for it, as a GET to the API would. Prints the
 * checks' time, the loop's delay and the GETs' latency (p50/p99/max) of each and the ratio, and
 * whether every verdict is the same. The variants alternate by round. A benchmark: asserts nothing.
 * "ms a photo" on the worker includes the CPU of the many more GETs it answers meanwhile (2 cores).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { loadConfig } from "../../core/runtime/config.ts";
import { scaleForModels } from "../../inference/detection/letterbox.ts";
import { modelInputSizes } from "../../inference/detection/model-input.ts";
import { UploadCheckPool } from "../../inference/quality/upload-check-pool.ts";
import { UploadChecker, type UploadVerdict } from "../../inference/quality/upload-checker.ts";
import { phoneSizedPhotos } from "../helpers/photos.ts";
import { percentile } from "./stats.ts";

const PHOTOS = Number(process.env.BENCH_PHOTOS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const { models } = loadConfig();
if (!models.partsModel) throw new Error("the parts model is needed (PARTS_MODEL)");
const photos = await phoneSizedPhotos(PHOTOS);
const sizes = modelInputSizes(models);
const inputs = await Promise.all(photos.map(async (p) => ({ sizes, scaled: await scaleForModels(p, sizes) })));
const onError = (error: unknown) => {
  throw error;
};
const checkModels = { partsModel: models.partsModel, judgeModel: models.judgeModel };
const variants = [
  { label: "main thread (UploadChecker)", checker: new UploadChecker(checkModels, { onError }) },
  { label: "worker thread (UploadCheckPool)", checker: new UploadCheckPool(checkModels, { onError }) },
];

const server = createServer((_, res) => res.end("ok"));
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

/** The photos checked one after another, with the loop's delay and GETs every 10 ms measured meanwhile. */
async function measure(checker: (typeof variants)[number]["checker"]) {
  const verdicts: UploadVerdict[] = [];
  const gets: number[] = [];
  let running = true;
  const client = (async () => {
    while (running) {
      const t0 = performance.now();
      await (await fetch(url)).text();
      gets.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const t0 = performance.now();
  for (const [i, photo] of photos.entries()) verdicts.push(await checker.check(i % 2 ? "front" : "left", photo, inputs[i]));
  const elapsed = performance.now() - t0;
  delay.disable();
  running = false;
  await client;
  const ms = (ns: number) => ns / 1e6;
  return { verdicts, elapsed, loop: [ms(delay.percentile(50)), ms(delay.percentile(99)), ms(delay.max)], gets };
}

const results = variants.map(() => ({ elapsed: 0, loop: [] as number[][], gets: [] as number[] }));
const verdicts: UploadVerdict[][] = variants.map(() => []);
for (let round = 0; round <= ROUNDS; round++) {
  for (const [k, v] of round % 2 ? [...variants.entries()].reverse() : variants.entries()) {
    const r = await measure(v.checker);
    // Round 0 warms up: sessions created, the thread started, first runs allocate.
    if (round === 0) verdicts[k] = r.verdicts;
    else {
      results[k]!.elapsed += r.elapsed;
      results[k]!.loop.push(r.loop);
      results[k]!.gets.push(...r.gets);
    }
  }
}
const same = verdicts[0]!.filter((v, i) => isDeepStrictEqual(v, verdicts[1]![i])).length;
console.log(
  `${photos.length} photos at 1600 × 1200, judge ${models.judgeModel ? "on" : "off"}, ${ROUNDS} rounds after a warm-up; verdicts identical: ${same} of ${photos.length}`,
);
console.log("| upload checks | ms a photo | loop delay p50 / p99 / max ms | GET p50 / p99 / max ms (n) |\n|---|---:|---:|---:|");
const rows = results.map((r) => ({
  perPhoto: r.elapsed / (ROUNDS * photos.length),
  // The worst round's figures: one slow round is what a client sees.
  loop: [0, 1, 2].map((j) => Math.max(...r.loop.map((l) => l[j]!))),
  get: [percentile(r.gets, 50), percentile(r.gets, 99), Math.max(...r.gets)],
  n: r.gets.length,
}));
for (const [k, v] of variants.entries()) {
  const r = rows[k]!;
  console.log(
    `| ${v.label} | ${r.perPhoto.toFixed(1)} | ${r.loop.map((x) => x.toFixed(1)).join(" / ")} | ${r.get.map((x) => x.toFixed(1)).join(" / ")} (${r.n}) |`,
  );
}
const [main, worker] = rows as [(typeof rows)[0], (typeof rows)[0]];
const ratio = (a: number, b: number) => (a / b).toFixed(2);
console.log(
  `worker / main: ms a photo ${ratio(worker.perPhoto, main.perPhoto)}, loop delay p99 ${ratio(worker.loop[1]!, main.loop[1]!)}, max ${ratio(worker.loop[2]!, main.loop[2]!)}; GET p50 ${ratio(worker.get[0]!, main.get[0]!)}, p99 ${ratio(worker.get[1]!, main.get[1]!)}, max ${ratio(worker.get[2]!, main.get[2]!)}`,
);
server.close();
await Promise.all(variants.map((v) => v.checker.close()));
