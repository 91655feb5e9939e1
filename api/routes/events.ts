import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { ApiError, notFound } from "../../core/domain/errors.ts";
import { commonErrorResponses } from "../../core/schemas/common.ts";
import { Event, EventList, EventListQuery } from "../../core/schemas/event.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import { eventView } from "../../core/views/event-view.ts";
import type {} from "../plugins/events.ts";

/** The event log, read through the `events` decorator (api/plugins/events.ts). */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { events } = app;
  app.get(
    "/v1/events",
    {
      schema: {
        operationId: "listEvents",
        summary: "List events, newest first, with their delivery attempts",
        querystring: EventListQuery,
        response: { 200: EventList, ...commonErrorResponses },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const rows = await events.list(request.scope, limit + 1, cursor);
      if (!rows)
        throw new ApiError("parameter_invalid", "cursor must be the next_cursor of a previous page of this list.", { param: "cursor" });
      const page = rows.slice(0, limit);
      const attempts = await events.attempts(page.map((e) => e.id));
      const hasMore = rows.length > limit;
      return {
        object: "list" as const,
        data: page.map((e) => eventView(e, attempts.get(e.id)!)),
        has_more: hasMore,
        next_cursor: hasMore ? page.at(-1)!.id : null,
      };
    },
  );

  app.get(
    "/v1/events/:id",
    {
      schema: {
        operationId: "retrieveEvent",
        summary: "Retrieve an event and its delivery attempts",
        params: IdParams,
        response: { 200: Event, ...commonErrorResponses },
      },
    },
    async (request) => {
      const event = await events.get(request.scope, request.params.id);
      if (!event) throw notFound("event", request.params.id);
      return eventView(event, (await events.attempts([event.id])).get(event.id)!);
    },
  );
};

export const eventRoutes = fp(routes, { name: "event-routes", dependencies: ["events"], encapsulate: true });
