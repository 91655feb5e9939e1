/**
 * `npm run bench:inference`: the detection pipeline on this machine's CPU, on real photos.
 * Whole pipeline (detectImages: tensors, batched session.run, decode, NMS) against a bare session.run
 * on the very same tensors, in the same run: from the model inputs capture stores on upload (what
 * processing reads) and from the encoded photo (letterboxing with sharp). The resident memory of a
 * process with the model loaded, against a bare Node process. With a parts model configured, also
 * what processing runs: both models over the photos, from the stored inputs, decoded once for both,
 * or decoded per model; the same at 12 MP, as phones send photos; and the upload's cost of making
 * the model inputs. A benchmark: it prints, it asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { detectImages } from "../../inference/detection/detect-images.ts";
import { letterbox, letterboxes, scaleForModels, type ScaledPixels } from "../../inference/detection/letterbox.ts";
import { BlobModelInputStore, inputSizesFor } from "../../inference/detection/model-input.ts";
import { mirror, OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { detectPhotos } from "../../inference/detection/detect-photos.ts";
import { closeModels, loadModels } from "../../inference/detection/load-models.ts";
import { measureQuality } from "../../inference/quality/measure-quality.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { CLOSEUP, VEHICLE_PARTS } from "../../core/domain/closeups.ts";
import { DATASETS } from "../helpers/photos.ts";
import { percentile } from "./stats.ts";

const PHOTOS = Number(process.env.BENCH_PHOTOS ?? 64);
const BATCH = 8;
const PHONE_PHOTOS = 32;
// Best of several rounds, pipeline and bare interleaved: on a shared host single rounds swing by 15%.
const ROUNDS = 5;
const config = loadConfig();
const modelPath = process.env.DAMAGE_MODEL ?? config.models.damageModel;
if (!modelPath) throw new Error("no damage model: set DAMAGE_MODEL or add inference/models/damage/model.onnx");

const dir = join(DATASETS, "car-damage/valid/images");
const files = readdirSync(dir)
  .sort()
  .slice(0, PHOTOS)
  .map((f) => readFileSync(join(dir, f)));
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

/**
 * What capture stores on upload (model-input.ts), in a blob store on disk; the run reads them back
 * as processing does, reading included.
 */
const blobs: BlobStore = new FsBlobStore(mkdtempSync(join(tmpdir(), "vi-bench-inputs-")));
async function storeInputs(photos: Buffer[], sizes: number[], tag: string): Promise<() => Promise<ScaledPixels[]>> {
  const stored = new BlobModelInputStore(blobs, sizes);
  const dims = await Promise.all(
    photos.map(async (f, i) => {
      await stored.write(tag, { mediaId: `med_${i}`, angle: "front" }, f);
      const { width = 0, height = 0 } = await sharp(f).metadata();
      return { width, height };
    }),
  );
  return async () => Promise.all(dims.map(async ({ width, height }, i) => (await stored.read(tag, `med_${i}`, width, height))!));
}

const tensors = await Promise.all(files.map((f) => letterbox(f, model.size)));
const stored = await storeInputs(files, [model.size], "one");
const [p, st, b] = (await bestOf([
  () => detectImages([model], files, { batchSize: BATCH }),
  async () => detectImages([model], await stored(), { batchSize: BATCH }),
  () => forwardAll(model, tensors),
])) as [number, number, number];

// Processing's detection: both models, each photo decoded once, or from its stored model inputs; for
// comparison, a decode per model, and both models' bare runs on the same tensors. Then the same
// photos as a phone sends them (12 MP), where decoding for both models takes 20 ms of CPU, near the
// damage model's 25.5.
const partsPath = config.models.partsModel;
const parts = partsPath ? await OnnxDetector.load(partsPath) : null;
const both = parts ? [model, parts] : [];
const sizes = both.map((m) => m.size);
const partsTensors = parts ? await Promise.all(files.map((f) => letterbox(f, parts.size))) : [];
const storedBoth = await storeInputs(parts ? files : [], sizes, "both");
const [once, fromStored, each, bb] = parts
  ? ((await bestOf([
      () => detectImages(both, files, { batchSize: BATCH }),
      async () => detectImages(both, await storedBoth(), { batchSize: BATCH }),
      async () => {
        for (const m of both) await detectImages([m], files, { batchSize: BATCH });
      },
      async () => {
        await forwardAll(model, tensors);
        await forwardAll(parts!, partsTensors);
      },
    ])) as [number, number, number, number])
  : [];
