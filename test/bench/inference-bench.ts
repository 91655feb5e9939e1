/**
 * `npm run bench:inference`: the detection pipeline on this machine's CPU, on real photos.
 * Whole pipeline (OnnxDetector.detectImages: letterbox with sharp, batched session.run, decode, NMS) against a bare
 * session.run on the very same tensors, in the same run; and the resident memory of a process with
 * the model loaded, against a bare Node process. A benchmark: it prints, it asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../core/config.ts";
import { letterbox } from "../../inference/detection/letterbox.ts";
import { OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { DATASETS } from "../helpers/photos.ts";

const PHOTOS = Number(process.env.BENCH_PHOTOS ?? 64);
const BATCH = 8;
const ROUNDS = 3;
const config = loadConfig();
const modelPath = process.env.DAMAGE_MODEL ?? config.models.damageModel;
if (!modelPath) throw new Error("no damage model: set DAMAGE_MODEL or add inference/models/damage/model.onnx");

const dir = join(DATASETS, "car-damage/valid/images");
const files = readdirSync(dir).sort().slice(0, PHOTOS).map((f) => readFileSync(join(dir, f)));
const model = await OnnxDetector.load(modelPath);

async function pipeline(): Promise<number> {
  const t0 = performance.now();
  await model.detectImages(files, BATCH);
  return performance.now() - t0;
}

const tensors = await Promise.all(files.map((f) => letterbox(f, model.size)));
async function bare(): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < tensors.length; i += BATCH) await model.forward(tensors.slice(i, i + BATCH).map((t) => t.chw));
  return performance.now() - t0;
}

await pipeline(); // warm-up: first runs allocate
await bare();
const p: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  p.push(await pipeline());
  b.push(await bare());
}
const best = (xs: number[]) => Math.min(...xs);
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
console.log(`| whole pipeline (letterbox, run, decode, NMS) | ${(1000 / perPhoto(best(p))).toFixed(1)} | ${perPhoto(best(p)).toFixed(1)} |`);
console.log(`| bare session.run, same tensors | ${(1000 / perPhoto(best(b))).toFixed(1)} | ${perPhoto(best(b)).toFixed(1)} |`);
console.log(`pipeline / bare: ${(best(p) / best(b)).toFixed(2)} (overhead ${((best(p) / best(b) - 1) * 100).toFixed(0)}%)`);
console.log(`resident memory: ${mb(modelRss)} MB with the model loaded and run once on a batch, ${mb(bareRss)} MB for a bare Node process`);
