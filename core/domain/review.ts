import type { Finding, Quality, Report, ReviewReason } from "../schemas/report.ts";
import type { AddedFinding, ReviewBody, ReviewDecision } from "../schemas/review.ts";
import { formatTimestamp } from "../runtime/time.ts";
import { reviewedComparison } from "./comparison.ts";
import { overallGrade } from "./grading.ts";

/**
 * A typed finding the model is less sure of than this goes to a person. The damage model's own
 * thresholds (config.ts) sit at 0.25 to 0.64: between them and this, a finding is reported and checked.
 */
export const LOW_CONFIDENCE_BELOW = 0.5;

/**
 * The most reviews one inspection takes. Each is kept with its `inspection.reviewed` event, in the
 * inspection's record (about 1.5 KB each, measured on the Inspection resources): bounded, so the
 * record stays far below etcd's 1.5 MiB whatever its history. Its last review stands.
 */
export const MAX_REVIEWS = 100;

export const REVIEW_POLICIES = ["off", "when_unsure", "always"] as const;
export type ReviewPolicy = (typeof REVIEW_POLICIES)[number];
/** An account's policy until it is changed in the dashboard. */
export const DEFAULT_REVIEW_POLICY: ReviewPolicy = "when_unsure";

type Inputs = {
  findings: Pick<Finding, "type" | "confidence">[];
  /** Whether each photo passed its checks; a photo kept with problems was sent as it was. */
  photosPassed: boolean[];
  vinConfirmed: boolean;
  policy: ReviewPolicy;
  /** Whether a photo is a picture sent before or taken before the link (integrity.reused_photos). */
  photosReused?: boolean;
  /** Whether a photo shows another vehicle than the rest (integrity.same_vehicle inconsistent). */
  vehicleInconsistent?: boolean;
};

/** Why a person should look at a report before acting on its grade, in the contract's order. */
export function reviewReasons({
  findings,
  photosPassed,
  vinConfirmed,
  policy,
  photosReused = false,
  vehicleInconsistent = false,
}: Inputs): ReviewReason[] {
  const reasons: ReviewReason[] = [];
  if (findings.some((f) => f.type === "damage_suspected")) reasons.push("damage_suspected");
  if (findings.some((f) => f.type !== "damage_suspected" && f.confidence !== null && f.confidence < LOW_CONFIDENCE_BELOW))
    reasons.push("low_confidence");
  if (photosPassed.some((passed) => !passed)) reasons.push("photo_problems_kept");
  if (!vinConfirmed) reasons.push("vin_unconfirmed");
  if (vehicleInconsistent) reasons.push("vehicle_inconsistent");
  if (photosReused) reasons.push("photos_reused");
  if (policy === "always") reasons.push("policy");
  return reasons;
}

/**
 * Whether a photo is fine as it is for the review's sake: it passed its checks, or its only problem
 * is being too small to search for boxes and the whole-photo judgement looked at it instead.
 */
export function photoNeedsNoReview(quality: Quality | null, damageScore: number | null | undefined): boolean {
  if (!quality) return false;
  if (quality.passed) return true;
  return damageScore != null && quality.problems.every((p) => p === "too_small");
}

/** `required` when there is a reason and the policy is not `off`. */
export const reviewStatus = (reasons: readonly ReviewReason[], policy: ReviewPolicy) =>
  policy !== "off" && reasons.length > 0 ? ("required" as const) : ("not_required" as const);

/** A finished inspection's review, from its findings, its photos as processing measured them, its VIN check and the policy. */
export function reviewOf(o: {
  findings: Inputs["findings"];
  photos: { quality: Quality | null; damageScore?: number | null }[];
  vinConfirmed: boolean;
  policy: ReviewPolicy;
  photosReused?: boolean;
  vehicleInconsistent?: boolean;
}): { status: "required" | "not_required"; reasons: ReviewReason[] } {
  const reasons = reviewReasons({
    findings: o.findings,
    photosPassed: o.photos.map((p) => photoNeedsNoReview(p.quality, p.damageScore)),
    vinConfirmed: o.vinConfirmed,
    policy: o.policy,
    photosReused: o.photosReused,
    vehicleInconsistent: o.vehicleInconsistent,
  });
  return { status: reviewStatus(reasons, o.policy), reasons };
}

/** What a reviewer may do with a model's finding. */
export const REVIEW_ACTIONS = ["confirm", "reject", "change"] as const;
export type ReviewAction = (typeof REVIEW_ACTIONS)[number];

const DECIDED = { confirm: "confirmed", reject: "rejected", change: "changed" } as const;

