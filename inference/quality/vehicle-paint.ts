import { labOf, type Paint } from "../../core/domain/same-vehicle.ts";
import type { Letterboxed } from "../detection/letterbox.ts";
import type { Detected } from "../detection/onnx-detector.ts";

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
 * painted panel shows enough.
 */
export function vehiclePaint(square: Letterboxed, size: number, parts: readonly Detected[]): Paint | null {
  const { chw, lb } = square;
  const plane = size * size;
  const ls: number[] = [];
  const as: number[] = [];
  const bs: number[] = [];
  for (const part of parts) {
    if (!PAINTED.has(part.name)) continue;
    const [w, h] = [part.x2 - part.x1, part.y2 - part.y1];
    // The box's middle, from the photo's pixels into the square's.
    const x1 = Math.max(0, Math.floor((part.x1 + w * INSET) * lb.scale + lb.padX));
    const x2 = Math.min(size, Math.ceil((part.x2 - w * INSET) * lb.scale + lb.padX));
    const y1 = Math.max(0, Math.floor((part.y1 + h * INSET) * lb.scale + lb.padY));
    const y2 = Math.min(size, Math.ceil((part.y2 - h * INSET) * lb.scale + lb.padY));
    for (let y = y1; y < y2; y++)
      for (let x = x1; x < x2; x++) {
        const p = y * size + x;
        const [l, a, b] = labOf(chw[p]! * 255, chw[plane + p]! * 255, chw[2 * plane + p]! * 255);
        ls.push(l);
        as.push(a);
        bs.push(b);
      }
  }
  if (ls.length < ENOUGH) return null;
  return [median(ls), median(as), median(bs)];
}

function median(values: number[]): number {
  values.sort((x, y) => x - y);
  return Math.round(values[values.length >> 1]! * 10) / 10;
}
