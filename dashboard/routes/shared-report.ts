import type { FastifyError } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { notFound } from "../../core/domain/errors.ts";
import { completedReport } from "../../core/operations/reports.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";
import { loadBaseline } from "../../core/views/new-since.ts";
import { reportPdf, reportPdfHeaders } from "../../api/pdf/report-pdf.ts";
import { verifyShareToken } from "../auth/share-links.ts";
import { DASHBOARD_HEADERS } from "../dashboard-routes.ts";
import { type PageContext, renderPage } from "../views/render.ts";
import { reportView } from "../views/report-view.ts";
import { sendPhoto } from "../../core/net/send-photo.ts";

const TokenParams = z.object({ token: z.string().max(512) });
const MediaParams = TokenParams.extend({ mediaId: z.string().max(64) });

/**
 * The dashboard's rules, except that no page here may send its address on: the token in it is the
 * credential, and a click on a link must not hand it to another site. Nor should a search engine
 * keep a link someone posted.
 */
const SHARED_HEADERS = { ...DASHBOARD_HEADERS, "referrer-policy": "no-referrer", "x-robots-tag": "noindex, nofollow" } as const;

/** Whoever holds a link: nobody signed in, and no forms to protect. */
const VISITOR: PageContext = { user: null, env: null, section: null, csrf: "" };

/** A link that opens nothing, with the status and sentence its page answers. */
class LinkRefused extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

/**
 * Read-only report links, /r/<token> (dashboard/auth/share-links.ts): the report page, its photos and
 * its PDF, to anyone with an unexpired link and to nothing else, with no session. Registered beside
 * the dashboard, not under it, so that no dashboard cookie is ever needed or sent for it.
 */
export const sharedReportRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
    app.addHook("onRequest", async (_request, reply) => {
      reply.headers(SHARED_HEADERS);
    });
    // A page for people, not an operation of the API: kept out of the OpenAPI document.
    app.addHook("onRoute", (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    app.setErrorHandler(async (error: FastifyError, request, reply) => {
      // A malformed token is as unknown as a forged one.
      const status = error.validation ? 404 : (error.statusCode ?? 500);
      if (status >= 500) request.log.error({ err: error }, "shared report failed");
      const message =
        status === 404
          ? "There is no such report. Check that the whole link was copied."
          : status >= 500
            ? "Something went wrong on our side. Try again in a moment."
            : error.message;
      return renderPage(reply.code(status), "error", VISITOR, { title: `Error ${status}`, message, status, shared: true });
    });

    /** The inspection a token opens, with the scope its photos are looked up in. */
    const open = async (token: string): Promise<{ inspection: InspectionRecord; scope: Scope; expiresAt: number }> => {
      const check = verifyShareToken(s.signingKeys.shareLinks, token, s.clock.now());
      if (!check.ok && check.reason === "expired") {
        throw new LinkRefused(410, "This report link has expired. Ask whoever sent it for a new one.");
      }
      const inspection = check.ok ? await s.inspections.getById(check.inspectionId) : null;
      if (!check.ok || !inspection) throw notFound("report", check.ok ? check.inspectionId : "link");
      return { inspection, scope: { accountId: inspection.accountId, livemode: inspection.livemode }, expiresAt: check.expiresAt };
    };

    app.get("/r/:token", { schema: { params: TokenParams } }, async (request, reply) => {
      const { token } = request.params;
      const { inspection, scope, expiresAt } = await open(token);
      // What is new since the baseline is told in words; the baseline's photos are not the link's to open.
      const baseline = inspection.baselineInspectionId ? await loadBaseline(s, scope, inspection.baselineInspectionId) : null;
      return renderPage(reply, "shared-report", VISITOR, {
        title: "Condition report",
        wide: true,
        token,
        inspection,
        expiresAt,
        report: reportView(await completedReport(s, inspection), (mediaId) => `/r/${token}/media/${mediaId}.jpg`, baseline),
      });
    });

    app.get("/r/:token/report.pdf", { schema: { params: TokenParams } }, async (request, reply) => {
      const { inspection } = await open(request.params.token);
      const pdf = await reportPdf(s, inspection);
      return reply.headers(reportPdfHeaders(inspection.id, pdf)).send(pdf);
    });

    // Only the photos of the inspection shared: a valid link opens no other photo of its account.
    app.get("/r/:token/media/:mediaId.jpg", { schema: { params: MediaParams } }, async (request, reply) => {
      const { inspection, scope } = await open(request.params.token);
      const media = await s.inspections.getMedia(scope, request.params.mediaId);
      return sendPhoto(s, request, reply, request.params.mediaId, media?.inspectionId === inspection.id ? media : null);
    });
  };
