export const SEVERITIES = ["minor", "moderate", "severe"] as const;
export type Severity = (typeof SEVERITIES)[number];
export const GRADES = ["none", "minor", "moderate", "severe"] as const;
export type Grade = (typeof GRADES)[number];

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