const phone = parts
  ? await Promise.all(
      files.slice(0, PHONE_PHOTOS).map((f) => sharp(f).resize(4032, 3024, { fit: "fill" }).jpeg({ quality: 85 }).toBuffer()),
    )
  : [];
const phoneStored = await storeInputs(phone, sizes, "phone");
// The phone photos are the first photos stretched to 4:3, so their bare runs are on their own tensors.
const phoneTensors = parts ? await Promise.all(phone.map((f) => letterboxes(f, sizes))) : [];
const [phoneOnce, phoneFromStored, phoneBare] = parts
  ? ((await bestOf([
      () => detectImages(both, phone, { batchSize: BATCH }),
      async () => detectImages(both, await phoneStored(), { batchSize: BATCH }),
      async () => {
        await forwardAll(
          model,
          phoneTensors.map((t) => t[0]!),
        );
        await forwardAll(
          parts,
          phoneTensors.map((t) => t[1]!),
        );
      },
    ])) as [number, number, number])
  : [];
// The upload's share: scaling the stored JPEG for both models, one photo at a time as uploads come.
const uploadCost = async (photos: Buffer[]) => {
  const [ms] = await bestOf([
    async () => {
      for (const f of photos) await scaleForModels(f, sizes.length ? sizes : [model.size]);
    },
  ]);
  return ms! / photos.length;
};
const [uploadMs, phoneUploadMs] = [await uploadCost(files), parts ? await uploadCost(phone) : 0];

const rss = (script: string) => Number(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }).trim());
const bareRss = rss("console.log(process.memoryUsage().rss)");
const modelRss =
  rss(`import { OnnxDetector } from ${JSON.stringify(new URL("../../inference/detection/onnx-detector.ts", import.meta.url).href)};
import { letterbox } from ${JSON.stringify(new URL("../../inference/detection/letterbox.ts", import.meta.url).href)};
import { readFileSync } from "node:fs";
const m = await OnnxDetector.load(${JSON.stringify(modelPath)});
const x = await letterbox(readFileSync(${JSON.stringify(join(dir, readdirSync(dir).sort()[0]!))}), m.size);
await m.detect(Array(${BATCH}).fill(x));
console.log(process.memoryUsage().rss);`);

const mb = (v: number) => (v / 1024 / 1024).toFixed(0);
console.log(
  `model ${model.info.name} (${model.info.version}), input ${model.size} px, ${files.length} photos from car-damage/valid, batches of ${BATCH}, best of ${ROUNDS}, Node ${process.version}, CPU`,
);
const row = (label: string, ms: number, n = files.length) =>
  console.log(`| ${label} | ${((1000 * n) / ms).toFixed(1)} | ${(ms / n).toFixed(1)} |`);
const header = () => console.log("| run | photos/s | ms per photo |\n|---|---:|---:|");
header();
row("whole pipeline from the photo (decode and letterbox, run, decode, NMS)", p);
row("whole pipeline from the model inputs stored on upload (processing)", st);
row("bare session.run, same tensors", b);
console.log(`pipeline / bare: ${(st / b).toFixed(2)} from the stored model inputs, ${(p / b).toFixed(2)} from the photo`);
if (parts) {
  console.log(`\nprocessing's detection: the damage model and the parts model (${parts.size} px)`);
  header();
  row("whole pipeline from the photo, one decode for both models", once!);
  row("whole pipeline from the model inputs stored on upload (processing)", fromStored!);
  row("whole pipeline from the photo, a decode per model", each!);
  row("bare session.run of both models, same tensors", bb!);
  console.log(
    `both models, pipeline / bare: ${(fromStored! / bb!).toFixed(2)} from the stored model inputs, ${(once! / bb!).toFixed(2)} from the photo; one decode against a decode per model: ${(once! / each!).toFixed(2)}`,
  );
  console.log(`\nthe first ${phone.length} photos as a phone sends them: 4032 × 3024 JPEG (quality 85), both models`);
  header();
  row("whole pipeline from the photo", phoneOnce!, phone.length);
  row("whole pipeline from the model inputs stored on upload (processing)", phoneFromStored!, phone.length);
  row("bare session.run of both models, same tensors", phoneBare!, phone.length);
  console.log(
    `12 MP, pipeline / bare: ${(phoneFromStored! / phoneBare!).toFixed(2)} from the stored model inputs, ${(phoneOnce! / phoneBare!).toFixed(2)} from the photo`,
  );
}
console.log(
  `\nmaking the model inputs on upload, one photo at a time: ${uploadMs.toFixed(1)} ms a dataset photo${parts ? `, ${phoneUploadMs.toFixed(1)} ms a 12 MP photo` : ""}`,
);
console.log(`resident memory: ${mb(modelRss)} MB with the model loaded and run once on a batch, ${mb(bareRss)} MB for a bare Node process`);

