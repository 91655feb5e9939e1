/**
 * Whether the photos of an inspection (and of its baseline) show one vehicle, told by its paint: the
 * colour of its painted panels (doors, hood, trunk, tailgate), as CIELAB, measured on upload where the
 * parts model places the panels (inference/quality/vehicle-paint.ts). Paint is what a photo of any
 * side shows alike; make and model would need a model that knows them, which this version has not:
 * two cars of one colour pass as one.
 */

/** A paint colour as CIELAB (D65): L 0–100, a and b about −128–127. */
export type Paint = readonly [l: number, a: number, b: number];

/** A colour at least this far from grey has a hue (red, blue, beige…); below GREY it is white, silver, grey or black. */
const CHROMATIC = 18;
const GREY = 12;
/** Two hued paints farther apart than this (degrees) are two colours, whatever the light. */
const HUE_APART = 40;

/**
 * What one car's photos may differ by. `greySpan`: the most two greys (white, silver, grey, black) of
 * one car may differ in lightness, shade against sun; chosen on the calibration half of
 * `npm run eval:same-vehicle`'s cars (inference/evaluation/same-vehicle-eval.ts), which prints the
 * choice, and measured on the other half (docs/api.md, "One vehicle"). The same rules judge one photo's
 * own panels: a photo whose panels could not be one paint has none read (vehicle-paint.ts).
 */
export type PaintRules = { greySpan: number };
export const PAINT_RULES: PaintRules = { greySpan: 40 };

const chroma = ([, a, b]: Paint) => Math.hypot(a, b);
const hue = ([, a, b]: Paint) => (Math.atan2(b, a) * 180) / Math.PI;

/**
 * Whether two photos' paints can be one car's under different light. Light and camera move
 * lightness much more than hue, and a hue is only read where there is colour enough; between the
 * bands (faint colour, a grey in warm light) two paints are taken for one, so that a photo is named
 * only where its paint plainly differs.
 */
export function couldBeOnePaint(x: Paint, y: Paint, rules: PaintRules = PAINT_RULES): boolean {
  const [cx, cy] = [chroma(x), chroma(y)];
  if (cx >= CHROMATIC && cy >= CHROMATIC) {
    const apart = Math.abs(hue(x) - hue(y)) % 360;
    return Math.min(apart, 360 - apart) <= HUE_APART;
  }
  if ((cx >= CHROMATIC && cy < GREY) || (cy >= CHROMATIC && cx < GREY)) return false;
  if (cx < GREY && cy < GREY) return Math.abs(x[0] - y[0]) <= rules.greySpan;
  return true;
}

export type PaintedPhoto = { mediaId: string; paint: Paint | null; baseline: boolean };
export type SameVehicle = { same_vehicle: "consistent" | "inconsistent" | "unknown"; inconsistent_photos: string[] };
type Painted = PaintedPhoto & { paint: Paint };

/**
 * The vehicle the photos agree on, and this inspection's photos that show another. The vehicle is
 * the largest group of reference photos that could all be one paint, each with each (the baseline's
 * photos where there are two or more with a paint: the car handed over; else this inspection's); a
 * photo of this inspection that could not be the same paint as every one of them shows another.
 * Each with each, not each with one: a photo whose paint is between the bands (a faint colour, a
 * mid grey) could be one paint with nearly any other, and chosen to stand for the vehicle alone it
 * let eight different cars pass as one (the white and the black each close enough to it). Unknown
 * where fewer than two photos have a paint, or none of this inspection's.
 */
export function sameVehicle(photos: readonly PaintedPhoto[], rules: PaintRules = PAINT_RULES): SameVehicle {
  const painted = photos.filter((p): p is Painted => p.paint !== null);
  const own = painted.filter((p) => !p.baseline);
  const baseline = painted.filter((p) => p.baseline);
  if (painted.length < 2 || own.length === 0) return { same_vehicle: "unknown", inconsistent_photos: [] };
  const vehicle = largestAgreeing(baseline.length >= 2 ? baseline : own, rules);
  const odd = own.filter((p) => !vehicle.every((q) => couldBeOnePaint(p.paint, q.paint, rules))).map((p) => p.mediaId);
  return { same_vehicle: odd.length > 0 ? "inconsistent" : "consistent", inconsistent_photos: odd };
}

/**
 * The largest group of photos whose paints could be one, each with each; of groups as large, the
 * one with the earliest photos. A search with pruning over an inspection's exterior photos (eight
 * angles at most), never more than a few hundred steps.
 */
function largestAgreeing(photos: readonly Painted[], rules: PaintRules): Painted[] {
  const agree = photos.map((p) => photos.map((q) => couldBeOnePaint(p.paint, q.paint, rules)));
  let best: number[] = [];
  const grow = (group: number[], from: number): void => {
    if (group.length > best.length) best = [...group];
    for (let i = from; i < photos.length && group.length + photos.length - i > best.length; i++) {
      if (!group.every((g) => agree[g]![i])) continue;
      group.push(i);
      grow(group, i + 1);
      group.pop();
    }
  };
  grow([], 0);
  return best.map((i) => photos[i]!);
}

/** Each sRGB level (0–255) as linear light: a table, since a photo's paint converts thousands of pixels. */
const LINEAR = Float64Array.from({ length: 256 }, (_, c) => {
  const v = c / 255;
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
});

/** sRGB (0–255, rounded to a level) to CIELAB under D65. */
export function labOf(r: number, g: number, b: number): Paint {
  const [R, G, B] = [LINEAR[Math.round(r)]!, LINEAR[Math.round(g)]!, LINEAR[Math.round(b)]!];
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (t * 24389) / 27 / 116 + 16 / 116);
  const x = f((0.4124 * R + 0.3576 * G + 0.1805 * B) / 0.95047);
  const y = f(0.2126 * R + 0.7152 * G + 0.0722 * B);
  const z = f((0.0193 * R + 0.1192 * G + 0.9505 * B) / 1.08883);
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}
