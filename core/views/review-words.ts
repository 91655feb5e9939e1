import type { Finding, ReviewReason } from "../schemas/report.ts";

/**
 * How a report's review reads to people, the same on the dashboard, a shared link and the PDF:
 * reasons in plain words, and the mark a finding carries once a person has decided it.
 */
export const REVIEW_REASON_WORDS: Record<ReviewReason, string> = {
  damage_suspected: "Damage suspected that the models could not place",
  low_confidence: "A finding the models are not sure of",
  photo_problems_kept: "A photo with quality problems was kept",
  vin_unconfirmed: "The VIN was not confirmed on the vehicle",
  vehicle_inconsistent: "The photos may not all show the same vehicle",
  photos_reused: "A photo was sent before, or taken before the link was made",
  policy: "Your account or this inspection asks for review of every report",
};

export const reviewReasonWords = (reasons: readonly ReviewReason[]) => reasons.map((r) => REVIEW_REASON_WORDS[r]);

/** A finding's mark: who placed it, or what the review decided of it; null for a model's finding nobody decided. */
export function findingMark(f: Pick<Finding, "source" | "review">): string | null {
  if (f.source === "reviewer") return "Added by reviewer";
  if (f.review === "rejected") return "Rejected by reviewer";
  if (f.review === "changed") return "Changed by reviewer";
  if (f.review === "confirmed") return "Confirmed by reviewer";
  return null;
}

/** Findings a review rejected stay listed, marked, and leave the grade and the count. */
export const isCounted = (f: Pick<Finding, "review">) => f.review !== "rejected";
