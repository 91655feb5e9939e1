import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { type Branding, checkAccentColor, checkDisplayName, DISPLAY_NAME_MAX, logoPath } from "../../core/domain/branding.ts";
import { randomLowercase } from "../../core/domain/ids.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { LOGO_LIMITS, logoImage } from "./logo-image.ts";
import { EnvParams, scopeOf } from "./scope.ts";

/**
 * The whole form as sent, the logo included: above this the request is refused (413) unread. A
 * logo between LOGO_LIMITS.maxBytes and this is read and refused on the form, saying its size.
 */
const FORM_LIMIT = 4 * 1024 * 1024;

/** A file field as the form sent it; absent where none was chosen. */
type Upload = { name: string; type: string; bytes: Buffer };
type Fields = Record<string, string | Upload>;
type FieldError = { field: "display_name" | "accent_color" | "logo"; message: string };

const SettingsQuery = z.object({ saved: z.literal("1").optional() });
const text = (v: string | Upload | undefined) => (typeof v === "string" ? v : "");
const upload = (v: string | Upload | undefined) => (v && typeof v !== "string" && v.bytes.length > 0 ? v : null);

/** A multipart/form-data body (a form with a file) as fields, read with the platform's own parser (undici's FormData). */
async function multipartFields(body: Buffer, contentType: string): Promise<Fields> {
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), { headers: { "content-type": contentType } }).formData();
  } catch {
    throw Object.assign(new Error("The form could not be read. Reload the page and try again."), { statusCode: 400 });
  }
  const fields: Fields = {};
  for (const [name, value] of form) {
    fields[name] =
      typeof value === "string" ? value : { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  return fields;
}

/** The logo's size on the page: its stored size fitted in the capture page's 160 × 40 header box, never enlarged. */
export function logoShownAt(logo: { width: number; height: number }): { width: number; height: number } {
  const scale = Math.min(1, 160 / logo.width, 40 / logo.height);
  return { width: Math.max(1, Math.round(logo.width * scale)), height: Math.max(1, Math.round(logo.height * scale)) };
}

/**
 * The account's settings: its branding, which every capture page of the account shows (issue 33,
 * item 3). A plain form (multipart, for the logo) with the dashboard's CSRF token; a mistake answers
 * 400 with the page again, what was typed kept and each problem named beside its field, nothing saved.
 */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { accounts, clock } = app;
  app.addContentTypeParser(
    "multipart/form-data",
    { parseAs: "buffer", bodyLimit: FORM_LIMIT },
    async (request: FastifyRequest, body: Buffer) => multipartFields(body, request.headers["content-type"] ?? ""),
  );

  const page = async (
    request: FastifyRequest,
    reply: FastifyReply,
    o: { saved: boolean; errors: FieldError[]; typed?: { displayName: string; accentColor: string } },
  ) => {
    const branding = await accounts.branding(scopeOf(request).accountId);
    const errorOf = Object.fromEntries(o.errors.map((e) => [e.field, e.message]));
    return renderPage(reply, "settings", signedIn(request, reply, "settings"), {
      title: "Settings",
      saved: o.saved,
      errors: o.errors,
      errorOf,
      displayName: o.typed?.displayName ?? branding.displayName ?? "",
      accentColor: o.typed?.accentColor ?? branding.accentColor ?? "",
      logo: branding.logo && { src: logoPath(branding.logo.id), ...logoShownAt(branding.logo) },
      displayNameMax: DISPLAY_NAME_MAX,
      logoMaxKb: LOGO_LIMITS.maxBytes / 1024,
    });
  };

  app.get("/:env/settings", { schema: { params: EnvParams, querystring: SettingsQuery } }, async (request, reply) =>
    page(request, reply, { saved: request.query.saved === "1", errors: [] }),
  );

  app.post("/:env/settings/branding", { bodyLimit: FORM_LIMIT, schema: { params: EnvParams } }, async (request, reply) => {
    const fields = (request.body ?? {}) as Fields;
    const { accountId } = scopeOf(request);
    const typed = { displayName: text(fields.display_name), accentColor: text(fields.accent_color) };
    const errors: FieldError[] = [];
    const name = checkDisplayName(typed.displayName);
    if (!name.ok) errors.push({ field: "display_name", message: name.error });
    const color = checkAccentColor(typed.accentColor);
    if (!color.ok) errors.push({ field: "accent_color", message: color.error });
    const file = upload(fields.logo);
    const made = file ? await logoImage(file.bytes) : null;
    if (made && !made.ok) errors.push({ field: "logo", message: made.error });
    if (!name.ok || !color.ok || (made && !made.ok)) return page(request, reply.code(400), { saved: false, errors, typed });

    const before = await accounts.branding(accountId);
    let logo = text(fields.remove_logo) === "1" ? null : before.logo;
    if (made?.ok) {
      const id = `logo_${randomLowercase(24)}`;
      // The blob first, then the record that names it: a crash between leaves an unnamed blob, never a broken image.
      await accounts.putLogo(id, made.png);
      logo = { id, width: made.width, height: made.height, bytes: made.png.length };
    }
    const branding: Branding = { displayName: name.value, accentColor: color.value, logo, updatedAt: clock.now() };
    await accounts.setBranding(accountId, branding);
    if (before.logo && before.logo.id !== logo?.id) {
      // A page loaded before the change may still ask for it for a moment; a 404 there shows no logo.
      await accounts.deleteLogo(before.logo.id).catch((error) => request.log.warn({ err: error }, "an old logo was left"));
    }
    return reply.redirect(`/dashboard/${request.params.env}/settings?saved=1`, 303);
  });
};

export const settingsRoutes = fp(routes, { name: "dashboard-settings-routes", dependencies: ["accounts", "config"], encapsulate: true });
