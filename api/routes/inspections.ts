import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { CaptureLinks } from "../../core/capture-links.ts";
import { eventTypeFor, isCancelable, isCaptureOpen, isTerminal } from "../../core/domain/state-machine.ts";
import { ApiError, notFound } from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import { ErrorBody, commonErrorResponses } from "../../core/schemas/common.ts";
import { CreateInspectionBody, IdParams, Inspection, InspectionList, InspectionListQuery } from "../../core/schemas/inspection.ts";
import { Report } from "../../core/schemas/report.ts";
import type { Services } from "../../core/services.ts";
import { eventPayload, inspectionView } from "../../core/views/inspection-view.ts";
import { checkNotifyUrl } from "./notify-url.ts";

/** How long a cancel waits for the controller's verdict before answering 503 (the intent stays recorded). */
const CANCEL_WAIT_MS = 5_000;

export const inspectionRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
    const view = (r: InspectionRecord): Inspection =>
      inspectionView(r, s.config.publicUrl, isCaptureOpen(r.status) ? s.captureLinks.url(r.id) : null);
    // A read by id hands out the same record until it changes (the store's read cache), so the
    // body shown for it is kept with it, encoded by the response schema once; lists and creates get
    // new records each time and skip this.
    const bodies = new WeakMap<InspectionRecord, string>();
    const bodyOfFound = (r: InspectionRecord): string => {
      let body = bodies.get(r);
      if (body === undefined) {
        body = JSON.stringify(z.encode(Inspection, view(r)));
        bodies.set(r, body);
      }
      return body;
    };
    // A string sent with a JSON content type is taken as already serialized: no encoding again.
    const sendSerialized = (reply: FastifyReply, json: string): FastifyReply => reply.type("application/json; charset=utf-8").send(json);
    const find = (scope: Scope, id: string): InspectionRecord => {
      const found = s.inspections.get(scope, id);
      if (!found) throw notFound("inspection", id);
      return found;
    };

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
      },
      async (request, reply) => {
        const { scope } = request;
        const body = request.body;
        if (body.notify_url) await checkNotifyUrl(body.notify_url, scope.livemode, s.config.webhooks.allowPrivateTargets);
        const vehicle = await s.vin.decode(body.vehicle.vin);
        const now = s.clock.now();
        const id = newId("insp");
        const record: InspectionRecord = {
          id,
          accountId: scope.accountId,
          livemode: scope.livemode,
          status: "created",
          reference: body.reference ?? null,
          vin: body.vehicle.vin,
          ...vehicle,
          notifyUrl: body.notify_url ?? null,
          expiresAt: now + s.config.inspectionTtlMs,
          createdAt: now,
          updatedAt: now,
          submittedAt: null,
          completedAt: null,
          canceledAt: null,
          summary: null,
          failure: null,
          openedAt: null,
          submitRequestedAt: null,
          cancelRequestedAt: null,
          vinObserved: null,
          processingAttempts: 0,
          processingDueAt: null,
          reconcileGeneration: 0,
        };
        await s.inspections.create(record, CaptureLinks.hash(s.captureLinks.token(id)), (r) => {
          const eventId = newId("evt");
          return { id: eventId, type: eventTypeFor(r.status), data: eventPayload(eventId, eventTypeFor(r.status), r, s.config.publicUrl) };
        });
        return reply.code(201).header("location", `/v1/inspections/${id}`).send(view(record));
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
      async (request, reply) => sendSerialized(reply, bodyOfFound(find(request.scope, request.params.id))),
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
      },
      async (request) => {
        const { limit, cursor, status, reference, vin } = request.query;
        let after: { createdAt: number; id: string } | undefined;
        if (cursor !== undefined) {
          const at = s.inspections.get(request.scope, cursor);
          if (!at)
            throw new ApiError("parameter_invalid", "cursor must be the next_cursor of a previous page of this list.", { param: "cursor" });
          after = { createdAt: at.createdAt, id: at.id };
        }
        const rows = s.inspections.list(request.scope, { limit: limit + 1, after, status, reference, vin });
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
          response: { 200: Inspection, 409: ErrorBody, 422: ErrorBody, 503: ErrorBody, ...commonErrorResponses },
        },
      },
      async (request) => {
        const current = find(request.scope, request.params.id);
        if (current.status === "canceled") return view(current);
        if (!isCancelable(current.status)) throw notCancelable(current);
        // The controller owns status: record the intent, then report its verdict.
        s.inspections.recordCancelRequested(current.id, s.clock.now());
        s.signals.nudgeController();
        const after = await s.signals.waitFor(
          current.id,
          () => find(request.scope, current.id),
          (r) => isTerminal(r.status),
          CANCEL_WAIT_MS,
        );
        if (after.status === "canceled") return view(after);
        if (isTerminal(after.status)) throw notCancelable(after);
        throw new ApiError(
          "service_unavailable",
          "The cancellation is recorded but not yet confirmed; retry the request to see its outcome.",
        );
      },
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
        const inspection = find(request.scope, request.params.id);
        // Canceled, expired and failed are terminal without a report: waiting would never help.
        if (isTerminal(inspection.status) && inspection.status !== "completed") {
          throw new ApiError("report_unavailable", `The inspection is ${inspection.status}, so it will never have a report.`);
        }
        const report = inspection.status === "completed" ? s.inspections.getReport(inspection.id) : null;
        if (!report)
          throw new ApiError(
            "report_not_ready",
            `The report is not ready: the inspection is ${inspection.status}; it is ready once the inspection is completed.`,
          );
        // Stored as the serialized report; sending the string skips a parse and re-serialization.
        return sendSerialized(reply, report);
      },
    );
  };

const notCancelable = (r: InspectionRecord) =>
  new ApiError("inspection_not_cancelable", `The inspection is ${r.status} and can no longer be canceled.`);
