import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { STATUSES } from "../../core/domain/state-machine.ts";
import { isApiError } from "../../core/domain/errors.ts";
import { CreateInspectionBody } from "../../core/schemas/inspection.ts";
import { EnvParams, scopeOf } from "./scope.ts";
import { renderPage, signedIn } from "../views/render.ts";

const PAGE_SIZE = 25;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A filter left empty in the form arrives as ""; it means "any". */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema.optional());
const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD");

const ListFilters = z.object({
  status: optional(z.enum(STATUSES)),
  reference: optional(z.string().max(255)),
  // A vehicle's history: a VIN as pasted, with spaces around it or in lower case, finds it.
  vin: optional(z.string().trim().max(17)),
  from: optional(Day),
  to: optional(Day),
  cursor: optional(z.string().max(64)),
});

const NewInspectionForm = z.object({
  reference: z.string().max(1024).default(""),
  vin: z.string().max(1024).default(""),
  notify_url: z.string().max(4096).default(""),
  _csrf: z.string().optional(),
});

/** The inspections list with its filters, and creating and canceling inspections. */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections } = app;
  app.get("/:env/inspections", { schema: { params: EnvParams, querystring: ListFilters } }, async (request, reply) => {
    const scope = scopeOf(request);
    const f = request.query;
    const at = f.cursor ? await inspections.get(scope, f.cursor) : null;
    const rows = await inspections.list(scope, {
      limit: PAGE_SIZE + 1,
      after: at ? { createdAt: at.createdAt, id: at.id } : undefined,
      status: f.status,
      reference: f.reference,
      vin: f.vin?.toUpperCase() || undefined,
      createdFrom: f.from ? Date.parse(`${f.from}T00:00:00Z`) : undefined,
      // "To" a day includes that day.
      createdBefore: f.to ? Date.parse(`${f.to}T00:00:00Z`) + DAY_MS : undefined,
    });
    const items = rows.slice(0, PAGE_SIZE);
    const filters = new URLSearchParams(Object.entries(f).filter(([k, v]) => k !== "cursor" && v) as [string, string][]);
    const next = rows.length > PAGE_SIZE ? `?${new URLSearchParams([...filters, ["cursor", items.at(-1)!.id]])}` : null;
    return renderPage(reply, "inspections", signedIn(request, reply, "inspections"), {
      title: "Inspections",
      items,
      filters: f,
      statuses: STATUSES,
      next,
      first: f.cursor ? `?${filters}` : null,
    });
  });

  app.get("/:env/inspections/new", { schema: { params: EnvParams } }, async (request, reply) =>
    renderPage(reply, "inspection-new", signedIn(request, reply, "inspections"), { title: "New inspection", form: {}, error: null }),
  );

  app.post("/:env/inspections", { schema: { params: EnvParams, body: NewInspectionForm } }, async (request, reply) => {
    const form = request.body;
    const fail = (param: string | null, message: string) =>
      renderPage(reply.code(400), "inspection-new", signedIn(request, reply, "inspections"), {
        title: "New inspection",
        form,
        error: { param, message },
      });
    // The API's own schema and operation: the dashboard accepts exactly what POST /v1/inspections does.
    const body = CreateInspectionBody.safeParse({
      reference: form.reference.trim() || undefined,
      vehicle: { vin: form.vin },
      notify_url: form.notify_url.trim() || undefined,
    });
    if (!body.success) {
      const issue = body.error.issues[0]!;
      const param = issue.path.at(-1) === "vin" ? "vin" : String(issue.path[0]);
      return fail(param, `${param === "vin" ? "VIN" : param.replace("_", " ")}: ${issue.message}`);
    }
    try {
      const made = await inspections.create(scopeOf(request), body.data);
      return reply.redirect(`/dashboard/${request.params.env}/inspections/${made.id}`, 303);
    } catch (error) {
      if (isApiError(error) && error.statusCode < 500) return fail(error.param, error.message);
      throw error;
    }
  });

  app.post("/:env/inspections/:id/cancel", { schema: { params: EnvParams.extend({ id: z.string().max(64) }) } }, async (request, reply) => {
    await inspections.cancel(scopeOf(request), request.params.id);
    return reply.redirect(`/dashboard/${request.params.env}/inspections/${request.params.id}`, 303);
  });
};

export const inspectionRoutes = fp(routes, { name: "dashboard-inspection-routes", dependencies: ["inspections"], encapsulate: true });
