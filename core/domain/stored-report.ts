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
  };
  report.summary = { needs_review: false, new_findings: null, ...report.summary };
  report.photos = report.photos.map((p) => ({ part: null, damage_score: null, ...p }));
  report.findings = report.findings.map((f) => ({ part_position: null, source: "model", review: null, ...f }));
  report.comparison ??= null;
  report.review = { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null, note: null, ...report.review };
  return JSON.stringify(report);
}

/**
 * Every GET of a report comes here, so reports written since the newest field existed are answered
 * as stored, without a parse. Only they hold its text: no key of earlier reports is named so, and a
 * string value holding it has its quotes escaped (\"comparison\":), which this does not match.
 * `comparison` is written into every report (null without a baseline) since findings gained
 * `part_position` and the summary `new_findings`.
 */
const isCurrent = (stored: string): boolean => stored.includes('"comparison":');
