import type { DetectionResult } from "../ports/detection-runner.ts";
import type { InspectionRecord, PhotoRecord } from "../ports/records.ts";
import type { Finding, Integrity, Report } from "../schemas/report.ts";
import { formatTimestamp } from "../runtime/time.ts";
import { compareFindings, withAngles } from "./comparison.ts";
import { overallGrade, type Severity } from "./grading.ts";
import { reviewOf, type ReviewPolicy } from "./review.ts";
import type { SameVehicle } from "./same-vehicle.ts";

/** A VIN that differs from the one on file may mean the photos are of another vehicle. */
export const VIN_MISMATCH_SEVERITY: Severity = "moderate";

type Inputs = {
  inspection: InspectionRecord;
  photos: PhotoRecord[];
  result: DetectionResult;
  publicUrl: string;
  now: number;
  newFindingId: () => string;
  /** Media ids of evidence photos stored for detections, by index into result.detections. */
  evidenceMediaIds: (string | null)[];
  /** Whether the report goes to a person (review.ts); `when_unsure` unless the inspection or account says otherwise. */
  reviewPolicy?: ReviewPolicy;
  /** The baseline inspection's report as it reads now (reviewed, where it was), when the inspection has one. */
  baseline?: Report | null;
  /** What the photo index found of this inspection's photos (core/operations/photo-index.ts); none where it was not asked. */
  reused?: Integrity["reused_photos"];
  /** Whether the photos (and the baseline's) show one vehicle (same-vehicle.ts); unknown where it was not asked. */
  vehicle?: SameVehicle;
};

/** The report of a finished inspection: pure, from the stored inspection, its photos and the detection result. */
export function buildReport({
  inspection,
  photos,
  result,
  publicUrl,
  now,
  newFindingId,
  evidenceMediaIds,
  reviewPolicy = "when_unsure",
  baseline = null,
  reused = [],
  vehicle = { same_vehicle: "unknown", inconsistent_photos: [] },
}: Inputs): Report {
  const mediaUrl = (id: string) => `${publicUrl}/v1/media/${id}/full.jpg`;
  const findings: Finding[] = result.detections.map((d, i) => ({
    id: newFindingId(),
    object: "finding",
    type: d.type,
    part: d.part,
    severity: d.severity,
    confidence: d.confidence,
    media_id: d.mediaId,
    bbox: d.bbox,
    part_position: d.partPosition ?? null,
    evidence_url: evidenceMediaIds[i] ? mediaUrl(evidenceMediaIds[i]!) : null,
    source: "model",
    review: null,
  }));
  if (inspection.vinObserved && inspection.vinObserved !== inspection.vin) {
    const vinPhoto = photos.find((p) => p.angle === "vin");
    findings.push({
      id: newFindingId(),
      object: "finding",
      type: "vin_mismatch",
      part: null,
      severity: VIN_MISMATCH_SEVERITY,
      confidence: null,
      media_id: vinPhoto?.mediaId ?? null,
      bbox: null,
      part_position: null,
      evidence_url: vinPhoto ? mediaUrl(vinPhoto.mediaId) : null,
      source: "model",
      review: null,
    });
  }
  const grade = overallGrade(findings.map((f) => f.severity));
  const measured = new Map(result.photos.map((p) => [p.mediaId, p]));
  const qualityOf = (p: PhotoRecord) => measured.get(p.mediaId)?.quality ?? p.quality;
  const vinConfirmed = inspection.vinObserved === inspection.vin;
  const judged = reviewOf({
    findings,
    photos: photos.map((p) => ({ quality: qualityOf(p), damageScore: measured.get(p.mediaId)?.damageScore })),
    vinConfirmed,
    policy: reviewPolicy,
    photosReused: reused.length > 0,
    vehicleInconsistent: vehicle.same_vehicle === "inconsistent",
  });
  const review = { ...judged, reviewed_at: null, reviewed_by: null, note: null };
  const photoViews: Report["photos"] = photos.map((p) => ({
    media_id: p.mediaId,
    angle: p.angle,
    url: mediaUrl(p.mediaId),
    width: p.width,
    height: p.height,
    captured_at: formatTimestamp(p.capturedAt)!,
    quality: qualityOf(p),
    part: p.part ?? null,
    damage_score: measured.get(p.mediaId)?.damageScore ?? null,
  }));
  const comparison = baseline
    ? compareFindings(baseline.inspection_id, withAngles({ findings, photos: photoViews }), withAngles(baseline))
    : null;
  return {
    object: "report",
    inspection_id: inspection.id,
    livemode: inspection.livemode,
    created_at: formatTimestamp(now)!,
    grade,
    summary: {
      findings: findings.length,
      grade,
      needs_review: review.status === "required",
      new_findings: comparison ? comparison.new.length : null,
    },
    vehicle: {
      vin: inspection.vin,
      vin_confirmed: vinConfirmed,
      vin_observed: inspection.vinObserved,
      make: inspection.make,
      model: inspection.model,
      year: inspection.year,
    },
    photos: photoViews,
    findings,
    review,
    comparison,
    integrity: { ...vehicle, reused_photos: reused },
    model: result.model,
  };
}

/** The media id of a finding's evidence photo (the photo with its box drawn), read back from its URL; its plain photo where it has none. */
export const evidenceMediaId = (f: Finding): string | null => f.evidence_url?.match(/\/v1\/media\/([^/]+)\/full\.jpg$/)?.[1] ?? f.media_id;
