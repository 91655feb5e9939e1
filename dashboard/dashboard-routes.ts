import { existsSync } from "node:fs";
import { join } from "node:path";
import cookie from "@fastify/cookie";
import csrf from "@fastify/csrf-protection";
import formbody from "@fastify/formbody";
import fastifyStatic from "@fastify/static";
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { isApiError } from "../core/domain/errors.ts";
import type { RateLimitStore } from "../core/ports/rate-limit-store.ts";
import { COOKIE_OPTIONS, sessionUser } from "./auth/sessions.ts";
import { inspectionPageRoutes } from "./routes/inspection-page.ts";
import { inspectionRoutes } from "./routes/inspections.ts";
import { keyRoutes } from "./routes/keys.ts";
import { reviewPageRoutes } from "./routes/review-page.ts";
import { reviewBadge, reviewQueueRoutes } from "./routes/review-queue.ts";
import { settingsRoutes } from "./routes/settings.ts";
import { signInRoutes } from "./routes/sign-in.ts";
import { teamRoutes } from "./routes/team.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { renderPage, signedOut } from "./views/render.ts";

export const DASHBOARD_DIST = join(import.meta.dirname, "page/dist");
const CSRF_COOKIE = "__Host-vi_csrf";

/**
 * The same rules as the capture page: nothing runs but the dashboard's own script, nothing loads
 * from elsewhere, forms post only here, and no other site may frame it (clickjacking).
 */
export const DASHBOARD_HEADERS = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; "),
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
} as const;

/**
 * The dashboard at /dashboard, for people: server-rendered pages, forms with CSRF tokens, a session
 * cookie. Registered with the /dashboard prefix; shared report links (/r/) are registered beside it.
 */
/** What the dashboard is registered with: its cookies' signing key, and where its rate limits count. */
type DashboardOptions = { cookieSecret: Buffer; rateLimits: RateLimitStore };

const routes: FastifyPluginAsync<DashboardOptions> = async (app, { cookieSecret, rateLimits }) => {
  if (!existsSync(join(DASHBOARD_DIST, "main.js"))) app.log.warn("the dashboard's script is not built (npm run build:page)");
  await app.register(cookie, { secret: cookieSecret });
  await app.register(formbody, { bodyLimit: 16 * 1024 });
  await app.register(csrf, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { ...COOKIE_OPTIONS, sameSite: "strict", signed: true },
    // Forms post the token as a field; the script's fetches send it as a header.
    getToken: (request) => (request.body as { _csrf?: string } | undefined)?._csrf ?? (request.headers["x-csrf-token"] as string),
  });
  app.addHook("onRequest", async (_request, reply) => {
    reply.headers(DASHBOARD_HEADERS);
  });
  // Every form is checked, the sign-in form too (login CSRF): after the body is parsed, since the
  // token is one of its fields.
  app.addHook("onRoute", (route) => {
    // Pages for people, not operations of the API: kept out of the OpenAPI document.
    route.schema = { ...route.schema, hide: true };
    if (![route.method].flat().includes("POST")) return;
    const existing = route.preHandler === undefined ? [] : [route.preHandler].flat();
    route.preHandler = [app.csrfProtection, ...existing] as typeof route.preHandler;
  });
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    // A path with another environment than test or live, or a malformed id, is no page.
    const status =
      error.validation && error.validationContext === "params" ? 404 : isApiError(error) ? error.statusCode : (error.statusCode ?? 500);
    if (status >= 500) request.log.error({ err: error }, "dashboard request failed");
    const message =
      error.code === "FST_CSRF_INVALID_TOKEN" || error.code === "FST_CSRF_MISSING_SECRET"
        ? "This form has expired or did not come from this dashboard. Go back, reload the page and try again."
        : status === 429
          ? "Too many attempts. Wait a minute and try again."
          : status === 413
            ? "What was sent is too large: a logo may be at most 200 KB. Go back and choose a smaller file."
            : status >= 500
              ? "Something went wrong on our side. Try again in a moment."
              : status === 404
                ? "There is no such page."
                : error.message;
    return errorPage(request, reply.code(status), message);
  });
  app.setNotFoundHandler((request, reply) => errorPage(request, reply.code(404), "There is no such page."));

  await app.register(fastifyStatic, {
    root: DASHBOARD_DIST,
    prefix: "/assets/",
    decorateReply: false,
    index: false,
    cacheControl: false,
    setHeaders: (res) => {
      res.header("cache-control", "public, max-age=300");
    },
  });

  await app.register(signInRoutes, { rateLimits });
  await app.register(async (pages) => {
    // Everything below needs a signed-in user; a page asked for without one leads to the sign-in.
    pages.addHook("onRequest", async (request, reply) => {
      const user = await sessionUser(app, request);
      if (user) {
        request.user = user;
        return;
      }
      const next = request.method === "GET" ? `?next=${encodeURIComponent(request.url)}` : "";
      return reply.redirect(`/dashboard/sign-in${next}`, 303);
    });
    pages.addHook("preHandler", reviewBadge(app));
    pages.get("/", async (_request, reply) => reply.redirect("/dashboard/test/inspections", 303));
    await pages.register(inspectionRoutes);
    await pages.register(inspectionPageRoutes);
    await pages.register(reviewQueueRoutes);
    await pages.register(reviewPageRoutes);
    await pages.register(keyRoutes);
    await pages.register(webhookRoutes);
    await pages.register(teamRoutes);
    await pages.register(settingsRoutes);
  });
};

/**
 * Encapsulated (its error pages, cookies and CSRF stay under /dashboard), after the decorators its
 * pages read: the app's operations (api/plugins/) and the accounts' (dashboard/plugins/accounts.ts).
 */
export const dashboardRoutes = fp(routes, {
  name: "dashboard-routes",
  dependencies: ["inspections", "events", "webhooks", "media", "accounts", "config"],
  encapsulate: true,
});

function errorPage(request: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  const user = request.user ?? null;
  return renderPage(
    reply,
    "error",
    { ...signedOut(reply), user },
    { title: `Error ${reply.statusCode}`, message, status: reply.statusCode },
  );
}
