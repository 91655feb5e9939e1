import type { FastifyInstance } from "fastify";
import type { Metrics } from "../metrics.ts";

/**
 * What every workload answers its supervisor on: `/healthz` (alive while the process answers),
 * `/readyz` (ready while `ready()` resolves: the workload can do its work) and `/metrics`
 * (Prometheus text). Not under /v1 and without an API key: the chart decides who may reach them.
 */
export function probeRoutes(metrics: Metrics, ready: () => Promise<void>) {
  return async (app: FastifyInstance) => {
    app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
    app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
      try {
        await ready();
        return { status: "ready" };
      } catch {
        return reply.code(503).send({ status: "unavailable" });
      }
    });
    app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
      const { body, contentType } = await metrics.scrape();
      return reply.type(contentType).send(body);
    });
  };
}
