import type { DamageType } from "./damage-types.ts";

export const SEVERITIES = ["minor", "moderate", "severe"] as const;
export type Severity = (typeof SEVERITIES)[number];
export const GRADES = ["none", "minor", "moderate", "severe"] as const;
export type Grade = (typeof GRADES)[number];

/**
 * A finding's severity from its type and its size relative to the part it is on (area of the damage
 * box over area of the part box). Each row: the least severity the type can have, then the shares
 * of the part from which it is moderate and severe. The README shows this table. Dent and scratch
 * are checked against car-damage-severity's labels by `npm run calibrate:severity` (the README has
 * its figures): dent's severe threshold comes from it; for scratch, the thresholds it found on the
 * calibration photos agreed less with the held-out labels than these, which stay.
 */
export const SEVERITY_TABLE: Record<DamageType, { least: Severity; moderateFrom: number; severeFrom: number }> = {
  scratch: { least: "minor", moderateFrom: 0.15, severeFrom: 0.4 },
  dent: { least: "minor", moderateFrom: 0.08, severeFrom: 0.6 },
  crack: { least: "minor", moderateFrom: 0.05, severeFrom: 0.2 },
  glass_shatter: { least: "moderate", moderateFrom: 0, severeFrom: 0.2 },
  lamp_broken: { least: "moderate", moderateFrom: 0, severeFrom: 0.6 },
  tire_flat: { least: "severe", moderateFrom: 0, severeFrom: 0 },
};

/** Without a part, the damage is measured against the photo, where a typical part covers this share. */
export const PART_SHARE_OF_PHOTO = 0.2;

export function findingSeverity(type: DamageType, shareOfPart: number): Severity {
  const row = SEVERITY_TABLE[type];
  const bySize: Severity = shareOfPart >= row.severeFrom ? "severe" : shareOfPart >= row.moderateFrom ? "moderate" : "minor";
  return SEVERITIES.indexOf(bySize) > SEVERITIES.indexOf(row.least) ? bySize : row.least;
}

/**
 * The contract's overall grade: `none` without findings, else the worst finding severity,
 * raised one step (up to `severe`) when three or more findings share that worst severity.
 */
export function overallGrade(severities: readonly Severity[]): Grade {
  if (severities.length === 0) return "none";
  const rank = Math.max(...severities.map((s) => SEVERITIES.indexOf(s)));
  const sharing = severities.filter((s) => SEVERITIES.indexOf(s) === rank).length;
  const raised = sharing >= 3 ? Math.min(rank + 1, SEVERITIES.length - 1) : rank;
  return SEVERITIES[raised]!;
}
