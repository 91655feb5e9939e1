import { REVIEWED } from "../domain/state-machine.ts";
import { applyReview, MAX_REVIEWS, reviewMistake, reviewRecord } from "../domain/review.ts";
import { ApiError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import type { Scope } from "../ports/records.ts";
import type { Report } from "../schemas/report.ts";
import type { ReviewBody } from "../schemas/review.ts";
import type { Services } from "../runtime/services.ts";
import { eventPayload } from "../views/inspection-view.ts";
import { findInspection } from "./inspections.ts";
import { modelReport } from "./reports.ts";

/**
 * A person's review of a completed inspection's report (the /v1 API's and the dashboard's alike):
 * checked against the report as the models made it, stored with its `inspection.reviewed` event in
 * one write, replacing any earlier review. `reviewer` is who is answerable for it: an API key's id
 * or a dashboard user's email. Answers the reviewed report. The store's write keeps the bound
 * (MAX_REVIEWS), counted in the same atomic step, so reviews racing (several reviewers, the API and
 * the dashboard at once) cannot pass it together.
 */
export async function submitReview(s: Services, scope: Scope, id: string, body: ReviewBody, reviewer: string): Promise<Report> {
  const inspection = await findInspection(s, scope, id);
  if (inspection.status !== "completed") throw notReviewable(inspection.status);
  const report = await modelReport(s, inspection);
  const mistake = reviewMistake(report, body);
  if (mistake) throw new ApiError("parameter_invalid", mistake.message, { param: mistake.param });
  const review = reviewRecord(report, body, reviewer, s.clock.now(), () => newId("fnd"));
  const after = await s.inspections.recordReview(inspection.id, review, (r) => {
    const eventId = newId("evt");
    return { id: eventId, type: REVIEWED, data: eventPayload(eventId, REVIEWED, r, s.config.publicUrl) };
  });
  // Completed inspections never move again, so only a store that lost it answers null.
  if (!after) throw notReviewable(inspection.status);
  if ("refused" in after)
    throw new ApiError(
      "inspection_not_reviewable",
      `The inspection has been reviewed ${after.reviews} times, the most one keeps (${MAX_REVIEWS}); its last review stands.`,
    );
  s.signals.nudgeController(inspection.id);
  return applyReview(report, review);
}

const notReviewable = (status: string) =>
  new ApiError("inspection_not_reviewable", `The inspection is ${status}; only a completed inspection's report can be reviewed.`);
