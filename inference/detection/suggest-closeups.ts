import type { Detected } from "./onnx-detector.ts";
import { judgedRegion, type Judgement } from "./photo-judge.ts";
import { partOf } from "./part-of.ts";
import { unletterbox } from "./postprocess.ts";

/** Close-ups are asked for where the whole-photo judgement leans to damage from this score. */
export const CLOSEUP_FROM = 0.5;
/** At most this many close-ups are asked for from one photo: the parts where the judgement peaks. */
const MAX_PER_PHOTO = 2;

export type SuggestedCloseup = { part: string; reason: "damage_suspected" };

/**
 * The close-ups worth asking for after an exterior photo: where the judgement says damage, the
 * parts under the cells it comes from, strongest first (the part a damage the size of the cell
 * would be on: part-of.ts). None for a photo judged clean.
 */
export function suggestedCloseups(j: Judgement, parts: Detected[], size: number): SuggestedCloseup[] {
  if (j.damage < CLOSEUP_FROM || parts.length === 0) return [];
  const region = judgedRegion(j.damageCells, j.grid, j.lb, size);
  const cell = size / j.grid;
  const ranked = [...j.damageCells.keys()].sort((a, b) => j.damageCells[b]! - j.damageCells[a]!);
  const found: SuggestedCloseup[] = [];
  for (const k of ranked) {
    if (found.length >= MAX_PER_PHOTO) break;
    const r = Math.floor(k / j.grid);
    const c = k % j.grid;
    const box = unletterbox({ x1: c * cell, y1: r * cell, x2: (c + 1) * cell, y2: (r + 1) * cell }, j.lb);
    const x = (box.x1 + box.x2) / 2;
    const y = (box.y1 + box.y2) / 2;
    if (x < region.x1 || x > region.x2 || y < region.y1 || y > region.y2) continue;
    // The cell as a damage box: the part it is on, by the rule findings' parts follow.
    const holder = partOf(box, parts);
    if (holder && !found.some((f) => f.part === holder.name)) found.push({ part: holder.name, reason: "damage_suspected" });
  }
  return found;
}