/**
 * A completed review as stored with the inspection: the request as decided, who and when, the ids
 * given to the reviewer's findings, and the summary it makes. The report stays as the models made
 * it; the reviewed report is that report with this applied (applyReview), so a later review
 * replaces this one and never builds on it.
 */
export type ReviewRecord = {
  by: string;
  at: number;
  note: string | null;
  decisions: ReviewDecision[];
  added: (AddedFinding & { id: string })[];
  /** new_findings: absent from reviews stored before comparisons existed. */
  summary: { findings: number; grade: Finding["severity"] | "none"; needs_review: false; new_findings?: number | null };
};

/** A mistake in a review request that only the report shows: the parameter at fault and why. */
export type ReviewMistake = { param: string; message: string };

/** The first finding or photo the request names that is not this report's, or another such mistake; null when there is none. */
export function reviewMistake(report: Report, body: ReviewBody): ReviewMistake | null {
  const findings = new Map(report.findings.map((f) => [f.id, f]));
  const decided = new Set<string>();
  for (const [i, d] of (body.decisions ?? []).entries()) {
    const param = `decisions[${i}].finding`;
    const finding = findings.get(d.finding);
    if (!finding) return { param, message: `${d.finding} is not a finding of this inspection's report.` };
    if (decided.has(d.finding)) return { param, message: `${d.finding} is decided twice; decide each finding once.` };
    decided.add(d.finding);
    if (finding.type === "vin_mismatch" && d.action === "change" && d.type !== undefined)
      return { param: `decisions[${i}].type`, message: "A vin_mismatch finding is about the VIN, not damage: confirm or reject it." };
  }
  const photos = new Set(report.photos.map((p) => p.media_id));
  for (const [i, a] of (body.added ?? []).entries()) {
    if (!photos.has(a.media_id))
      return { param: `added[${i}].media_id`, message: `${a.media_id} is not a photo of this inspection's report.` };
  }
  return null;
}

/** The review a request makes of a report (checked by reviewMistake first). */
export function reviewRecord(report: Report, body: ReviewBody, by: string, at: number, newFindingId: () => string): ReviewRecord {
  const record: ReviewRecord = {
    by,
    at,
    note: body.note ?? null,
    decisions: body.decisions ?? [],
    added: (body.added ?? []).map((a) => ({ id: newFindingId(), ...a, part: a.part ?? null })),
    summary: { findings: 0, grade: "none", needs_review: false, new_findings: null },
  };
  const reviewed = applyReview(report, record);
  record.summary = {
    findings: reviewed.summary.findings,
    grade: reviewed.grade,
    needs_review: false,
    new_findings: reviewed.summary.new_findings,
  };
  return record;
}

/**
 * The report as the review leaves it: each decided finding marked (a change applied), the
 * reviewer's findings added, the grade and summary from the findings not rejected, and the review
 * completed, its reasons kept. Findings the review did not decide stay as the models made them and count.
 */
export function applyReview(report: Report, review: ReviewRecord): Report {
  const decisions = new Map(review.decisions.map((d) => [d.finding, d]));
  const photoUrl = new Map(report.photos.map((p) => [p.media_id, p.url]));
  const decided: Finding[] = report.findings.map((f) => {
    const d = decisions.get(f.id);
    if (!d) return { ...f, review: null };
    return {
      ...f,
      ...(d.type === undefined ? {} : { type: d.type }),
      // A finding moved to another part has no place on it that the models measured.
      ...(d.part === undefined ? {} : { part: d.part, part_position: d.part === f.part ? f.part_position : null }),
      ...(d.severity === undefined ? {} : { severity: d.severity }),
      review: DECIDED[d.action],
    };
  });
  const added: Finding[] = review.added.map((a) => ({
    id: a.id,
    object: "finding",
    type: a.type,
    part: a.part ?? null,
    severity: a.severity,
    confidence: null,
    media_id: a.media_id,
    bbox: a.bbox,
    part_position: null,
    evidence_url: photoUrl.get(a.media_id) ?? null,
    source: "reviewer",
    review: null,
  }));
  const findings = [...decided, ...added];
  const counted = findings.filter((f) => f.review !== "rejected");
  const grade = overallGrade(counted.map((f) => f.severity));
  const comparison = report.comparison && reviewedComparison(report.comparison, findings);
  return {
    ...report,
    grade,
    summary: {
      ...report.summary,
      findings: counted.length,
      grade,
      needs_review: false,
      new_findings: comparison ? comparison.new.length : null,
    },
    findings,
    comparison,
    review: {
      status: "completed",
      reasons: report.review.reasons,
      reviewed_at: formatTimestamp(review.at)!,
      reviewed_by: review.by,
      note: review.note,
    },
  };
}
