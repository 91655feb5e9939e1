import type { Comparison, Finding, Report } from "../schemas/report.ts";
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

/** How far apart two findings with no part to place them on count: behind any pairing by part. */
const ON_NO_PART = 1;

/** Whether a finding is a damage the comparison weighs: not rejected by a review, and of the vehicle (a VIN mismatch is not). */
const stands = (f: Comparable) => f.review !== "rejected" && f.type !== "vin_mismatch";

/**
 * Whether two findings may be one damage: a type that agrees (the same, or one of them judged from
 * the whole photo without a type), the same part and, where both are placed on it, close there. A
 * finding the parts model could not put on a part (a close shot of broken glass, say) pairs with one
 * of its type on the photo of the same angle, after every pairing by part.
 * Their distance on the part, 0 when either has no place on it; null when they are not one damage.
 */
function distance(after: Comparable, before: Comparable): number | null {
  const typesAgree = after.type === before.type || after.type === "damage_suspected" || before.type === "damage_suspected";
  if (!typesAgree) return null;
  if (after.part === null || before.part === null)
    return after.angle && after.angle !== "closeup" && after.angle === before.angle ? ON_NO_PART : null;
  if (after.part !== before.part) return null;
  if (!after.part_position || !before.part_position) return 0;
  const [ax = 0, ay = 0] = after.part_position;
  const [bx = 0, by = 0] = before.part_position;
  const d = Math.hypot(ax - bx, ay - by);
  return d <= SAME_PLACE_WITHIN ? d : null;
}

const rank = (f: Comparable) => SEVERITIES.indexOf(f.severity as (typeof SEVERITIES)[number]);

/**
 * The before/after comparison of a handover (api-contract.md, "Before and after"): each damage of
 * this inspection is new or was there at the baseline. Findings pair by part, type and place on the
 * part, never by pixel position in the frame, closest first, each baseline finding at most once. A
 * paired damage that is worse now is new, its baseline finding named in `worsened`. A finding
 * matched by nothing is new: nothing vouches that it was there before.
 */
export function compareFindings(baselineInspection: string, after: Comparable[], before: Comparable[]): Comparison {
  const now = after.filter(stands);
  const then = before.filter(stands);
  const pairs: { a: Comparable; b: Comparable; d: number }[] = [];
  for (const a of now)
    for (const b of then) {
      const d = distance(a, b);
      if (d !== null) pairs.push({ a, b, d });
    }
  pairs.sort((x, y) => x.d - y.d);
  const paired = new Map<string, Comparable>();
  const taken = new Set<string>();
  for (const { a, b } of pairs) {
    if (paired.has(a.id) || taken.has(b.id)) continue;
    paired.set(a.id, b);
    taken.add(b.id);
  }
  const comparison: Comparison = { baseline_inspection: baselineInspection, new: [], worsened: [], preexisting: [], not_seen: [] };
  for (const a of now) {
    const b = paired.get(a.id);
    if (!b) comparison.new.push(a.id);
    else if (rank(a) > rank(b)) {
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
