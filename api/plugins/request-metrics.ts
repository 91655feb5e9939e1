import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import type { Metrics } from "../../core/runtime/metrics.ts";

/**
 * Every request counted and timed by method, route and status class, as prom-client's users and
 * fastify-metrics do: the route is the matched pattern (`/v1/inspections/:id`), never the path, so
 * ids make no series; a request no route matched is `unmatched`. Wrapped with fastify-plugin so the
 * hook sees the whole app's requests, not only those of routes registered inside this plugin.
 */
export const requestMetrics = fp(
  async (app: FastifyInstance, { metrics }: { metrics: Metrics }) => {
    // A callback hook: it does nothing asynchronous, and an async hook costs each request a promise.
    app.addHook("onResponse", (request, reply, done) => {
      metrics.httpRequests.record(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  },
  { name: "request-metrics" },
);
