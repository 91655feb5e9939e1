/**
 * `npm run eval:part-accuracy [-- --model path.onnx --data DIR]`: how often the product names the
 * part a damage is on (partOf), on whole car photos whose parts are labelled (by default
 * `../shared/datasets/car-parts/testset`: COCO polygons of 18 parts). The parts model runs on each
 * photo as processing runs it (letterboxed, parts from PART_THRESHOLD); "damage" boxes, squares of 3
 * to 10% of the photo's shorter side, are centred at points drawn inside each labelled part
 * (a fixed seed: the same boxes every run), and the part partOf names is compared with the labelled
 * part under the box's centre (any of them, where labelled parts overlap there). Each box is asked
 * as a scratch (dents and cracks follow the same rule), with no type (a region judged from the whole
 * photo), and as the type typical of its part (a flat tyre on a wheel, shattered glass on a window,
 * a broken lamp on a light, a dent elsewhere). `wheelOnOtherParts` counts the boxes inside a part
 * other than a wheel that are put on a wheel: the error a customer saw (a wheel drawn on a door).
 * `offParts`: boxes on the car (within its labelled parts' extent) but off every labelled part:
 * fenders, sills, pillars, the road between the wheels, and tyres the labels leave out (so a wheel
 * named there is not always wrong). The JSON summary is the last line.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DamageType } from "../../core/domain/damage-types.ts";
import { detectImages } from "../detection/detect-images.ts";
import { PART_THRESHOLD } from "../detection/load-models.ts";
import { type Detected, OnnxDetector } from "../detection/onnx-detector.ts";
import { partOf } from "../detection/part-of.ts";
import type { Box } from "../detection/postprocess.ts";
import { type Coco, insidePolygon, readCoco } from "./coco.ts";

/** Points drawn inside each labelled part, and on each photo's car off its labelled parts. */
const POINTS_PER_PART = 8;
const POINTS_OFF_PARTS = 16;
/** A damage box's side, as a share of the photo's shorter side. */
const SIDE_SHARE = { min: 0.03, max: 0.1 };
const SEED = 36;
const WHEEL = "wheel";

/** How each box is asked: as a scratch, with no type, with the type typical of its labelled part. */
const ASKED_AS = ["scratch", "untyped", "typical"] as const;
type AskedAs = (typeof ASKED_AS)[number];
function typical(part: string | null): DamageType {
  if (part === WHEEL) return "tire_flat";
  if (part?.endsWith("glass")) return "glass_shatter";
  if (part?.endsWith("light")) return "lamp_broken";
  return "dent";
}
const typeFor = (asked: AskedAs, part: string | null): DamageType | undefined =>
  asked === "scratch" ? "scratch" : asked === "typical" ? typical(part) : undefined;

type Tally = { samples: number; named: number; right: number };
export type Figures = Tally & {
  accuracy: number;
  /** Boxes inside a labelled part other than a wheel that were put on a wheel. */
  wheelOnOtherParts: number;
  perPart: Record<string, Tally & { accuracy: number }>;
  /** Boxes on the car off its labelled parts: how many were put on a part, and how many on a wheel. */
  offParts: { samples: number; named: number; wheel: number };
};
export type PartAccuracy = {
  photos: number;
  /** Boxes inside labelled parts (each way of asking also has the boxes off them, `offParts`). */
  samples: number;
  /** Boxes whose centre is inside labelled parts of more than one kind (any of them is right). */
  ambiguous: number;
  asked: Record<AskedAs, Figures>;
};

/** `part`: the labelled part the box was drawn in, null off them; `truth`: the labelled parts under its centre. */
type Sample = { image: number; box: Box; part: string | null; truth: Set<string> };

/** A small seeded generator (mulberry32): the same boxes every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A square damage box centred at (x, y), of a random size within SIDE_SHARE, cut to the photo. */
function boxAt(x: number, y: number, im: { width: number; height: number }, next: () => number): Box {
  const half = ((SIDE_SHARE.min + next() * (SIDE_SHARE.max - SIDE_SHARE.min)) * Math.min(im.width, im.height)) / 2;
  return { x1: Math.max(0, x - half), y1: Math.max(0, y - half), x2: Math.min(im.width, x + half), y2: Math.min(im.height, y + half) };
}

/** Damage boxes centred inside each labelled part, with the labelled parts under each centre. */
function samples(coco: Coco): Sample[] {
  const names = new Map(coco.categories.map((c) => [c.id, c.name]));
  const images = new Map(coco.images.map((im, i) => [im.id, { ...im, index: i }]));
  const next = random(SEED);
  const out: Sample[] = [];
  for (const a of coco.annotations) {
    const im = images.get(a.image_id);
    const part = names.get(a.category_id);
    if (!im || !part) continue;
    const onImage = coco.annotations.filter((o) => o.image_id === a.image_id);
    const [bx, by, bw, bh] = a.bbox;
    for (let drawn = 0, tries = 0; drawn < POINTS_PER_PART && tries < 100 * POINTS_PER_PART; tries++) {
      const [x, y] = [bx + next() * bw, by + next() * bh];
      if (!a.segmentation.some((p) => insidePolygon(x, y, p))) continue;
      drawn++;
      const box = boxAt(x, y, im, next);
      const truth = new Set(
        onImage.filter((o) => o.segmentation.some((p) => insidePolygon(x, y, p))).map((o) => names.get(o.category_id)!),
      );
      out.push({ image: im.index, box, part, truth });
    }
  }
  return [...out, ...offParts(coco, next)];
}

