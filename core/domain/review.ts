import type { Finding, Quality, ReviewReason } from "../schemas/report.ts";

/**
 * A typed finding the model is less sure of than this goes to a person. The damage model's own
 * thresholds (config.ts) sit at 0.25 to 0.64: between them and this, a finding is reported and checked.
 */
export const LOW_CONFIDENCE_BELOW = 0.5;

export const REVIEW_POLICIES = ["off", "when_unsure", "always"] as const;
export type ReviewPolicy = (typeof REVIEW_POLICIES)[number];

type Inputs = {
  findings: Pick<Finding, "type" | "confidence">[];
  /** Whether each photo passed its checks; a photo kept with problems was sent as it was. */
  photosPassed: boolean[];
  vinConfirmed: boolean;
  policy: ReviewPolicy;
};

/** Why a person should look at a report before acting on its grade, in the contract's order. */
export function reviewReasons({ findings, photosPassed, vinConfirmed, policy }: Inputs): ReviewReason[] {
  const reasons: ReviewReason[] = [];
  if (findings.some((f) => f.type === "damage_suspected")) reasons.push("damage_suspected");
  if (findings.some((f) => f.type !== "damage_suspected" && f.confidence !== null && f.confidence < LOW_CONFIDENCE_BELOW))
    reasons.push("low_confidence");
  if (photosPassed.some((passed) => !passed)) reasons.push("photo_problems_kept");
  if (!vinConfirmed) reasons.push("vin_unconfirmed");
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
}): { status: "required" | "not_required"; reasons: ReviewReason[] } {
  const reasons = reviewReasons({
    findings: o.findings,
    photosPassed: o.photos.map((p) => photoNeedsNoReview(p.quality, p.damageScore)),
    vinConfirmed: o.vinConfirmed,
    policy: o.policy,
  });
  return { status: reviewStatus(reasons, o.policy), reasons };
}
