/**
 * `npm run eval:parts [-- --model path.onnx --threshold T --damage path.onnx --parts DIR --cars DIR]`: the parts model as the product uses
 * it, on real photos (by default `../shared/datasets`: car-parts/testset and car-damage/valid).
 * - Naming the part of a damage on close-ups (how damage is photographed). car-parts has no
 *   close-ups, so they are cut from its test set: for every part whose polygon holds its own box
 *   centre, a square crop around that centre at two zooms (the part with some surroundings; inside
 *   the part). The "damage" is the crop's central fifth; the product's rule (partOf) names its part.
 * - The vehicle gate (a photo where no part scores PART_THRESHOLD, or `--threshold`, shows no vehicle): how many
 *   car-damage `valid` photos it turns away, and how many crops of the test photos' backgrounds
 *   (the strips beside and above the car, at least 96 px each way) it lets through; by the parts
 *   model alone, and as processing applies it (showsVehicle: a sure glass shatter vouches too), with
 *   the damage model (`--damage`, by default the configured one, at its configured thresholds).
 * - Box mAP on the uncropped test photos, letterboxed as the product does.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { loadConfig } from "../../core/runtime/config.ts";
import { detectImages } from "../detection/detect-images.ts";
import { showsVehicle } from "../detection/detect-photos.ts";
import { partOf } from "../detection/part-of.ts";
import { PART_THRESHOLD } from "../detection/load-models.ts";
import { OnnxDetector, type Detected } from "../detection/onnx-detector.ts";
import { SCORING, boxMap, type Truth } from "./box-map.ts";
import { readYoloFolder } from "./yolo-folder.ts";
import { insidePolygon, readCoco } from "./coco.ts";

/** Crop side as a multiple of the part's longer box side. */
const ZOOMS = { "part and surroundings (crop 1.2 × the part)": 1.2, "inside the part (crop 0.6 × the part)": 0.6 };
const MIN_CROP_PX = 96;
/** Background strips keep this far from the car's outermost part box. */
const CAR_MARGIN_PX = 8;

const datasets = join(import.meta.dirname, "../../../shared/datasets");
const { values } = parseArgs({
  options: {
    model: { type: "string" },
    damage: { type: "string" },
    threshold: { type: "string", default: String(PART_THRESHOLD) },
    parts: { type: "string", default: join(datasets, "car-parts/testset") },
    cars: { type: "string", default: join(datasets, "car-damage/valid") },
  },
});
const modelPath = values.model ?? join(import.meta.dirname, "../models/parts/model.onnx");
const root = values.parts;
const coco = readCoco(root);
const names = new Map(coco.categories.map((c) => [c.id, c.name]));
const threshold = Number(values.threshold);
const model = await OnnxDetector.load(modelPath, { fallback: threshold });
const photos = new Map(coco.images.map((im) => [im.id, readFileSync(join(root, "JPEGImages", im.file_name))]));
const imagesById = new Map(coco.images.map((im) => [im.id, im]));
const pct = (n: number, of: number) => `${n} of ${of} (${((100 * n) / of).toFixed(1)}%)`;

console.log(`parts model ${modelPath}, parts count from score ${threshold}`);
for (const [label, zoom] of Object.entries(ZOOMS)) {
  const crops: Buffer[] = [];
  const expected: string[] = [];
  for (const a of coco.annotations) {
    const im = imagesById.get(a.image_id)!;
    const [bx, by, bw, bh] = a.bbox;
    const cx = bx + bw / 2,
      cy = by + bh / 2;
    if (!a.segmentation.some((p) => insidePolygon(cx, cy, p))) continue;
    const side = Math.round(Math.min(zoom * Math.max(bw, bh), im.width, im.height));
    if (side < MIN_CROP_PX) continue;
    const left = Math.round(Math.min(Math.max(cx - side / 2, 0), im.width - side));
    const top = Math.round(Math.min(Math.max(cy - side / 2, 0), im.height - side));
    // Where the crop had to shift at an edge, its centre fifth is still on the part only if the shift was small.
    if (Math.abs(left + side / 2 - cx) > side * 0.1 || Math.abs(top + side / 2 - cy) > side * 0.1) continue;
    crops.push(await sharp(photos.get(im.id)!).extract({ left, top, width: side, height: side }).jpeg({ quality: 90 }).toBuffer());
    expected.push(names.get(a.category_id)!);
  }
  const [found] = await detectImages([model], crops);
  let named = 0,
    right = 0;
  found!.forEach(({ found: parts, lb: { width, height } }, i) => {
    const part = partOf({ x1: width * 0.4, y1: height * 0.4, x2: width * 0.6, y2: height * 0.6 }, parts);
    if (part) named++;
    if (part?.name === expected[i]) right++;
  });
  console.log(`close-ups, ${label}: a part named on ${pct(named, crops.length)}, the right part on ${pct(right, crops.length)}`);
}