/**
 * Damage boxes on each photo's car but off its labelled parts (fenders, pillars, sills, roof, and
 * what shows between the parts): no part is right there, and a wheel is the worst answer.
 */
function offParts(coco: Coco, next: () => number): Sample[] {
  const out: Sample[] = [];
  for (const [index, im] of coco.images.entries()) {
    const onImage = coco.annotations.filter((a) => a.image_id === im.id);
    if (onImage.length === 0) continue;
    const x1 = Math.min(...onImage.map((a) => a.bbox[0])),
      y1 = Math.min(...onImage.map((a) => a.bbox[1]));
    const x2 = Math.max(...onImage.map((a) => a.bbox[0] + a.bbox[2])),
      y2 = Math.max(...onImage.map((a) => a.bbox[1] + a.bbox[3]));
    for (let drawn = 0, tries = 0; drawn < POINTS_OFF_PARTS && tries < 100 * POINTS_OFF_PARTS; tries++) {
      const [x, y] = [x1 + next() * (x2 - x1), y1 + next() * (y2 - y1)];
      if (onImage.some((a) => a.segmentation.some((p) => insidePolygon(x, y, p)))) continue;
      drawn++;
      out.push({ image: index, box: boxAt(x, y, im, next), part: null, truth: new Set() });
    }
  }
  return out;
}

const share = (t: Tally) => (t.samples === 0 ? 0 : Math.round((1000 * t.right) / t.samples) / 1000);

/** The figures for one way of asking. `rule` is partOf unless a candidate rule is being compared. */
function tally(all: Sample[], found: Detected[][], asked: AskedAs, rule: typeof partOf): Figures {
  const total: Tally = { samples: 0, named: 0, right: 0 };
  const perPart: Record<string, Tally> = {};
  const offParts = { samples: 0, named: 0, wheel: 0 };
  let wheelOnOtherParts = 0;
  for (const s of all) {
    const named = rule(s.box, found[s.image]!, typeFor(asked, s.part))?.name;
    if (s.part === null) {
      offParts.samples++;
      if (named) offParts.named++;
      if (named === WHEEL) offParts.wheel++;
      continue;
    }
    perPart[s.part] ??= { samples: 0, named: 0, right: 0 };
    const t = perPart[s.part]!;
    for (const c of [t, total]) {
      c.samples++;
      if (named) c.named++;
      if (named && s.truth.has(named)) c.right++;
    }
    if (named === WHEEL && !s.truth.has(WHEEL)) wheelOnOtherParts++;
  }
  const parts = Object.keys(perPart).sort();
  return {
    ...total,
    accuracy: share(total),
    wheelOnOtherParts,
    perPart: Object.fromEntries(parts.map((p) => [p, { ...perPart[p]!, accuracy: share(perPart[p]!) }])),
    offParts,
  };
}

const pct = (n: number, of: number) => `${n} of ${of} (${of === 0 ? "-" : ((100 * n) / of).toFixed(1)}%)`;

/**
 * Part accuracy of partOf (or a candidate `rule`) on the labelled photos in `dir` (annotations.json,
 * JPEGImages/), with `parts` run at PART_THRESHOLD; prints as it goes through `log`.
 */
export async function partAccuracy(
  parts: OnnxDetector,
  dir: string,
  log: (line: string) => void,
  rule: typeof partOf = partOf,
): Promise<PartAccuracy> {
  const coco = readCoco(dir);
  const photos = coco.images.map((im) => readFileSync(join(dir, "JPEGImages", im.file_name)));
  const [runs] = await detectImages([parts], photos, { thresholds: [new Float32Array(parts.names.length).fill(PART_THRESHOLD)] });
  const found = runs!.map((r) => r.found);
  const all = samples(coco);
  const asked = Object.fromEntries(ASKED_AS.map((a) => [a, tally(all, found, a, rule)])) as Record<AskedAs, Figures>;
  const ambiguous = all.filter((s) => s.truth.size > 1).length;
  const onParts = asked.scratch.samples;
  log(
    `${photos.length} photos, ${onParts} damage boxes on labelled parts (${ambiguous} where labelled parts overlap), ` +
      `${all.length - onParts} off them; parts from ${PART_THRESHOLD}`,
  );
  for (const a of ASKED_AS) {
    const f = asked[a];
    log(
      `asked as ${a}: the right part on ${pct(f.right, f.samples)}, a part named on ${pct(f.named, f.samples)}, ` +
        `a wheel named inside another part ${f.wheelOnOtherParts} times; off the labelled parts, ` +
        `a part named on ${pct(f.offParts.named, f.offParts.samples)}, a wheel on ${f.offParts.wheel}`,
    );
  }
  for (const a of ["scratch", "typical"] as const) {
    log(`per part, asked as ${a}:`);
    for (const [p, t] of Object.entries(asked[a].perPart))
      log(`  ${p.padEnd(18)} right ${pct(t.right, t.samples).padStart(18)}   named ${pct(t.named, t.samples).padStart(18)}`);
  }
  return { photos: photos.length, samples: onParts, ambiguous, asked };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      model: { type: "string", default: join(import.meta.dirname, "../models/parts/model.onnx") },
      data: { type: "string", default: join(import.meta.dirname, "../../../shared/datasets/car-parts/testset") },
    },
  });
  const parts = await OnnxDetector.load(values.model, { fallback: PART_THRESHOLD });
  const figures = await partAccuracy(parts, values.data, console.log);
  console.log(JSON.stringify(figures));
  await parts.close();
}
