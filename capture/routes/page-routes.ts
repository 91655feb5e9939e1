import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsync } from "fastify";
import fp from "fastify-plugin";
import type {} from "../plugins/captures.ts";

const PAGE_DIR = join(import.meta.dirname, "../page");
export const PAGE_DIST = join(PAGE_DIR, "dist");

/**
 * The token is a secret in the URL: no referrer leaves the page, no inline script can run, nothing
 * loads from elsewhere. The OCR worker is a same-origin script; WebAssembly compiles inside it.
 */
export const PAGE_HEADERS = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "media-src 'self' blob: mediastream:",
    "connect-src 'self'",
    "worker-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "permissions-policy": "camera=(self), microphone=(), geolocation=()",
  "cache-control": "no-store",
} as const;

/** The hosted capture page at capture_url, and its assets; what a link shows is the `captures` decorator's. */
const routes: FastifyPluginAsync = async (app) => {
  const { captures } = app;
  if (!existsSync(join(PAGE_DIST, "main.js"))) {
    app.log.warn("the capture page is not built (npm run build:page): capture links will show an error page");
  }
  const template = readFileSync(join(PAGE_DIR, "index.html"), "utf8");

  app.get("/c/:token", { schema: { hide: true } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    // The server decides which page this is; the script only renders it.
    const { state, locale } = await captures.page(token);
    reply.headers(PAGE_HEADERS).type("text/html; charset=utf-8");
    // The locale asked for at creation (canonical BCP 47: letters, digits and hyphens), so the page
    // loads its catalogue while the session loads, and shows even an ended link in that language.
    return template.replace("{{state}}", state).replace("{{locale}}", locale ?? "");
  });

  // The account's logo (core/domain/branding.ts), for the capture page's header and the dashboard's
  // settings. Its name is random and changes with the logo, so it is kept for as long as wanted.
  app.get("/capture/logos/:file", { schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const id = file.endsWith(".png") ? file.slice(0, -4) : "";
    const png = await captures.logo(id);
    if (!png) return reply.code(404).type("text/plain; charset=utf-8").send("No such logo.");
    return reply
      .headers({
        "content-security-policy": "default-src 'none'; sandbox",
        "x-content-type-options": "nosniff",
        "cache-control": "public, max-age=31536000, immutable",
      })
      .type("image/png")
      .send(png);
  });

  await app.register(fastifyStatic, {
    root: PAGE_DIST,
    prefix: "/capture/assets/",
    decorateReply: false,
    index: false,
    cacheControl: false,
    setHeaders: (res) => {
      res.header("cache-control", "public, max-age=300");
      res.header("x-content-type-options", "nosniff");
    },
  });
};

/** Encapsulated (its static assets stay here), after the `captures` decorator it declares. */
export const pageRoutes = fp(routes, { name: "capture-page-routes", dependencies: ["captures"], encapsulate: true });
