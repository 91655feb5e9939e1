import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp, { type Sharp } from "sharp";
import { loadConfig } from "../../core/runtime/config.ts";
import { PAINT_RULES, type Paint, type PaintedPhoto, type PaintRules, sameVehicle } from "../../core/domain/same-vehicle.ts";
import { UploadChecker } from "../quality/upload-checker.ts";

/**
 * The same-vehicle check measured as the service runs it (issue 32): each photo's paint as the
 * upload reads it (UploadChecker: the parts model's painted panels), then inspections built from
 * the car-parts test photos (100 cars, one photo each, never trained on) and judged by
 * core/domain/same-vehicle.ts.
 *
 * The datasets hold one photo per car, so "one car" is built from one photo: the photo and seven
 * copies of it as another day's light and camera would give it (the mirror image as the other
 * side, darker, brighter, warmer, cooler, cut in closer, smaller and re-encoded). That tests the
 * light, not another side of the car: say so with the figures. "Mixed" inspections are 8 different
 * cars' photos, and 7 of one car with one of another; a return is 8 of one car against a baseline of
 * another. Real photos of one car from other sides come from the training photos (SIDES below).
 *
 * Calibrated on one half, measured on the other: the cars (in file order) and the SIDES groups are
 * split by index, even for calibration, odd held out, and every inspection is built from one half's
 * cars only. On the calibration half the rules' greySpan is chosen (the narrowest span at which at
 * most 2.5% of its one-car inspections, built, returns of the same car and real, are called
 * inconsistent: half the issue's 5%) and printed beside the one core/domain/same-vehicle.ts holds; the figures that count are the held-out half's,
 * with the rules the service runs. The calibration half's figures with those rules are printed too,
 * and the figures over all the cars follow, the calibration half in them. The paints are read once,
 * with the service's rules: the span a photo's own panels may differ by before its paint is left
 * unread (vehicle-paint.ts) stays the service's while the span between photos is chosen; chosen
 * again with it set to 38, 42 or 44 (a replay of this calibration on the same cars), the span was 40
 * each time (2026-11-27).
 *
 * usage: node inference/evaluation/same-vehicle-eval.ts [datasets]   (npm run eval:same-vehicle)
 */
const datasets = process.argv[2] ?? join(import.meta.dirname, "../../../shared/datasets");
const dir = join(datasets, "car-parts/testset/JPEGImages");
const files = readdirSync(dir)
  .filter((f) => /\.jpe?g$/i.test(f))
  .sort();

const days: Record<string, (b: Buffer, w: number, h: number) => Sharp> = {
  "as taken": (b) => sharp(b),
  "mirrored (the other side)": (b) => sharp(b).flop(),
  "darker (shade; a phone exposes for it)": (b) => sharp(b).modulate({ brightness: 0.75 }),
  "brighter (sun)": (b) => sharp(b).modulate({ brightness: 1.25 }),
  // What a phone's white balance leaves of warm evening light and of shade's blue (about 8 units of b on a white car).
  "warmer light": (b) =>
    sharp(b).recomb([
      [1.05, 0, 0],
      [0, 1, 0],
      [0, 0, 0.92],
    ]),
  "cooler light": (b) =>
    sharp(b).recomb([
      [0.95, 0, 0],
      [0, 1, 0],
      [0, 0, 1.07],
    ]),
  "closer (the middle 75%)": (b, w, h) =>
    sharp(b).extract({ left: Math.round(w / 8), top: Math.round(h / 8), width: Math.round((w * 3) / 4), height: Math.round((h * 3) / 4) }),
  "half size, JPEG 50": (b, w) => sharp(b).resize(Math.round(w / 2)),
};

const config = loadConfig(process.env);
if (!config.models.partsModel) throw new Error("no parts model is configured (PARTS_MODEL)");
const checker = new UploadChecker(
  { partsModel: config.models.partsModel, judgeModel: null },
  {
    onError: (error) => {
      throw error;
    },
  },
);

// Each car's paint on each of its "days".
const paints: (Paint | null)[][] = [];
for (const f of files) {
  const bytes = readFileSync(join(dir, f));
  const { width = 0, height = 0 } = await sharp(bytes).metadata();
  const row: (Paint | null)[] = [];
  for (const make of Object.values(days)) {
    const jpeg = await make(bytes, width, height).jpeg({ quality: 50 }).toBuffer();
    row.push((await checker.check("front", jpeg)).paint);
  }
  paints.push(row);
}

