import { createHash } from "node:crypto";
import type { FastifyError, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import Negotiator from "negotiator";
import { z } from "zod";
import { logoPath } from "../../core/domain/branding.ts";
import { notFound } from "../../core/domain/errors.ts";
import { chooseLocale, LOCALES, type Locale } from "../../core/domain/locales.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { reportWords } from "../../core/views/report-words.ts";
import { reportPdfHeaders } from "../../api/pdf/report-pdf.ts";
import { DASHBOARD_HEADERS } from "../dashboard-routes.ts";
import { type PageContext, renderPage } from "../views/render.ts";
import { reportView } from "../views/report-view.ts";

const TokenParams = z.object({ token: z.string().max(512) });
const MediaParams = TokenParams.extend({ mediaId: z.string().max(64) });
/**
 * The reader's choice of language (the page's language links); one without a catalogue is passed
 * over, as a browser's would be, and so is one that is no language tag at all (too long, repeated):
 * the report is there to be read, not refused.
 */
const LanguageQuery = z.object({ lang: z.string().max(35).optional().catch(undefined) });

/**
 * The language a shared report is read in, as a product's hosted pages choose one: the reader's own
 * choice (?lang=, which the page's language links set) first; then the inspection's capture.locale,
 * which the integrator chose for this customer (as a merchant's locale for its customer wins over
 * the browser on Stripe's hosted pages); then the browser's Accept-Language; then English.
 */
function readerLocale(
  request: FastifyRequest,
  asked: string | undefined,
  inspection: { capture: { locale: string | null } } | null,
): Locale {
  return chooseLocale([asked, inspection?.capture.locale, ...new Negotiator(request).languages([...LOCALES])]);
}

/** Each language by its own name ("Deutsch", "polski"), for the page's language links. */
const LANGUAGES = LOCALES.map((locale) => ({ locale, name: new Intl.DisplayNames([locale], { type: "language" }).of(locale)! }));

/**
 * The dashboard's rules, except that no page here may send its address on: the token in it is the
 * credential, and a click on a link must not hand it to another site. Nor should a search engine
 * keep a link someone posted.
 */
const SHARED_HEADERS = { ...DASHBOARD_HEADERS, "referrer-policy": "no-referrer", "x-robots-tag": "noindex, nofollow" } as const;

/** Whoever holds a link: nobody signed in, and no forms to protect. */
const VISITOR: PageContext = { user: null, env: null, section: null, csrf: "" };

const styleHash = (css: string) => `sha256-${createHash("sha256").update(css).digest("base64")}`;

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
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections, media, accounts, shareLinks } = app;
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
    // No inspection to take a language from: the reader's choice, else the browser's.
    const { lang } = request.query as { lang?: unknown };
    const w = reportWords(readerLocale(request, typeof lang === "string" ? lang : undefined, null));
    const message =
      status === 404
        ? w.t("error.no_such_report")
        : status === 410
          ? w.t("error.expired")
          : status >= 500
            ? w.t("error.ours")
            : error.message;
    const heading = status === 404 ? w.t("error.not_found") : status === 410 ? w.t("error.gone") : w.t("error.wrong");
    return renderPage(reply.code(status), "error", VISITOR, {
      title: heading,
      heading,
      message,
      status,
      shared: true,
      words: w,
      site: w.t("report.site"),
    });
  });

  /** The inspection a token opens, with the scope its photos are looked up in. */
  const open = async (token: string): Promise<{ inspection: InspectionRecord; scope: Scope; expiresAt: number }> => {
    const check = shareLinks.verify(token);
    if (!check.ok && check.reason === "expired") {
      throw new LinkRefused(410, "This report link has expired.");
    }
    const inspection = check.ok ? await inspections.byId(check.inspectionId) : null;
    if (!check.ok || !inspection) throw notFound("report", check.ok ? check.inspectionId : "link");
    return { inspection, scope: { accountId: inspection.accountId, livemode: inspection.livemode }, expiresAt: check.expiresAt };
  };

  app.get("/r/:token", { schema: { params: TokenParams, querystring: LanguageQuery } }, async (request, reply) => {
    const { token } = request.params;
    const { inspection, scope, expiresAt } = await open(token);
    const w = reportWords(readerLocale(request, request.query.lang, inspection));
    // What is new since the baseline is told in words; the baseline's photos are not the link's to open.
    const [baseline, branding, json] = await Promise.all([
      inspection.baselineInspectionId ? inspections.baseline(scope, inspection.baselineInspectionId) : null,
      accounts.branding(inspection.accountId),
      inspections.report(inspection),
    ]);
    // The account's accent colour in the page's own stylesheet, allowed by its hash: the CSP's
    // style-src takes no inline style otherwise. Only a #rrggbb goes in, whatever a store holds.
    const accentStyle =
      branding.accentColor && /^#[0-9a-f]{6}$/i.test(branding.accentColor) ? `:root{--accent:${branding.accentColor}}` : null;
    if (accentStyle)
      reply.header(
        "content-security-policy",
        DASHBOARD_HEADERS["content-security-policy"].replace("style-src 'self'", `style-src 'self' '${styleHash(accentStyle)}'`),
      );
    // The page varies with the reader's languages (?lang= aside), so no shared cache may hand one reader's to another.
    reply.header("vary", "accept-language");
    return renderPage(reply, "shared-report", VISITOR, {
      title: w.t("report.title"),
      site: branding.displayName ?? w.t("report.site"),
      wide: true,
      token,
      inspection,
      expiresAt,
      words: w,
      languages: LANGUAGES,
      accentStyle,
      brand: {
        name: branding.displayName,
        // Served from the capture page's path on this origin (img-src 'self'), at its stored size's half: a 480×120 logo shows at most 240×60.
        logo: branding.logo && {
          src: logoPath(branding.logo.id),
          width: Math.round(branding.logo.width / 2),
          height: Math.round(branding.logo.height / 2),
        },
      },
      report: reportView(json, (mediaId) => `/r/${token}/media/${mediaId}.jpg`, baseline, w),
    });
  });

  app.get("/r/:token/report.pdf", { schema: { params: TokenParams, querystring: LanguageQuery } }, async (request, reply) => {
    const { inspection } = await open(request.params.token);
    const pdf = await inspections.pdf(inspection, { locale: readerLocale(request, request.query.lang, inspection) });
    reply.header("vary", "accept-language");
    return reply.headers(reportPdfHeaders(inspection.id, pdf)).send(pdf);
  });

  // Only the photos of the inspection shared: a valid link opens no other photo of its account.
  app.get("/r/:token/media/:mediaId.jpg", { schema: { params: MediaParams } }, async (request, reply) => {
    const { inspection, scope } = await open(request.params.token);
    const photo = await media.get(scope, request.params.mediaId);
    return media.send(request, reply, request.params.mediaId, photo?.inspectionId === inspection.id ? photo : null);
  });
};

export const sharedReportRoutes = fp(routes, {
  name: "shared-report-routes",
  dependencies: ["inspections", "media", "accounts"],
  encapsulate: true,
});
