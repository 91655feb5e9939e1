/**
 * A report as stored, brought up to the current shape: reports are stored once, as JSON, and are
 * never rewritten, so those stored before a field existed get the value it would have had. Only
 * additions are ever made to v1 (api-contract.md, Versioning), so filling in is all it takes.
 */
export function currentReportJson(stored: string): string {
  const report = JSON.parse(stored) as {
    summary: Record<string, unknown>;
    photos: Record<string, unknown>[];
    review?: unknown;
  };
  // Reports written since `review` existed are answered as they were stored, byte for byte.
  if (report.review !== undefined) return stored;
  report.summary = { needs_review: false, ...report.summary };
  report.photos = report.photos.map((p) => ({ part: null, damage_score: null, ...p }));
  report.review = { status: "not_required", reasons: [], reviewed_at: null, reviewed_by: null };
  return JSON.stringify(report);
}
