import type { DamageType } from "../../core/domain/damage-types.ts";
import type { Detected } from "./onnx-detector.ts";
import type { Box } from "./postprocess.ts";

/** A part holds at least this share of a damage's box, or the damage is not on it (it is mostly elsewhere). */
const MIN_PART_OVERLAP = 0.3;
const WHEEL = "wheel";

export const area = (b: Box) => Math.max(0, b.x2 - b.x1) * Math.max(0, b.y2 - b.y1);
const overlap = (a: Box, b: Box) =>
  area({ x1: Math.max(a.x1, b.x1), y1: Math.max(a.y1, b.y1), x2: Math.min(a.x2, b.x2), y2: Math.min(a.y2, b.y2) });

/**
 * Parts a damage type can be on: shattered glass is on a window, a broken lamp on a light, a flat
 * tyre on a wheel. On close-ups the part boxes are rough, and a glass shatter "on the front bumper"
 * is worse than no part at all.
 */
const PARTS_FOR: Partial<Record<DamageType, RegExp>> = { glass_shatter: /glass/, lamp_broken: /light/, tire_flat: /wheel/ };
/** What a wheel carries besides a flat tyre: a scuffed or dented rim. A crack beside a wheel is on the bumper or the body. */
const ON_A_WHEEL: readonly DamageType[] = ["tire_flat", "dent", "scratch"];

function mayBeOn(part: Detected, type: DamageType | undefined): boolean {
  const allowed = type ? PARTS_FOR[type] : undefined;
  if (allowed) return allowed.test(part.name);
  return part.name !== WHEEL || !type || ON_A_WHEEL.includes(type);
}

const inEllipse = (x: number, y: number, b: Box) =>
  ((2 * x - b.x1 - b.x2) / (b.x2 - b.x1)) ** 2 + ((2 * y - b.y1 - b.y2) / (b.y2 - b.y1)) ** 2 <= 1;

/**
 * Whether a damage centred at (x, y) is on the part's box. A wheel is round, never wider than it is
 * tall: the corners of its box show the wheel arch and the lower edges of the door and bumper
 * beside it. A wheel box wider than tall holds both wheels of a side (car-parts labels a side's
 * wheels as one part, and the parts model learned such boxes), the doors' lower edges between them:
 * only its ends are wheels. So a wheel holds the ellipses, as wide as the box is tall, at either end
 * of its box. A damage whose type names its part (PARTS_FOR: a flat tyre, shattered glass, a broken
 * lamp) is on such a part by its type: it only has to overlap one, as close-ups' rough boxes need.
 */
function holds(part: Detected, x: number, y: number, type: DamageType | undefined): boolean {
  if (type && PARTS_FOR[type]) return true;
  if (part.name !== WHEEL) return x >= part.x1 && x <= part.x2 && y >= part.y1 && y <= part.y2;
  const side = Math.min(part.x2 - part.x1, part.y2 - part.y1);
  return inEllipse(x, y, { ...part, x2: part.x1 + side }) || inEllipse(x, y, { ...part, x1: part.x2 - side });
}

/**
 * The part a damage box is on, or null. A part can claim a damage its type can be on, whose centre
 * its box holds and that lies mostly on it. Of those, the damage is on the one whose box agrees
 * best with it: the share of the damage on the part times the share of the part under the damage,
 * weighed by the square root of the part's score. Part boxes nest and overlap (a light's box lies
 * inside the bumper's and the hood's, a wheel's reaches the door's lower edge): the tightest box
 * says the most about where a small damage is, while a damage much larger than a small part it
 * covers is on the larger part around it; the score keeps a faint box (parts count from a low score, for the
 * vehicle gate) from outweighing a sure one. Measured by `npm run eval:part-accuracy` (figures in
 * issue 36's notes).
 */
export function partOf(damage: Box, parts: Detected[], type?: DamageType): Detected | null {
  const [x, y] = [(damage.x1 + damage.x2) / 2, (damage.y1 + damage.y2) / 2];
  const damageArea = Math.max(area(damage), 1e-9);
  let best: Detected | null = null;
  let bestClaim = 0;
  for (const p of parts) {
    if (!mayBeOn(p, type) || !holds(p, x, y, type)) continue;
    const shared = overlap(damage, p);
    if (shared < MIN_PART_OVERLAP * damageArea) continue;
    const claim = Math.sqrt(p.score) * (shared / damageArea) * (shared / Math.max(area(p), 1e-9));
    if (claim > bestClaim || (claim === bestClaim && best && p.score > best.score)) {
      best = p;
      bestClaim = claim;
    }
  }
  return best;
}
