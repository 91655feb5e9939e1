import swaggerUi from "@fastify/swagger-ui";
import type { FastifyPluginAsync } from "fastify";
import sharp from "sharp";

/** Where the rendered API reference is. */
export const DOCS_PREFIX = "/docs";

/**
 * The reference's own rules, in the spirit of the capture page's and the dashboard's: its scripts
 * and styles are Swagger UI's files served from here (no CDN, no inline script), it reads the
 * document and tries requests on this origin only, and no other site may frame it. Swagger UI sets
 * element styles from script, which a policy without 'unsafe-inline' for styles would block.
 */
const DOCS_CSP = {
  "default-src": ["'none'"],
  "script-src": ["'self'"],
  "style-src": ["'self'", "'unsafe-inline'"],
  "img-src": ["'self'", "data:"],
  "font-src": ["'self'", "data:"],
  "connect-src": ["'self'"],
  "base-uri": ["'none'"],
  "form-action": ["'none'"],
  "frame-ancestors": ["'none'"],
};

/** The service's mark: a checked circle in the dashboard's accent, drawn once and served as /favicon.ico. */
const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<circle cx="16" cy="16" r="15" fill="#1d4ed8"/>
<path d="M9 16.5l4.5 4.5L23 11.5" fill="none" stroke="#fff" stroke-width="3.2" stroke-linecap="round" stroke-linejoin="round"/>
</svg>`;

/**
 * A PNG in an ICO container (one 32 x 32 image), which every browser reads at /favicon.ico. Drawn
 * once a process: tests and workloads build the app many times, and the mark never changes.
 */
let favicon: Promise<Buffer> | undefined;
const faviconIco = (): Promise<Buffer> => (favicon ??= drawFaviconIco());

async function drawFaviconIco(): Promise<Buffer> {
  const png = await sharp(Buffer.from(ICON_SVG)).resize(32, 32).png().toBuffer();
  const header = Buffer.alloc(22);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // an icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(32, 6); // width
  header.writeUInt8(32, 7); // height
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(png.length, 14);
  header.writeUInt32LE(22, 18); // where the image starts
  return Buffer.concat([header, png]);
}

/**
 * What a person or a browser asks the service's root for: `/` leads to the dashboard, `/favicon.ico`
 * is the service's mark (browsers ask for it on every page), and `/docs` renders the OpenAPI
 * document (`/v1/openapi.json`, the one the routes' schemas make) with Swagger UI, kept by the
 * Fastify team beside @fastify/swagger, which makes the document.
 */
export const siteRoutes =
  (dashboardPrefix: string): FastifyPluginAsync =>
  async (app) => {
    const icon = await faviconIco();
    app.get("/", { schema: { hide: true } }, async (_request, reply) => reply.redirect(dashboardPrefix, 302));
    app.get("/favicon.ico", { schema: { hide: true } }, async (_request, reply) =>
      reply.type("image/x-icon").header("cache-control", "public, max-age=86400").send(icon),
    );
    await app.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      staticCSP: DOCS_CSP,
      // BaseLayout: without Swagger UI's top bar, a box to explore other documents.
      uiConfig: { layout: "BaseLayout", deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0, tryItOutEnabled: false },
      uiHooks: {
        onRequest: (_request, reply, done) => {
          reply.headers({ "referrer-policy": "same-origin", "x-content-type-options": "nosniff", "x-frame-options": "DENY" });
          done();
        },
      },
      theme: { title: "Vehicle Inspection API reference" },
    });
  };
