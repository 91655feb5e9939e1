import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Inspections } from "../../api/plugins/inspections.ts";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DEFAULT_REVIEW_POLICY, REVIEW_POLICIES, type ReviewPolicy } from "../../core/domain/review.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { reviewReasonWords } from "../../core/views/review-words.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { EnvParams, scopeOf } from "./scope.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The completed inspections waiting for review in the page's scope, oldest first; set for pages by reviewBadge. */
    reviewQueue?: InspectionRecord[];
  }
}

/** Completed inspections read at a time while looking for those waiting. */
const SCAN_BATCH = 500;
/** Rows the queue page lists; the rest are counted. */
const QUEUE_PAGE = 50;
/** Reports read at once for the listed rows' reasons. */
const REPORTS_AT_ONCE = 8;

/** What each policy means, as the form says it. */
const POLICY_WORDS: Record<ReviewPolicy, string> = {
  off: "Never: reports are final as the models make them.",
  when_unsure:
    "When unsure: a person reviews a report when the models suspect damage they cannot place or are unsure of a finding, a photo with problems was kept, or the VIN was not confirmed.",
  always: "Always: every report waits for a person.",
};

const PolicyForm = z.object({ policy: z.string().max(32).default(""), _csrf: z.string().optional() });
const QueueQuery = z.object({ saved: z.literal("1").optional() });

/**
 * The completed inspections of `scope` whose report waits for a person, the longest waiting first.
 * Every completed inspection is read (the store has no filter on needs_review), a batch at a time.
 */
export async function waitingForReview(app: { inspections: Pick<Inspections, "list"> }, scope: Scope): Promise<InspectionRecord[]> {
  const waiting: InspectionRecord[] = [];
  let after: { createdAt: number; id: string } | undefined;
  for (;;) {
    const batch = await app.inspections.list(scope, { limit: SCAN_BATCH, status: "completed", after });
    waiting.push(...batch.filter((r) => r.summary?.needs_review === true));
    if (batch.length < SCAN_BATCH) break;
    const last = batch.at(-1)!;
    after = { createdAt: last.createdAt, id: last.id };
  }
  const since = (r: InspectionRecord) => r.completedAt ?? r.createdAt;
  return waiting.sort((a, b) => since(a) - since(b) || a.id.localeCompare(b.id));
}

/**
 * A hook for the signed-in pages: the queue of the page's scope, for the navigation's badge. Not for
 * the photos and PDFs those pages load, which show no navigation.
 */
export const reviewBadge = (app: FastifyInstance) => async (request: FastifyRequest) => {
  const env = (request.params as { env?: string } | undefined)?.env;
  if (env !== "test" && env !== "live") return;
  if (/\.(jpg|pdf)$/.test(request.routeOptions.url ?? "")) return;
  request.reviewQueue = await waitingForReview(app, scopeOf(request));
};

/** How long a report has waited, roughly, as people say it: "40 min", "5 h", "3 days". */
export function waitedFor(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.floor(minutes / 60)} h`;
  return `${Math.floor(minutes / (24 * 60))} days`;
}

/** Each item's reasons in plain words, read from its report a few at a time; null where the report cannot be read. */
async function reasonsOf(app: FastifyInstance, items: InspectionRecord[]): Promise<(string[] | null)[]> {
  const reasons: (string[] | null)[] = [];
  for (let i = 0; i < items.length; i += REPORTS_AT_ONCE) {
    const read = items.slice(i, i + REPORTS_AT_ONCE).map(async (r) => {
      try {
        return reviewReasonWords((await app.inspections.modelReport(r)).review.reasons);
      } catch (error) {
        app.log.warn({ err: error, inspection: r.id }, "a report in the review queue could not be read");
        return null;
      }
    });
    reasons.push(...(await Promise.all(read)));
  }
  return reasons;
}

/** The review queue (oldest first, with why each is there) and the account's review policy. */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { accounts, clock } = app;
  const page = async (request: FastifyRequest, reply: FastifyReply, o: { saved: boolean; error: string | null }) => {
    const scope = scopeOf(request);
    const queue = request.reviewQueue ?? (await waitingForReview(app, scope));
    const shown = queue.slice(0, QUEUE_PAGE);
    const reasons = await reasonsOf(app, shown);
    const now = clock.now();
    return renderPage(reply, "reviews", signedIn(request, reply, "reviews"), {
      title: "Review queue",
      pageAssets: "review",
      items: shown.map((r, i) => ({ ...r, reasons: reasons[i], waited: waitedFor(now - (r.completedAt ?? r.createdAt)) })),
      total: queue.length,
      policy: await accounts.reviewPolicy(scope.accountId, scope.livemode),
      policies: REVIEW_POLICIES.map((p) => ({ value: p, words: POLICY_WORDS[p], default: p === DEFAULT_REVIEW_POLICY })),
      saved: o.saved,
      error: o.error,
    });
  };

  app.get("/:env/reviews", { schema: { params: EnvParams, querystring: QueueQuery } }, async (request, reply) =>
    page(request, reply, { saved: request.query.saved === "1", error: null }),
  );

  app.post("/:env/reviews/policy", { schema: { params: EnvParams, body: PolicyForm } }, async (request, reply) => {
    const policy = REVIEW_POLICIES.find((p) => p === request.body.policy);
    if (!policy)
      return page(request, reply.code(400), { saved: false, error: "Choose when reports go to a person: never, when unsure or always." });
    const scope = scopeOf(request);
    await accounts.setReviewPolicy(scope.accountId, scope.livemode, policy);
    return reply.redirect(`/dashboard/${request.params.env}/reviews?saved=1`, 303);
  });
};

export const reviewQueueRoutes = fp(routes, {
  name: "dashboard-review-queue-routes",
  dependencies: ["inspections", "accounts", "config"],
  encapsulate: true,
});