// Real photos of one car from other sides: the car-parts training photos hold a few cars photographed
// from two to five sides, picked out by eye (the same car, its plate, marks or place); the parts model
// was trained on these photos, so it finds their panels as well as it can.
const SIDES: number[][] = [
  [13, 14],
  [31, 32],
  [71, 72],
  [81, 82],
  [84, 85],
  [88, 89, 90],
  [104, 105],
  [117, 118, 119],
  [126, 127],
  [130, 131],
  [142, 143, 144],
  [145, 146],
  [185, 186],
  [193, 194, 195],
  [201, 202, 203],
  [225, 226],
  [231, 232, 233, 234],
  [249, 250, 251],
  [261, 262],
  [282, 283],
  [295, 296],
  [331, 332],
  [341, 342],
  [352, 353],
  [357, 358],
];
const sidePaints: (Paint | null)[][] = [];
for (const group of SIDES) {
  const row: (Paint | null)[] = [];
  for (const k of group)
    row.push((await checker.check("front", readFileSync(join(datasets, `car-parts/trainingset/JPEGImages/train${k}.jpg`)))).paint);
  sidePaints.push(row);
}
await checker.close();

const tally = () => ({ consistent: 0, inconsistent: 0, unknown: 0 });

/** The inspections built from `cars` (indices into files) and `groups` (into SIDES), judged with `rules`. */
function measure(cars: readonly number[], groups: readonly number[], rules: PaintRules) {
  // A fixed shuffle, so that each run builds the same inspections.
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const otherThan = (car: number) => {
    const others = cars.filter((c) => c !== car);
    return others[Math.floor(random() * others.length)]!;
  };
  const photo = (car: number, day: number, baseline = false): PaintedPhoto => ({
    mediaId: `${car}/${day}`,
    paint: paints[car]![day]!,
    baseline,
  });
  const oneCar = (car: number, baseline = false) => Object.keys(days).map((_, day) => photo(car, day, baseline));
  const judge = (photos: PaintedPhoto[]) => sameVehicle(photos, rules);
  const r = {
    cars: cars.length,
    one_car: tally(),
    eight_cars: tally(),
    seven_and_one: tally(),
    seven_and_one_named: 0,
    return_same_car: tally(),
    return_other_car: tally(),
    sides: { cars: groups.length, photos: 0, one_car: tally(), with_another_car: tally(), another_car_named: 0 },
  };
  for (const car of cars) {
    r.one_car[judge(oneCar(car)).same_vehicle]++;
    const eight = new Set<number>([car]);
    while (eight.size < Math.min(8, cars.length)) eight.add(otherThan(car));
    r.eight_cars[judge([...eight].map((c) => photo(c, 0))).same_vehicle]++;
    const other = otherThan(car);
    const odd = Math.floor(random() * 8);
    const judged = judge(oneCar(car).map((p, day) => (day === odd ? photo(other, day) : p)));
    r.seven_and_one[judged.same_vehicle]++;
    if (judged.inconsistent_photos.length === 1 && judged.inconsistent_photos[0] === `${other}/${odd}`) r.seven_and_one_named++;
    r.return_same_car[judge([...oneCar(car, true), ...oneCar(car)]).same_vehicle]++;
    r.return_other_car[judge([...oneCar(car, true), ...oneCar(other)]).same_vehicle]++;
  }
  for (const g of groups) {
    const own = sidePaints[g]!.map((paint, k) => ({ mediaId: `side${g}/${k}`, paint, baseline: false }));
    r.sides.photos += own.length;
    r.sides.one_car[judge(own).same_vehicle]++;
    // The same photos with one of a test car's photos among them.
    const other = cars[Math.floor(random() * cars.length)]!;
    const judged = judge([...own, { mediaId: "other", paint: paints[other]![0]!, baseline: false }]);
    r.sides.with_another_car[judged.same_vehicle]++;
    if (judged.inconsistent_photos.length === 1 && judged.inconsistent_photos[0] === "other") r.sides.another_car_named++;
  }
  return r;
}

const half = (n: number, parity: number) => Array.from({ length: n }, (_, i) => i).filter((i) => i % 2 === parity);
const calibration = { cars: half(files.length, 0), groups: half(SIDES.length, 0) };
const heldOut = { cars: half(files.length, 1), groups: half(SIDES.length, 1) };

