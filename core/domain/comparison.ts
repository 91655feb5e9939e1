import type { Comparison, Finding, Report } from "../schemas/report.ts";
import { CLOSEUP } from "./closeups.ts";
import { SEVERITIES } from "./grading.ts";

/**
 * Two findings on one part count as one damage when their centres lie this close on the part (in
 * the part's own width and height, 0–1). The same dent photographed on two days from a few steps
 * apart lands within a tenth of the part; two damages this close on one part are one damage for a
 * damage desk too.
 */
export const SAME_PLACE_WITHIN = 0.25;

/** A finding as the comparison weighs it, with the angle of the photo it is on (null for a close-up or none). */
export type Comparable = Pick<Finding, "id" | "type" | "part" | "severity" | "part_position" | "source" | "review"> & {
  angle?: string | null;
};

/** Findings with the angle of the photo each is on, from a report's photos. */
export const withAngles = (r: Pick<Report, "findings" | "photos">): Comparable[] => {
  const angles = new Map(r.photos.map((p) => [p.media_id, p.angle]));
  return r.findings.map((f) => ({ ...f, angle: (f.media_id && angles.get(f.media_id)) || null }));
};

/**
 * Parts that touch: the parts model puts a damage on a seam on either of them, and not always on the
 * same one in two photos taken from different spots (measured: npm run eval:handover).
 */
const TOUCHING: Record<string, readonly string[]> = {
  front_bumper: ["hood", "front_left_light", "front_right_light", "wheel"],
  hood: ["front_bumper", "front_glass", "front_left_light", "front_right_light"],
  back_bumper: ["trunk", "tailgate", "back_left_light", "back_right_light", "wheel"],
  trunk: ["back_bumper", "back_glass", "back_left_light", "back_right_light"],
  tailgate: ["back_bumper", "back_glass", "back_left_light", "back_right_light"],
  front_left_door: ["back_left_door", "left_mirror", "wheel"],
  back_left_door: ["front_left_door", "wheel"],
  front_right_door: ["back_right_door", "right_mirror", "wheel"],
  back_right_door: ["front_right_door", "wheel"],
  wheel: ["front_bumper", "back_bumper", "front_left_door", "back_left_door", "front_right_door", "back_right_door"],
};
/** Whether a finding is a damage the comparison weighs: not rejected by a review, and of the vehicle (a VIN mismatch is not). */
const stands = (f: Comparable) => f.review !== "rejected" && f.type !== "vin_mismatch";

const touch = (a: string, b: string) => TOUCHING[a]?.includes(b) ?? false;

/**
 * Damage on a panel. A part that is broken now may have been any of these at the baseline: the same
 * damage, worse. And the damage model tells them apart least surely on a close-up: one dent read as
 * a dent in one take and a scratch in the next (measured on real close-ups taken twice, npm run
 * eval:handover). A close-up has no place on its part to tell two damages apart by, so on close-ups
 * of one part these types pair with each other, their own type first.
 */
const ON_A_PANEL: readonly string[] = ["dent", "scratch", "crack"];

const closeUpsOfOnePart = (a: Comparable, b: Comparable) =>
  a.angle === CLOSEUP && b.angle === CLOSEUP && a.part !== null && a.part === b.part;

/** How far apart pairings that are not on one part count: behind every pairing on one part, the seam's before the photo's. */
const ACROSS_A_SEAM = 1;
const ON_ONE_PHOTO = 2;
/**
 * What pairing with another type adds to the distance: within one tier (one part, a seam, a photo) a
 * baseline finding of the same type comes first, so a broken part at return pairs with the broken
 * part the pick-up saw there, not with a scratch beside it (which would make it worse, so new). Under
 * ACROSS_A_SEAM - SAME_PLACE_WITHIN, it never moves a pairing into another tier.
 */
const ANOTHER_TYPE = 0.5;

/**
 * Whether two findings may be one damage, and how far apart they are if so (null if not): a type
 * that agrees (the same, one of them judged from the whole photo without a type, a part broken since,
 * or damage on a panel seen on close-ups of one part), and
 * - the same part, close on it where both are placed (their distance there, 0 when either is not);
 * - else parts that touch, for the same type;
 * - else the photo of the same angle: the parts model does not always put one damage on one part in
 *   two takes, suspected damage is a region of the photo whose part is only the region's, and a
 *   close shot of broken glass shows no part at all.
 * Measured on real damage taken twice (npm run eval:handover), pairing on the same photo last keeps
 * pre-existing damage from being called new where the parts model disagrees with itself, and
 * leaves new damage new unless the photo shows another of its type that was there before.
 */
