import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import QRCode from "qrcode";
import { z } from "zod";
import { captureLinkState, isCancelable } from "../../core/domain/state-machine.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { reportPdfHeaders } from "../../api/pdf/report-pdf.ts";
import type { Inspections } from "../../api/plugins/inspections.ts";
import { DEFAULT_SHARE_LINK_DAYS, SHARE_LINK_DAYS } from "../auth/share-links.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { handoverView } from "../views/handover-view.ts";
import { reportView } from "../views/report-view.ts";
import { EnvParams, scopeOf } from "./scope.ts";

const InspectionParams = EnvParams.extend({ id: z.string().max(64) });
const EventParams = EnvParams.extend({ eventId: z.string().max(64) });
const MediaParams = EnvParams.extend({ id: z.string().max(64) });
const ShareForm = z.object({
  days: z.coerce.number().pipe(z.literal(SHARE_LINK_DAYS)).default(DEFAULT_SHARE_LINK_DAYS),
  _csrf: z.string().optional(),
});

/** A share link just made, shown once on the page that answers the form. */
type NewShareLink = { url: string; expiresAt: number };

/** The vehicle's inspections are read this many at a time when looking for those compared with one of them. */
const HISTORY_PAGE = 100;
/** And at most this many: a vehicle inspected more often than that since has its oldest returns left unlisted. */
const HISTORY_LIMIT = 1000;

/**
 * The inspections made with this one as their baseline_inspection, newest first. The store has no
 * filter on the baseline: its vehicle's inspections created since this one are read (by VIN, which
 * the store indexes) and those that name it kept.
 */
async function comparedWith(
  inspections: Pick<Inspections, "list">,
  scope: Scope,
  inspection: InspectionRecord,
): Promise<InspectionRecord[]> {
  if (inspection.status !== "completed") return [];
  const found: InspectionRecord[] = [];
  let after: { createdAt: number; id: string } | undefined;
  for (let read = 0; read < HISTORY_LIMIT; read += HISTORY_PAGE) {
    const rows = await inspections.list(scope, { limit: HISTORY_PAGE, after, vin: inspection.vin, createdFrom: inspection.createdAt });
    found.push(...rows.filter((r) => r.baselineInspectionId === inspection.id));
    if (rows.length < HISTORY_PAGE) break;
    after = { createdAt: rows.at(-1)!.createdAt, id: rows.at(-1)!.id };
  }
  return found;
}

/**
 * One inspection for claims staff: its status and vehicle, the capture link while it is open, its
 * history, the report once completed (with the PDF and share links), its comparison with its
 * baseline and the inspections compared with it (a handover), and the webhook deliveries of its
 * events with a way to resend them. Also the photos those pages show, by session.
 */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections, events, webhooks, media, shareLinks, clock, config } = app;
  /** The inspection of the path, if it is the user's account's and environment's; else no page (404). */
  const own = (request: FastifyRequest, id: string) => inspections.find(scopeOf(request), id);

  const page = async (request: FastifyRequest, reply: FastifyReply, inspection: InspectionRecord, shared: NewShareLink | null) => {
    const scope = scopeOf(request);
    const env = scope.livemode ? "live" : "test";
    // Past expires_at the link is dead even before the controller's sweep says so: not offered.
    const open = captureLinkState(inspection.status, inspection.expiresAt, clock.now()) === "active";
    const captureUrl = open ? inspections.captureUrl(inspection.id) : null;
    const sent = await events.forInspection(scope, inspection.id);
    const attempts = await events.attempts(sent.map((e) => e.id));
    const mediaUrl = (mediaId: string) => `/dashboard/${env}/media/${mediaId}.jpg`;
    const baseline = inspection.baselineInspectionId ? await inspections.baseline(scope, inspection.baselineInspectionId) : null;
    const report = inspection.status === "completed" ? reportView(await inspections.report(inspection), mediaUrl, baseline) : null;
    return renderPage(reply, "inspection", signedIn(request, reply, "inspections"), {
      title: inspection.reference ?? inspection.id,
      inspection,
      cancelable: isCancelable(inspection.status),
      // Drawn here, not by the page's script: the QR shows with scripts off, and nothing loads from elsewhere.
      capture: captureUrl ? { url: captureUrl, qr: await QRCode.toString(captureUrl, { type: "svg", margin: 1 }) } : null,
      events: sent.map((e) => ({ ...e, attempts: attempts.get(e.id) ?? [] })),
      report,
      baseline,
      handover: report && baseline ? handoverView(report, baseline, mediaUrl) : null,
      comparedBy: await comparedWith(inspections, scope, inspection),
      shareDays: SHARE_LINK_DAYS,
      defaultShareDays: DEFAULT_SHARE_LINK_DAYS,
      shared,
    });
  };

  app.get("/:env/inspections/:id", { schema: { params: InspectionParams } }, async (request, reply) =>
    page(request, reply, await own(request, request.params.id), null),
  );

  app.get("/:env/inspections/:id/report.pdf", { schema: { params: InspectionParams } }, async (request, reply) => {
    const inspection = await own(request, request.params.id);
    const pdf = await inspections.pdf(inspection);
    return reply.headers(reportPdfHeaders(inspection.id, pdf)).send(pdf);
  });

  // The link is shown in the answer to the form, once, as a new API key is: it is a credential,
  // and a redirect would put it in the history and the logs.
  app.post("/:env/inspections/:id/share", { schema: { params: InspectionParams, body: ShareForm } }, async (request, reply) => {
    const inspection = await own(request, request.params.id);
    // Only a report can be shared: this throws the same 409 as the API before there is one.
    await inspections.report(inspection);
    const { token, expiresAt } = shareLinks.create(inspection.id, request.body.days);
    return page(request, reply, inspection, { url: `${config.publicUrl}/r/${token}`, expiresAt });
  });

  app.post("/:env/events/:eventId/resend", { schema: { params: EventParams } }, async (request, reply) => {
    const event = await webhooks.resend(scopeOf(request), request.params.eventId);
    return reply.redirect(`/dashboard/${request.params.env}/inspections/${event.inspectionId}#${event.id}`, 303);
  });

  app.get("/:env/media/:id.jpg", { schema: { params: MediaParams } }, async (request, reply) =>
    media.send(request, reply, request.params.id, await media.get(scopeOf(request), request.params.id)),
  );
};

export const inspectionPageRoutes = fp(routes, {
  name: "dashboard-inspection-page-routes",
  dependencies: ["inspections", "events", "webhooks", "media", "accounts", "config"],
  encapsulate: true,
});