const backgrounds: Buffer[] = [];
for (const im of coco.images) {
  const boxes = coco.annotations.filter((a) => a.image_id === im.id).map((a) => a.bbox);
  if (boxes.length === 0) continue;
  const x1 = Math.floor(Math.min(...boxes.map((b) => b[0]))) - CAR_MARGIN_PX,
    y1 = Math.floor(Math.min(...boxes.map((b) => b[1]))) - CAR_MARGIN_PX;
  const x2 = Math.ceil(Math.max(...boxes.map((b) => b[0] + b[2]))) + CAR_MARGIN_PX,
    y2 = Math.ceil(Math.max(...boxes.map((b) => b[1] + b[3]))) + CAR_MARGIN_PX;
  const strips = [
    [0, 0, x1, im.height],
    [x2, 0, im.width - x2, im.height],
    [0, 0, im.width, y1],
    [0, y2, im.width, im.height - y2],
  ];
  for (const [left, top, width, height] of strips) {
    if (width! >= MIN_CROP_PX && height! >= MIN_CROP_PX)
      backgrounds.push(
        await sharp(photos.get(im.id)!)
          .extract({ left: left!, top: top!, width: width!, height: height! })
          .jpeg({ quality: 90 })
          .toBuffer(),
      );
  }
}
const cars = readYoloFolder(values.cars).map((i) => readFileSync(i.image));
const config = loadConfig();
const damagePath = values.damage ?? config.models.damageModel;
if (!damagePath) throw new Error("no damage model: pass --damage or configure DAMAGE_MODEL");
const damage = await OnnxDetector.load(damagePath, { thresholds: config.models.thresholds });
const [onBackgrounds, onCars] = [await detectImages([damage, model], backgrounds), await detectImages([damage, model], cars)];
const gate = (label: string, shows: (damageFound: Detected[], partsFound: Detected[]) => boolean) => {
  const away = onCars[1]!.filter((r, i) => !shows(onCars[0]![i]!.found, r.found)).length;
  const through = onBackgrounds[1]!.filter((r, i) => shows(onBackgrounds[0]![i]!.found, r.found)).length;
  console.log(
    `vehicle gate, ${label}: turns away ${pct(away, cars.length)} car-damage valid photos; lets through ${pct(through, backgrounds.length)} background crops of the test photos`,
  );
};
gate("parts model alone", (_, partsFound) => partsFound.length > 0);
gate("as processing applies it (or a sure glass shatter)", (damageFound, partsFound) => showsVehicle(partsFound, damageFound));

const scored = await OnnxDetector.load(modelPath, SCORING);
const [whole] = await detectImages([scored], [...photos.values()]);
const truths: Truth[][] = [...photos.keys()].map((id) =>
  coco.annotations
    .filter((a) => a.image_id === id)
    .map((a) => ({
      cls: scored.names.indexOf(names.get(a.category_id)!),
      x1: a.bbox[0],
      y1: a.bbox[1],
      x2: a.bbox[0] + a.bbox[2],
      y2: a.bbox[1] + a.bbox[3],
    })),
);
const map = boxMap(
  whole!.map((r) => r.found),
  truths,
  scored.names.length,
);
console.log(`whole test photos (${photos.size}), letterboxed: box mAP50 ${map.map50.toFixed(3)}, mAP50-95 ${map.map50_95.toFixed(3)}`);
await Promise.all([model.close(), scored.close(), damage.close()]);
