/**
 * A report as stored, brought up to the current shape: reports are stored once, as JSON, and are
 * never rewritten, so those stored before a field existed get the value it would have had. Only
 * additions are ever made to v1 (api-contract.md, Versioning), so filling in is all it takes.
 */
export function currentReportJson(stored: string): string {
  if (isCurrent(stored)) return stored;
  const report = JSON.parse(stored) as {
    summary: Record<string, unknown>;
    photos: Record<string, unknown>[];
    findings: Record<string, unknown>[];
    review?: Record<string, unknown>;
    comparison?: unknown;
    integrity?: unknown;
  };
  report.summary = { needs_review: false, new_findings: null, ...report.summary };
  report.photos = report.photos.map((p) => ({ part: null, damage_score: null, ...p }));
  report.findings = report.findings.map((f) => ({ part_position: null, source: "model", review: null, ...f }));
  report.comparison ??= null;
  report.integrity ??= { same_vehicle: "unknown", inconsistent_photos: [], reused_photos: [] };
  report.review = { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null, note: null, ...report.review };
  return JSON.stringify(report);
}

/**
 * Every GET of a report comes here, so reports written since the newest field existed are answered
 * as stored, without a parse. Only they hold its text: no key of earlier reports is named so, and a
 * string value holding it has its quotes escaped (\"integrity\":), which this does not match.
 * `integrity` is written into every report since `comparison` (null without a baseline), findings'
 * `part_position` and the summary's `new_findings`.
 */
const isCurrent = (stored: string): boolean => stored.includes('"integrity":');