// Processing as a whole, as the controller runs it: detectPhotos with the three models (the damage
// and parts models and the whole-photo judgement) on whole-car photos from their stored model
// inputs, findings placed and evidence drawn; against the three models' bare session.run on the
// same tensors.
if (config.models.judgeModel && parts) {
  const models = await loadModels(config.models);
  const judge = models.judge!;
  const allSizes = [model.size, parts.size, judge.size];
  const wholeDir = join(DATASETS, "car-damage-severity/images");
  const whole = readdirSync(wholeDir)
    .sort()
    .slice(0, Math.min(PHOTOS, 32))
    .map((f) => readFileSync(join(wholeDir, f)));
  const photos: PhotoToInspect[] = [];
  const wholeInputs = new BlobModelInputStore(blobs, allSizes);
  for (const [i, f] of whole.entries()) {
    const blobKey = photoBlobKey("whole", `med_${i}`);
    await blobs.put(blobKey, f, "image/jpeg");
    const angle = EXTERIOR_ANGLES[i % EXTERIOR_ANGLES.length]!;
    await wholeInputs.write("whole", { mediaId: `med_${i}`, angle }, f);
    photos.push({ mediaId: `med_${i}`, angle, blobKey, quality: await measureQuality(f) });
  }
  const wholeTensors = await Promise.all(whole.map((f) => letterboxes(f, allSizes)));
  const judgeBare = async () => {
    for (let i = 0; i < wholeTensors.length; i += BATCH) await judge.judge(wholeTensors.slice(i, i + BATCH).map((t) => t[2]!));
  };
  const [pipeline, bare3, judgeOnly] = (await bestOf([
    () => detectPhotos(blobs, "whole", photos, models),
    async () => {
      await forwardAll(
        model,
        wholeTensors.map((t) => t[0]!),
      );
      await forwardAll(
        parts,
        wholeTensors.map((t) => t[1]!),
      );
      await judgeBare();
    },
    judgeBare,
  ])) as [number, number, number];
  console.log(
    `\nprocessing as a whole (detectPhotos: damage, parts and judge ${judge.size} px, findings and evidence), ${whole.length} car-damage-severity photos`,
  );
  header();
  row("whole pipeline from the model inputs stored on upload", pipeline, whole.length);
  row("bare session.run of the three models, same tensors", bare3, whole.length);
  row("bare session.run of the judge alone", judgeOnly, whole.length);
  console.log(`three models, pipeline / bare: ${(pipeline / bare3).toFixed(2)}`);
  await closeModels(models);
}

