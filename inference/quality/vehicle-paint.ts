import { couldBeOnePaint, labOf, PAINT_RULES, type Paint, type PaintRules } from "../../core/domain/same-vehicle.ts";
import type { Letterboxed } from "../detection/letterbox.ts";
import type { Detected } from "../detection/onnx-detector.ts";
import { ANGLE_EVIDENCE_SCORE } from "./angle-check.ts";

/**
 * The panels whose colour is the paint: bumpers are often black or grey plastic, and glass, lights,
 * mirrors and wheels are not paint.
 */
const PAINTED = new Set(["hood", "trunk", "tailgate", "front_left_door", "front_right_door", "back_left_door", "back_right_door"]);
/** Only the middle of a panel's box: its edges hold the seams, the next part and what is behind the car. */
const INSET = 0.25;
/** Fewer pixels than this (at the parts model's size) is too little paint to tell its colour. */
const ENOUGH = 150;

/**
 * The vehicle's paint in a photo: the median lightness and colour of the middle of its painted panels,
 * as the parts model found them (boxes in the photo's pixels), read from the photo letterboxed for
 * that model. The median passes over reflections of the sky or the trees on a door. Null where no
 * painted panel shows enough, and where the panels the parts model is sure of (from
 * ANGLE_EVIDENCE_SCORE, with enough paint each) could not all be one paint by the rule photos are
 * compared by (couldBeOnePaint): the photo's light is too uneven to tell its paint, or the car has
 * two. A silver car in a dim garage reads L 80 on its hood, which mirrors the ceiling's lights, and
 * L 17 to 20 on its doors, which mirror the dark garage; a black car's hood mirrors the sky; a
 * two-tone car's doors are red and black. Their median is no paint of the car, and taken for one it
 * called the car's other photos another vehicle; unsure, the photo is left out of the comparison.
 */
export function vehiclePaint(square: Letterboxed, size: number, parts: readonly Detected[], rules: PaintRules = PAINT_RULES): Paint | null {
  const { chw, lb } = square;
  const plane = size * size;
  // Each channel's values counted at the tenth the paint is told to: the medians without sorting the pixels.
  const all = new Lab();
  const panels: Paint[] = [];
  for (const part of parts) {
    if (!PAINTED.has(part.name)) continue;
    const panel = part.score >= ANGLE_EVIDENCE_SCORE ? new Lab() : null;
    const [w, h] = [part.x2 - part.x1, part.y2 - part.y1];
    // The box's middle, from the photo's pixels into the square's.
    const x1 = Math.max(0, Math.floor((part.x1 + w * INSET) * lb.scale + lb.padX));
    const x2 = Math.min(size, Math.ceil((part.x2 - w * INSET) * lb.scale + lb.padX));
    const y1 = Math.max(0, Math.floor((part.y1 + h * INSET) * lb.scale + lb.padY));
    const y2 = Math.min(size, Math.ceil((part.y2 - h * INSET) * lb.scale + lb.padY));
    for (let y = y1; y < y2; y++)
      for (let x = x1; x < x2; x++) {
        const p = y * size + x;
        const lab = labOf(chw[p]! * 255, chw[plane + p]! * 255, chw[2 * plane + p]! * 255);
        all.add(lab);
        panel?.add(lab);
      }
    if (panel && panel.count >= ENOUGH) panels.push(panel.median());
  }
  if (all.count < ENOUGH) return null;
  if (!panels.every((x) => panels.every((y) => couldBeOnePaint(x, y, rules)))) return null;
  return all.median();
}

/** The median L, a and b of pixels' colours. */
class Lab {
  readonly #channels = [new Median(0, 100), new Median(-150, 150), new Median(-150, 150)] as const;

  get count(): number {
    return this.#channels[0].count;
  }

  add([l, a, b]: Paint): void {
    this.#channels[0].add(l);
    this.#channels[1].add(a);
    this.#channels[2].add(b);
  }

  median(): Paint {
    const [l, a, b] = this.#channels;
    return [l.median(), a.median(), b.median()];
  }
}

/**
 * The median of values in [min, max], to a tenth: a count per tenth, so adding is constant time.
 * The value at the middle rank of the tenths is the middle value rounded to a tenth (rounding keeps order).
 */
class Median {
  readonly #min: number;
  readonly #counts: Uint32Array;
  count = 0;

  constructor(min: number, max: number) {
    this.#min = min;
    this.#counts = new Uint32Array(Math.round((max - min) * 10) + 1);
  }

  add(value: number): void {
    const i = Math.round(value * 10) - Math.round(this.#min * 10);
    this.#counts[Math.min(this.#counts.length - 1, Math.max(0, i))]!++;
    this.count++;
  }

  median(): number {
    const middle = this.count >> 1;
    let seen = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      seen += this.#counts[i]!;
      if (seen > middle) return (i + Math.round(this.#min * 10)) / 10;
    }
    return Number.NaN;
  }
}
