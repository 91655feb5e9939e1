import { REVIEW_REASONS, type Finding, type ReviewReason } from "../schemas/report.ts";
import { ENGLISH, type ReportWords } from "./report-words.ts";

/**
 * How a report's review reads to people, the same on the dashboard, a shared link and the PDF:
 * reasons in plain words, and the mark a finding carries once a person has decided it. The words
 * are the report catalogues' (report-words.ts); English where no language is given (the dashboard).
 */
export const REVIEW_REASON_WORDS = Object.fromEntries(REVIEW_REASONS.map((r) => [r, ENGLISH.reason(r)])) as Record<ReviewReason, string>;

export const reviewReasonWords = (reasons: readonly ReviewReason[], w: ReportWords = ENGLISH) => reasons.map((r) => w.reason(r));

/** A finding's mark: who placed it, or what the review decided of it; null for a model's finding nobody decided. */
export function findingMark(f: Pick<Finding, "source" | "review">, w: ReportWords = ENGLISH): string | null {
  if (f.source === "reviewer") return w.t("mark.added");
  if (f.review === "rejected") return w.t("mark.rejected");
  if (f.review === "changed") return w.t("mark.changed");
  if (f.review === "confirmed") return w.t("mark.confirmed");
  return null;
}

/** Findings a review rejected stay listed, marked, and leave the grade and the count. */
export const isCounted = (f: Pick<Finding, "review">) => f.review !== "rejected";
