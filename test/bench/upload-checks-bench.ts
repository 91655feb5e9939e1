/**
 * `npm run bench:upload-checks`: what the close-up suggestions add to an exterior photo's upload.
 * An upload scales the photo for the models (model-input.ts) and runs its checks (upload-checker.ts);
 * with the whole-photo judgement on, the scaling covers its 512 px too and the judge runs after the
 * parts model. Both, one photo at a time as uploads come, on 2 MP phone-like photos (car-damage-severity
 * photos stretched to 1600 × 1200), with the judge on and off, interleaved; p50 and p99 of each,
 * and the difference. A benchmark: it prints, it asserts nothing.
 */
import { loadConfig } from "../../core/runtime/config.ts";
import { scaleForModels } from "../../inference/detection/letterbox.ts";
import { modelInputSizes } from "../../inference/detection/model-input.ts";
import { UploadChecker } from "../../inference/quality/upload-checker.ts";
import { phoneSizedPhotos } from "../helpers/photos.ts";
import { percentile } from "./stats.ts";

const PHOTOS = Number(process.env.BENCH_PHOTOS ?? 40);
const ROUNDS = 3;
const { models } = loadConfig();
if (!models.partsModel || !models.judgeModel) throw new Error("the parts and judge models are needed (PARTS_MODEL, JUDGE_MODEL)");
const photos = await phoneSizedPhotos(PHOTOS);
const onError = (error: unknown) => {
  throw error;
};
const variants = [
  {
    label: "parts model only (judge off)",
    sizes: modelInputSizes({ ...models, judgeModel: null }),
    checker: new UploadChecker({ partsModel: models.partsModel, judgeModel: null }, { onError }),
  },
  {
    label: "parts model and judge (suggestions)",
    sizes: modelInputSizes(models),
    checker: new UploadChecker({ partsModel: models.partsModel, judgeModel: models.judgeModel }, { onError }),
  },
];
const times: number[][] = variants.map(() => []);
let suggested = 0;
for (let round = 0; round <= ROUNDS; round++) {
  for (const photo of photos) {
    for (const [k, v] of variants.entries()) {
      const t0 = performance.now();
      const scaled = await scaleForModels(photo, v.sizes);
      const verdict = await v.checker.check("front", photo, { sizes: v.sizes, scaled });
      // Round 0 warms up (sessions created, first runs allocate).
      if (round > 0) times[k]!.push(performance.now() - t0);
      if (round === 1 && k === 1 && verdict.suggestedCloseups.length > 0) suggested++;
    }
  }
}
console.log(`${photos.length} photos at 1600 × 1200, ${ROUNDS} rounds, interleaved; ${suggested} of ${photos.length} got a suggestion`);
console.log("| upload's model work | p50 ms | p99 ms |\n|---|---:|---:|");
for (const [k, v] of variants.entries())
  console.log(`| ${v.label} | ${percentile(times[k]!, 50).toFixed(1)} | ${percentile(times[k]!, 99).toFixed(1)} |`);
console.log(
  `added by the suggestions: p50 ${(percentile(times[1]!, 50) - percentile(times[0]!, 50)).toFixed(1)} ms, p99 ${(percentile(times[1]!, 99) - percentile(times[0]!, 99)).toFixed(1)} ms`,
);
await Promise.all(variants.map((v) => v.checker.close()));
