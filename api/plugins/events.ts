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
    // The store's own object: the routes read the log through it and nothing else (the type says which).
    app.decorate("events", s.events satisfies Events);
  },
  { name: "events" },
);
