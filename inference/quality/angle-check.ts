import type { ExteriorAngle } from "../../core/schemas/capture.ts";

/**
 * Whether an exterior photo shows the side its prompt asks for, judged from the car parts in it
 * (the parts model's classes). Left and right are the car's own, as car-parts labels them: from the
 * front, the car's left side is on the viewer's right.
 *
 * A photo is flagged only on clear evidence against it: it shows the opposite of a side the prompt
 * asks for (the rear for a front prompt, the right side for a left one) and not that side. A photo
 * whose parts say little (a close-up, a side seen square-on with no door found) is never flagged.
 */
export type Side = "front" | "rear" | "left" | "right";

const EVIDENCE: Record<Side, RegExp> = {
  front: /^(front_bumper|front_glass|hood|front_(left|right)_light)$/,
  rear: /^(back_bumper|back_glass|tailgate|trunk|back_(left|right)_light)$/,
  // Lights show from the front or back whatever the side; doors and mirrors tell the side.
  left: /^((front|back)_left_door|left_mirror)$/,
  right: /^((front|back)_right_door|right_mirror)$/,
};
const OPPOSITE: Record<Side, Side> = { front: "rear", rear: "front", left: "right", right: "left" };

/** The sides each prompt asks to see (core/schemas/capture.ts's exterior angles). */
export const SIDES_OF: Record<ExteriorAngle, Side[]> = {
  front: ["front"],
  front_left: ["front", "left"],
  left: ["left"],
  rear_left: ["rear", "left"],
  rear: ["rear"],
  rear_right: ["rear", "right"],
  right: ["right"],
  front_right: ["front", "right"],
};

/** A part counts as evidence from this score (the parts model's; npm run eval:product measures the check). */
export const ANGLE_EVIDENCE_SCORE = 0.3;

/** The sides a photo shows, from its parts. */
export function sidesShown(parts: readonly { name: string; score: number }[], minScore = ANGLE_EVIDENCE_SCORE): Set<Side> {
  const shown = new Set<Side>();
  for (const p of parts) {
    if (p.score < minScore) continue;
    for (const side of Object.keys(EVIDENCE) as Side[]) if (EVIDENCE[side].test(p.name)) shown.add(side);
  }
  return shown;
}

/** True when the photo clearly shows another side than its prompt's. */
export function isWrongAngle(angle: ExteriorAngle, shown: ReadonlySet<Side>): boolean {
  return SIDES_OF[angle].some((side) => shown.has(OPPOSITE[side]) && !shown.has(side));
}

/**
 * The prompt a photo answers best, from the sides it shows (for evaluation, where a photo's side
 * comes from its labelled parts): the front or rear when only one shows, with the side when only
 * one shows; null when the parts say neither.
 */
export function angleOfSides(shown: ReadonlySet<Side>): ExteriorAngle | null {
  const fr = shown.has("front") === shown.has("rear") ? null : shown.has("front") ? "front" : "rear";
  const lr = shown.has("left") === shown.has("right") ? null : shown.has("left") ? "left" : "right";
  if (fr && lr) return `${fr}_${lr}` as ExteriorAngle;
  return fr ?? lr;
}