function distance(after: Comparable, before: Comparable): number | null {
  const typesAgree =
    after.type === before.type ||
    after.type === "damage_suspected" ||
    before.type === "damage_suspected" ||
    (after.type === "broken_part" && ON_A_PANEL.includes(before.type)) ||
    (closeUpsOfOnePart(after, before) && ON_A_PANEL.includes(after.type) && ON_A_PANEL.includes(before.type));
  if (!typesAgree) return null;
  if (after.part !== null && after.part === before.part) {
    if (!after.part_position || !before.part_position) return 0;
    const [ax = 0, ay = 0] = after.part_position;
    const [bx = 0, by = 0] = before.part_position;
    const d = Math.hypot(ax - bx, ay - by);
    if (d <= SAME_PLACE_WITHIN) return d;
  }
  if (after.part !== null && before.part !== null && after.type === before.type && touch(after.part, before.part)) return ACROSS_A_SEAM;
  return after.angle && after.angle !== CLOSEUP && after.angle === before.angle ? ON_ONE_PHOTO : null;
}

const rank = (f: Comparable) => SEVERITIES.indexOf(f.severity as (typeof SEVERITIES)[number]);

/**
 * Whether the damage is worse now than at the baseline. Severity read from a photo moves by a grade
 * between two takes of one damage from different spots (a box's share of its part changes with the
 * framing; measured: npm run eval:handover), so worse is two grades worse (minor to severe), or a
 * dent, scratch or crack become a broken part. Suspected damage carries the whole photo's severity,
 * not the damage's, and is never worse.
 */
function worse(now: Comparable, then: Comparable): boolean {
  if (now.type === "damage_suspected" || then.type === "damage_suspected") return false;
  if (now.type === "broken_part" && then.type !== "broken_part") return true;
  return rank(now) - rank(then) >= 2;
}

/**
 * The before/after comparison of a handover (api-contract.md, "Before and after"): each damage of
 * this inspection is new or was there at the baseline. Each finding pairs with its nearest baseline
 * finding (distance above, its own type first): by part, type and place on the part, never by pixel
 * position in the frame. One baseline finding may vouch for several: a damage seen as two boxes is still one. A
 * paired damage that is worse now is new, its baseline finding named in `worsened`. A finding
 * matched by nothing is new: nothing vouches that it was there before.
 */
export function compareFindings(baselineInspection: string, after: Comparable[], before: Comparable[]): Comparison {
  const now = after.filter(stands);
  const then = before.filter(stands);
  const paired = new Map<string, Comparable>();
  for (const a of now) {
    let best: { b: Comparable; d: number } | null = null;
    for (const b of then) {
      const apart = distance(a, b);
      if (apart === null) continue;
      const d = apart + (a.type === b.type ? 0 : ANOTHER_TYPE);
      if (!best || d < best.d) best = { b, d };
    }
    if (best) paired.set(a.id, best.b);
  }
  const taken = new Set([...paired.values()].map((b) => b.id));
  const comparison: Comparison = { baseline_inspection: baselineInspection, new: [], worsened: [], preexisting: [], not_seen: [] };
  for (const a of now) {
    const b = paired.get(a.id);
    if (!b) comparison.new.push(a.id);
    else if (worse(a, b)) {
      comparison.new.push(a.id);
      comparison.worsened.push({ finding: a.id, baseline_finding: b.id });
    } else comparison.preexisting.push({ finding: a.id, baseline_finding: b.id });
  }
  comparison.not_seen = then.filter((b) => !taken.has(b.id)).map((b) => b.id);
  return comparison;
}

/**
 * A comparison as a review leaves it, without the baseline at hand: a rejected finding leaves it, a
 * reviewer's own finding is new (the reviewer adds what the model missed, with the baseline beside
 * it in the dashboard), and the pairings the models made stand.
 */
export function reviewedComparison(c: Comparison, findings: Comparable[]): Comparison {
  const kept = new Set(findings.filter(stands).map((f) => f.id));
  const added = findings.filter((f) => f.source === "reviewer" && stands(f)).map((f) => f.id);
  const listed = new Set([...c.new, ...c.preexisting.map((p) => p.finding)]);
  return {
    ...c,
    new: [...c.new.filter((id) => kept.has(id)), ...added.filter((id) => !listed.has(id))],
    worsened: c.worsened.filter((p) => kept.has(p.finding)),
    preexisting: c.preexisting.filter((p) => kept.has(p.finding)),
  };
}
