import { Report } from "../../core/schemas/report.ts";
import { evidenceMediaId } from "../../core/domain/build-report.ts";
import { type Baseline, newSince, type Since, sinceOf } from "../../core/views/new-since.ts";
import { ENGLISH, type ReportWords } from "../../core/views/report-words.ts";
import { findingMark, isCounted, reviewReasonWords } from "../../core/views/review-words.ts";

/** The long side of a thumbnail as laid out, in CSS pixels; the JPEG itself is the full photo. */
const THUMBNAIL_WIDTH = 240;

export type Picture = { src: string; width: number; height: number };

/** A photo as laid out: its address, and a thumbnail's size in its proportions (a camera's 4:3 where they are not known). */
export const pictureOf = (src: string, size: { width: number; height: number } | undefined): Picture => {
  const [width, height] = size ? [size.width, size.height] : [4, 3];
  return { src, width: THUMBNAIL_WIDTH, height: Math.round((THUMBNAIL_WIDTH * height) / width) };
};

/**
 * What report-partial.eta shows of a stored report, the same on the dashboard and on a shared link:
 * only the photo addresses differ (`mediaUrl`), since each is served by its own, scoped route. With
 * the baseline of a compared report, each finding carries its mark against it (new-since.ts). The
 * words made here (reasons, marks, "New since") are in `w`'s language: English on the dashboard.
 */
export function reportView(
  reportJson: string,
  mediaUrl: (mediaId: string) => string,
  baseline: Baseline | null = null,
  w: ReportWords = ENGLISH,
) {
  const stored: unknown = JSON.parse(reportJson);
  const report = Report.parse(stored);
  const photos = new Map(report.photos.map((p) => [p.media_id, p]));
  // Evidence is the photo with the finding drawn on it, so it has that photo's size.
  const picture = (mediaId: string | null, sizeOf: string | null): Picture | null =>
    mediaId ? pictureOf(mediaUrl(mediaId), sizeOf ? photos.get(sizeOf) : undefined) : null;
  const since = report.comparison && baseline ? sinceOf(report.comparison, baseline, w) : new Map<string, Since>();
  return {
    grade: report.grade,
    findingsCount: report.summary.findings,
    rejectedCount: report.findings.filter((f) => !isCounted(f)).length,
    review: {
      status: report.review.status,
      /** Why the report went to a person, in plain words; kept once the review is done. */
      reasons: reviewReasonWords(report.review.reasons, w),
      by: report.review.reviewed_by,
      at: report.review.reviewed_at === null ? null : Date.parse(report.review.reviewed_at),
      note: report.review.note,
    },
    createdAt: Date.parse(report.created_at),
    livemode: report.livemode,
    vehicle: report.vehicle,
    findings: report.findings.map((f) => ({
      ...f,
      angle: f.media_id ? (photos.get(f.media_id)?.angle ?? null) : null,
      mark: findingMark(f, w),
      rejected: !isCounted(f),
      evidence: picture(evidenceMediaId(f), f.media_id),
      since: since.get(f.id) ?? null,
    })),
    /** The "New since <date>" summary; null unless the report is compared with a baseline. */
    newSince: newSince(report, baseline, w),
    comparison: report.comparison,
    /** Each photo with the number of counted findings on it, to mark those photos in the grid. */
    photos: report.photos.map((p) => ({
      ...p,
      picture: picture(p.media_id, p.media_id)!,
      findings: report.findings.filter((f) => f.media_id === p.media_id && isCounted(f)).length,
    })),
    model: report.model,
    /** The report as the API returns it, for staff who compare with what their system received. */
    json: JSON.stringify(stored, null, 2),
  };
}

export type ReportView = ReturnType<typeof reportView>;

/** The evidence photo's media id is the last segment but one of evidence_url (/v1/media/<id>/full.jpg). */
