import type { FastifyReply } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ApiError } from "../../core/domain/errors.ts";
import { whenReady } from "../../core/ports/awaitable.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";
import { ErrorBody, commonErrorResponses } from "../../core/schemas/common.ts";
import { CreateInspectionBody, IdParams, Inspection, InspectionList, InspectionListQuery } from "../../core/schemas/inspection.ts";
import { Report } from "../../core/schemas/report.ts";
import { ReviewBody } from "../../core/schemas/review.ts";
import { compileJson, fastSuccessSerializer } from "../plugins/fast-serializer.ts";
import type {} from "../plugins/inspections.ts";

const inspectionJson = compileJson(Inspection);

/** The inspections of /v1: what each route does is the `inspections` decorator's (api/plugins/inspections.ts). */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections } = app;
  const view = (r: InspectionRecord): Inspection => inspections.view(r);
  // A read by id hands out the same record until it changes (the store's read cache), so the
  // body shown for it is kept with it, serialized once; lists and creates get new records each
  // time and skip this.
  const bodies = new WeakMap<InspectionRecord, string>();
  const bodyOfFound = (r: InspectionRecord): string => {
    let body = bodies.get(r);
    if (body === undefined) {
      body = inspectionJson(view(r));
      bodies.set(r, body);
    }
    return body;
  };
  // A string sent with a JSON content type is taken as already serialized: no encoding again.
  const sendSerialized = (reply: FastifyReply, json: string): FastifyReply => reply.type("application/json; charset=utf-8").send(json);

  app.post(
    "/v1/inspections",
    {
      schema: {
        operationId: "createInspection",
        summary: "Create an inspection and its capture link",
        headers: z.object({ "idempotency-key": z.string().optional() }),
        body: CreateInspectionBody,
        response: { 201: Inspection, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody, ...commonErrorResponses },
      },
      serializerCompiler: fastSuccessSerializer,
      config: {
        // A create whose key reads in flight but whose inspection exists (derived from the key) took effect.
        idempotentEffect: async (request) => {
          // After validation (the key is claimed in a preHandler): the body is the route's.
          const body = request.body as CreateInspectionBody;
          const made = await inspections.createdUnder(request.scope, body, request.headers["idempotency-key"] as string);
          if (!made) return null;
          return {
            statusCode: 201,
            body: inspectionJson(view(made)),
            headers: { location: `/v1/inspections/${made.id}` },
          };
        },
      },
    },
    async (request, reply) => {
      const record = await inspections.create(request.scope, request.body, request.idempotency?.key);
      return reply.code(201).header("location", `/v1/inspections/${record.id}`).send(view(record));
    },
  );

  app.get(
    "/v1/inspections/:id",
    {
      schema: {
        operationId: "retrieveInspection",
        summary: "Retrieve an inspection",
        params: IdParams,
        response: { 200: Inspection, ...commonErrorResponses },
      },
    },
    // Not an async function: answered at once where the store answers at once (core/ports/awaitable.ts).
    (request, reply) => whenReady(inspections.find(request.scope, request.params.id), (r) => void sendSerialized(reply, bodyOfFound(r))),
  );

  app.get(
    "/v1/inspections",
    {
      schema: {
        operationId: "listInspections",
        summary: "List inspections, most recent first",
        querystring: InspectionListQuery,
        response: { 200: InspectionList, ...commonErrorResponses },
      },
      serializerCompiler: fastSuccessSerializer,
    },
    async (request) => {
      const { limit, cursor, status, reference, vin } = request.query;
      let after: { createdAt: number; id: string } | undefined;
      if (cursor !== undefined) {
        const at = await inspections.get(request.scope, cursor);
        if (!at)
          throw new ApiError("parameter_invalid", "cursor must be the next_cursor of a previous page of this list.", { param: "cursor" });
        after = { createdAt: at.createdAt, id: at.id };
      }
      const rows = await inspections.list(request.scope, { limit: limit + 1, after, status, reference, vin });
      const page = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      return { object: "list" as const, data: page.map(view), has_more: hasMore, next_cursor: hasMore ? page.at(-1)!.id : null };
    },
  );

  app.post(
    "/v1/inspections/:id/cancel",
    {
      schema: {
        operationId: "cancelInspection",
        summary: "Cancel an inspection before completion",
        params: IdParams,
        body: z.strictObject({}).nullish(),
        response: { 200: Inspection, 409: ErrorBody, 413: ErrorBody, 422: ErrorBody, 503: ErrorBody, ...commonErrorResponses },
      },
      serializerCompiler: fastSuccessSerializer,
    },
    async (request) => view(await inspections.cancel(request.scope, request.params.id)),
  );

  app.post(
    "/v1/inspections/:id/review",
    {
      schema: {
        operationId: "reviewInspection",
        summary: "Review a completed inspection's report: confirm, reject or change its findings, add your own",
        description:
          "Completes the review of a completed inspection. Each decision confirms, rejects or changes (type, part, severity) one of the report's findings; each added finding is a box on one of its photos. The grade is recomputed from the findings not rejected; rejected findings stay listed. A later review replaces this one; every review is sent as an inspection.reviewed event.",
        headers: z.object({ "idempotency-key": z.string().optional() }),
        params: IdParams,
        body: ReviewBody,
        response: { 200: Report, 409: ErrorBody, 413: ErrorBody, 422: ErrorBody, ...commonErrorResponses },
      },
    },
    async (request) => inspections.review(request.scope, request.params.id, request.body, request.apiKeyId),
  );

  app.get(
    "/v1/inspections/:id/report",
    {
      schema: {
        operationId: "retrieveReport",
        summary: "Retrieve the report of a completed inspection",
        params: IdParams,
        response: { 200: Report, 409: ErrorBody, ...commonErrorResponses },
      },
    },
    async (request, reply) => {
      const report = await inspections.report(await inspections.find(request.scope, request.params.id));
      // Stored as the serialized report; sending the string skips a parse and re-serialization.
      return sendSerialized(reply, report);
    },
  );
};

/** After the `inspections` decorator it declares. */
export const inspectionRoutes = fp(routes, { name: "inspection-routes", dependencies: ["inspections"], encapsulate: true });
