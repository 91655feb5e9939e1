import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { isApiError } from "../../core/domain/errors.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import type { Report } from "../../core/schemas/report.ts";
import { ReviewBody } from "../../core/schemas/review.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { mistakeWords, postedChoices, type ReviewChoices, reviewBodyOf, storedChoices } from "./review-form.ts";
import { reviewPageView } from "./review-view.ts";
import { EnvParams, scopeOf } from "./scope.ts";

const ReviewParams = EnvParams.extend({ id: z.string().max(64) });
/** The form's fields as they come (review-form.ts reads them); a repeated name arrives as a list. */
const ReviewFields = z.record(z.string(), z.union([z.string(), z.array(z.string())]));

/**
 * A person's review of one completed inspection: its photos large with the findings' boxes, each
 * finding confirmed, rejected or corrected, findings drawn on the photos, a note, and one submit that
 * makes the review through the API's own operation, attributed to the signed-in user's email.
 */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections } = app;
  /** The inspection of the path, if it is the user's account's and environment's; else no page (404). */
  const own = (request: FastifyRequest, id: string) => inspections.find(scopeOf(request), id);

  const page = (
    request: FastifyRequest,
    reply: FastifyReply,
    o: { inspection: InspectionRecord; report: Report; choices: ReviewChoices; errors: string[] },
  ) => {
    const env = scopeOf(request).livemode ? "live" : "test";
    const previous = o.inspection.review;
    return renderPage(reply, "review", signedIn(request, reply, "reviews"), {
      title: `Review ${o.inspection.reference ?? o.inspection.id}`,
      pageAssets: "review",
      inspection: o.inspection,
      review: reviewPageView(o.report, o.choices, (mediaId) => `/dashboard/${env}/media/${mediaId}.jpg`),
      previous: previous ? { by: previous.by, at: previous.at } : null,
      errors: o.errors,
    });
  };

  app.get("/:env/inspections/:id/review", { schema: { params: ReviewParams } }, async (request, reply) => {
    const inspection = await own(request, request.params.id);
    // Before completion this throws the API's 409, which the error page says in words.
    const report = await inspections.modelReport(inspection);
    return page(request, reply, { inspection, report, choices: storedChoices(report, inspection.review), errors: [] });
  });

  app.post("/:env/inspections/:id/review", { schema: { params: ReviewParams, body: ReviewFields } }, async (request, reply) => {
    const inspection = await own(request, request.params.id);
    const report = await inspections.modelReport(inspection);
    const choices = postedChoices(report, request.body);
    const { body, labels } = reviewBodyOf(report, choices);
    // A mistake answers the page again, as the reviewer left it, with what to put right.
    const refuse = (status: number, errors: string[]) => page(request, reply.code(status), { inspection, report, choices, errors });
    const parsed = ReviewBody.safeParse(body);
    if (!parsed.success) return refuse(400, [...new Set(parsed.error.issues.map((i) => mistakeWords(i.path, i.message, labels)))]);
    try {
      await inspections.review(scopeOf(request), inspection.id, parsed.data, request.user.email);
    } catch (error) {
      if (isApiError(error) && error.statusCode < 500)
        return refuse(error.statusCode, [mistakeWords(error.param ?? "", error.message, labels)]);
      throw error;
    }
    return reply.redirect(`/dashboard/${request.params.env}/inspections/${inspection.id}#review-title`, 303);
  });
};

export const reviewPageRoutes = fp(routes, { name: "dashboard-review-page-routes", dependencies: ["inspections"], encapsulate: true });