// A close-up's processing (issue 36's 150 ms a photo): detectPhotos on one close-up at a time, as
// the customer adds them, from its stored model inputs: the damage model on the photo and its mirror
// (MIRRORED), the close-up model likewise where one is configured (detect-closeups.ts), the parts
// model, the judgement, findings on the customer's part and their evidence. Beside it the same photo
// as a walkaround photo (one view), and the bare session.runs the close-up needs on the same
// tensors. Each photo's best of CLOSEUP_ROUNDS, the three interleaved photo by photo; p50 and p90
// over the photos.
const CLOSEUPS = Number(process.env.BENCH_CLOSEUPS ?? 30);
const CLOSEUP_ROUNDS = 2;
if (CLOSEUPS > 0) {
  const models = await loadModels(config.models);
  const damage = models.damage!;
  const { closeup } = models;
  const allSizes = inputSizesFor(damage.size, models.parts?.size ?? null, models.judge?.size ?? null, closeup?.size ?? null);
  const names = readdirSync(dir).sort().slice(0, CLOSEUPS);
  const closeInputs = new BlobModelInputStore(blobs, allSizes);
  const cases: { closeup: PhotoToInspect; walkaround: PhotoToInspect; bare: () => Promise<unknown> }[] = [];
  for (const [i, name] of names.entries()) {
    const f = readFileSync(join(dir, name));
    const quality = await measureQuality(f);
    const place = async (tag: string, angle: string, part: string | null): Promise<PhotoToInspect> => {
      const blobKey = photoBlobKey(tag, `med_${i}`);
      await blobs.put(blobKey, f, "image/jpeg");
      await closeInputs.write(tag, { mediaId: `med_${i}`, angle }, f);
      return { mediaId: `med_${i}`, angle, blobKey, quality, part };
    };
    const tensors = await letterboxes(f, allSizes);
    const [d, p, j] = tensors;
    const views = [d!.chw, mirror(d!.chw, damage.size)];
    // The close-up model's tensor is among them (inputSizesFor): the judge's, for the shipped models.
    const c = closeup ? tensors[allSizes.indexOf(closeup.size)]! : null;
    cases.push({
      closeup: await place(`closeup_${i}`, CLOSEUP, VEHICLE_PARTS[i % VEHICLE_PARTS.length]!),
      walkaround: await place(`walkaround_${i}`, EXTERIOR_ANGLES[i % EXTERIOR_ANGLES.length]!, null),
      bare: async () => {
        await damage.forward(views);
        if (closeup && c) await closeup.forward([c.chw, mirror(c.chw, closeup.size)]);
        if (models.parts) await models.parts.forward([p!.chw]);
        if (models.judge) await models.judge.judge([models.parts ? j! : p!]);
      },
    });
  }
  const runs = (c: (typeof cases)[number]) => [
    () => detectPhotos(blobs, `closeup_${cases.indexOf(c)}`, [c.closeup], models),
    () => detectPhotos(blobs, `walkaround_${cases.indexOf(c)}`, [c.walkaround], models),
    c.bare,
  ];
  for (const c of cases.slice(0, 3)) for (const run of runs(c)) await run();
  const best = cases.map(() => [Infinity, Infinity, Infinity]);
  for (let r = 0; r < CLOSEUP_ROUNDS; r++) {
    for (const [i, c] of cases.entries()) {
      for (const [k, run] of runs(c).entries()) {
        const t0 = performance.now();
        await run();
        best[i]![k] = Math.min(best[i]![k]!, performance.now() - t0);
      }
    }
  }
  const pct = (k: number, q: number) =>
    percentile(
      best.map((b) => b[k]!),
      q * 100,
    );
  const used = [
    "damage × 2 views",
    closeup ? `close-up model ${closeup.size} px × 2 views` : null,
    models.parts ? `parts ${models.parts.size} px` : null,
    models.judge ? `judge ${models.judge.size} px` : null,
  ];
  console.log(
    `\na close-up's processing, one at a time (detectPhotos, angle ${CLOSEUP}: ${used.filter(Boolean).join(", ")}; findings and evidence), ${cases.length} car-damage/valid photos, best of ${CLOSEUP_ROUNDS} each`,
  );
  console.log("| run | p50 ms a photo | p90 ms a photo |\n|---|---:|---:|");
  const line = (label: string, k: number) => console.log(`| ${label} | ${pct(k, 0.5).toFixed(1)} | ${pct(k, 0.9).toFixed(1)} |`);
  line("close-up, whole pipeline from the model inputs stored on upload", 0);
  line("the same photo as a walkaround photo (one view)", 1);
  line("bare session.run of the close-up's model runs, same tensors", 2);
  console.log(
    `close-up pipeline / bare: ${(pct(0, 0.5) / pct(2, 0.5)).toFixed(2)} at p50; close-up / walkaround: ${(pct(0, 0.5) / pct(1, 0.5)).toFixed(2)} at p50`,
  );
  // As processing meets them: an inspection's close-ups go through detectPhotos with its other
  // photos, in one call, batched; here all of them at once, against the same photos as walkaround photos.
  for (const [i, c] of cases.entries()) {
    const f = readFileSync(join(dir, names[i]!));
    await closeInputs.write("closeups", c.closeup, f);
    await closeInputs.write("walkarounds", c.walkaround, f);
  }
  const together = (await bestOf([
    () =>
      detectPhotos(
        blobs,
        "closeups",
        cases.map((c) => c.closeup),
        models,
      ),
    () =>
      detectPhotos(
        blobs,
        "closeups",
        cases.map((c) => c.closeup),
        { ...models, closeup: null },
      ),
    () =>
      detectPhotos(
        blobs,
        "walkarounds",
        cases.map((c) => c.walkaround),
        models,
      ),
  ])) as [number, number, number];
  console.log(`
the same ${cases.length} photos in one detectPhotos call, as processing batches an inspection's photos`);
  header();
  row(closeup ? "as close-ups (two views each, two models)" : "as close-ups (two views each)", together[0], cases.length);
  if (closeup) row("as close-ups without the close-up model (CLOSEUP_MODEL=none)", together[1], cases.length);
  row("as walkaround photos (one view)", together[2], cases.length);
  console.log(
    `close-ups / walkaround photos, batched: ${(together[0] / together[2]).toFixed(2)}${closeup ? `; close-ups with the close-up model / without: ${(together[0] / together[1]).toFixed(2)}` : ""}`,
  );
  await closeModels(models);
}
