/**
 * A report as stored, brought up to the current shape: reports are stored once, as JSON, and are
 * never rewritten, so those stored before a field existed get the value it would have had. Only
 * additions are ever made to v1 (api-contract.md, Versioning), so filling in is all it takes.
 */
export function currentReportJson(stored: string): string {
  // Every GET of a report comes here, so reports written since `review` existed are answered as
  // stored, without a parse. Only they can hold the text: no key of earlier reports is named
  // review, and a string value holding it has its quotes escaped (\"review\":), which this does not match.
  if (stored.includes('"review":')) return stored;
  const report = JSON.parse(stored) as { summary: Record<string, unknown>; photos: Record<string, unknown>[]; review?: unknown };
  report.summary = { needs_review: false, ...report.summary };
  report.photos = report.photos.map((p) => ({ part: null, damage_score: null, ...p }));
  report.review = { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null };
  return JSON.stringify(report);
}