// The calibration: each span, and how many one-car inspections (built, a return of the same car,
// real from several sides) and mixed ones it calls inconsistent on the calibration half.
const spans = Array.from({ length: 31 }, (_, i) => 20 + 2 * i);
const calibrated = spans.map((greySpan) => {
  const r = measure(calibration.cars, calibration.groups, { greySpan });
  const oneCarCalled = r.one_car.inconsistent + r.return_same_car.inconsistent + r.sides.one_car.inconsistent;
  const mixedCalled = r.eight_cars.inconsistent + r.seven_and_one.inconsistent + r.return_other_car.inconsistent;
  return { greySpan, oneCarCalled, mixedCalled };
});
// The issue's bound on one-car inspections called inconsistent is 5%; the calibration half is held
// to half of it, a margin for the held-out half.
const oneCarInspections = 2 * calibration.cars.length + calibration.groups.length;
const allowed = Math.floor(0.025 * oneCarInspections);
const chosen = calibrated.find((c) => c.oneCarCalled <= allowed) ?? calibrated.at(-1)!;
console.log(
  `calibration half (${calibration.cars.length} cars, ${calibration.groups.length} real cars from several sides), greySpan: one-car inspections called inconsistent / mixed ones called inconsistent`,
);
console.log(`  ${calibrated.map((c) => `${c.greySpan}: ${c.oneCarCalled}/${c.mixedCalled}`).join(", ")}`);
console.log(
  `  chosen: greySpan ${chosen.greySpan} (the narrowest with at most ${allowed} of ${oneCarInspections} one-car inspections called inconsistent); core/domain/same-vehicle.ts has ${PAINT_RULES.greySpan}`,
);
if (chosen.greySpan !== PAINT_RULES.greySpan) console.log("  THE SERVICE'S RULES ARE NOT THE CALIBRATED ONES");

const unpainted = paints.flat().filter((p) => p === null).length;
console.log(
  `cars: ${files.length} (car-parts test photos), ${Object.keys(days).length} photos each; photos without a paint read: ${unpainted}`,
);
function report(title: string, r: ReturnType<typeof measure>) {
  const n = r.cars;
  const pct = (k: number) => `${k} of ${n} (${((100 * k) / n).toFixed(0)}%)`;
  console.log(`${title}:`);
  console.log(`  one car, 8 photos: called inconsistent ${pct(r.one_car.inconsistent)}, unknown ${r.one_car.unknown}`);
  console.log(`  8 different cars: called inconsistent ${pct(r.eight_cars.inconsistent)}, unknown ${r.eight_cars.unknown}`);
  console.log(
    `  7 photos of one car and 1 of another: called inconsistent ${pct(r.seven_and_one.inconsistent)}; the odd photo alone named ${pct(r.seven_and_one_named)}`,
  );
  console.log(`  a return of the baseline's car: called inconsistent ${pct(r.return_same_car.inconsistent)}`);
  console.log(`  a return of another car: called inconsistent ${pct(r.return_other_car.inconsistent)}`);
  const g = r.sides.cars;
  console.log(
    `  one real car from 2 to 5 sides (${g} cars, ${r.sides.photos} photos): called inconsistent ${r.sides.one_car.inconsistent} of ${g}, unknown ${r.sides.one_car.unknown}`,
  );
  console.log(
    `  the same with one photo of another car: called inconsistent ${r.sides.with_another_car.inconsistent} of ${g}; the other car's photo alone named ${r.sides.another_car_named} of ${g}`,
  );
}
const measured = {
  calibration: measure(calibration.cars, calibration.groups, PAINT_RULES),
  held_out: measure(heldOut.cars, heldOut.groups, PAINT_RULES),
  all: measure(
    files.map((_, i) => i),
    SIDES.map((_, i) => i),
    PAINT_RULES,
  ),
};
report(`calibration half (even-numbered cars and real cars), greySpan ${PAINT_RULES.greySpan}`, measured.calibration);
report(`held-out half (odd-numbered cars and real cars), greySpan ${PAINT_RULES.greySpan}`, measured.held_out);
report("all cars (the calibration half in them)", measured.all);
console.log(
  JSON.stringify({
    photos_without_paint: unpainted,
    rules: PAINT_RULES,
    calibration_spans: { chosen: chosen.greySpan, spans: calibrated },
    ...measured,
  }),
);
