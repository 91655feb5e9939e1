import fp from "fastify-plugin";
import type { EventStore } from "../../core/ports/event-store.ts";
import type { Services } from "../../core/runtime/services.ts";

/** The event log's reads: what the /v1 event routes and the dashboard show. */
export type Events = Pick<EventStore, "list" | "get" | "attempts" | "forInspection">;

declare module "fastify" {
  interface FastifyInstance {
    events: Events;
  }
}

/** The `events` decorator, for the route plugins that declare it as a dependency. */
export const eventsPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("events", {
      list: (scope, limit, cursor) => s.events.list(scope, limit, cursor),
      get: (scope, id) => s.events.get(scope, id),
      attempts: (ids) => s.events.attempts(ids),
      forInspection: (scope, id) => s.events.forInspection(scope, id),
    } satisfies Events);
  },
  { name: "events" },
);
