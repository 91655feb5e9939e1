/**
 * `npm run bench:inference`: the detection pipeline on this machine's CPU, on real photos.
 * Whole pipeline (detectImages: letterbox with sharp, batched session.run, decode, NMS) against a bare
 * session.run on the very same tensors, in the same run; and the resident memory of a process with
 * the model loaded, against a bare Node process. With a parts model configured, also what processing
 * runs: both models over the photos, decoded once for both against a decode per model.
 * A benchmark: it prints, it asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../core/config.ts";
import { detectImages } from "../../inference/detection/detect-images.ts";
import { letterbox } from "../../inference/detection/letterbox.ts";
import { OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { DATASETS } from "../helpers/photos.ts";

const PHOTOS = Number(process.env.BENCH_PHOTOS ?? 64);
const BATCH = 8;
// Best of several rounds, pipeline and bare interleaved: on a shared host single rounds swing by 15%.
const ROUNDS = 5;
const config = loadConfig();
const modelPath = process.env.DAMAGE_MODEL ?? config.models.damageModel;
if (!modelPath) throw new Error("no damage model: set DAMAGE_MODEL or add inference/models/damage/model.onnx");

const dir = join(DATASETS, "car-damage/valid/images");
const files = readdirSync(dir).sort().slice(0, PHOTOS).map((f) => readFileSync(join(dir, f)));
const model = await OnnxDetector.load(modelPath);

/** Best wall time of each run over ROUNDS interleaved rounds, after one warm-up round (first runs allocate). */
async function bestOf(runs: (() => Promise<unknown>)[]): Promise<number[]> {
  for (const run of runs) await run();
  const best = runs.map(() => Infinity);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, run] of runs.entries()) {
      const t0 = performance.now();
      await run();
      best[k] = Math.min(best[k]!, performance.now() - t0);
    }
  }
  return best;
}
const forwardAll = async (m: OnnxDetector, ts: { chw: Float32Array }[]) => {
  for (let i = 0; i < ts.length; i += BATCH) await m.forward(ts.slice(i, i + BATCH).map((t) => t.chw));
};

const tensors = await Promise.all(files.map((f) => letterbox(f, model.size)));
const [p, b] = (await bestOf([() => detectImages([model], files, { batchSize: BATCH }), () => forwardAll(model, tensors)])) as [number, number];

// Processing's detection: both models, each photo decoded once; for comparison, a decode per model,
// and both models' bare runs on the same tensors.
const partsPath = config.models.partsModel;
const parts = partsPath ? await OnnxDetector.load(partsPath) : null;
const partsTensors = parts ? await Promise.all(files.map((f) => letterbox(f, parts.size))) : [];
const [once, each, bb] = parts
  ? ((await bestOf([
      () => detectImages([model, parts], files, { batchSize: BATCH }),
      async () => { for (const m of [model, parts]) await detectImages([m], files, { batchSize: BATCH }); },
      async () => { await forwardAll(model, tensors); await forwardAll(parts, partsTensors); },
    ])) as [number, number, number])
  : [];
const perPhoto = (ms: number) => ms / files.length;

const rss = (script: string) => Number(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }).trim());
const bareRss = rss("console.log(process.memoryUsage().rss)");
const modelRss = rss(`import { OnnxDetector } from ${JSON.stringify(new URL("../../inference/detection/onnx-detector.ts", import.meta.url).href)};
import { letterbox } from ${JSON.stringify(new URL("../../inference/detection/letterbox.ts", import.meta.url).href)};
import { readFileSync } from "node:fs";
const m = await OnnxDetector.load(${JSON.stringify(modelPath)});
const x = await letterbox(readFileSync(${JSON.stringify(join(dir, readdirSync(dir).sort()[0]!))}), m.size);
await m.detect(Array(${BATCH}).fill(x));
console.log(process.memoryUsage().rss);`);

const mb = (v: number) => (v / 1024 / 1024).toFixed(0);
console.log(`model ${model.info.name} (${model.info.version}), input ${model.size} px, ${files.length} photos from car-damage/valid, batches of ${BATCH}, best of ${ROUNDS}, Node ${process.version}, CPU`);
console.log("| run | photos/s | ms per photo |");
console.log("|---|---:|---:|");
console.log(`| whole pipeline (letterbox, run, decode, NMS) | ${(1000 / perPhoto(p)).toFixed(1)} | ${perPhoto(p).toFixed(1)} |`);
console.log(`| bare session.run, same tensors | ${(1000 / perPhoto(b)).toFixed(1)} | ${perPhoto(b).toFixed(1)} |`);
console.log(`pipeline / bare: ${(p / b).toFixed(2)} (overhead ${((p / b - 1) * 100).toFixed(0)}%)`);
if (parts) {
  const row = (label: string, ms: number) => console.log(`| ${label} | ${(1000 / perPhoto(ms)).toFixed(1)} | ${perPhoto(ms).toFixed(1)} |`);
  console.log(`\nprocessing's detection: the damage model and the parts model (${parts.size} px)`);
  console.log("| run | photos/s | ms per photo |");
  console.log("|---|---:|---:|");
  row("whole pipeline, one decode a photo for both models", once!);
  row("whole pipeline, a decode per model", each!);
  row("bare session.run of both models, same tensors", bb!);
  console.log(`both models, pipeline / bare: ${(once! / bb!).toFixed(2)}; one decode against a decode per model: ${(once! / each!).toFixed(2)}`);
}
console.log(`resident memory: ${mb(modelRss)} MB with the model loaded and run once on a batch, ${mb(bareRss)} MB for a bare Node process`);
