import type { FastifyInstance } from "fastify";
import type { Metrics } from "../metrics.ts";
import type { Services } from "../services.ts";

/** Ready while the store answers: what the workloads that own it ask at /readyz. */
export async function storeAnswers(s: Pick<Services, "inspections">): Promise<void> {
  await s.inspections.getById("insp_readiness_probe");
}

/**
 * What every workload answers its supervisor on: `/healthz` (alive while the process answers) and
 * `/readyz` (ready while `ready()` resolves: the workload can do its work).
 */
export function probeRoutes(ready: () => Promise<void>) {
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
  };
}

/**
 * `/metrics` (Prometheus text), without an API key: served on METRICS_PORT only, never on the port
 * the API, the capture page and the dashboard share, so the chart decides who may reach it (its
 * Service and Ingress expose PORT; the metrics port is for the cluster's Prometheus).
 */
export function metricsRoute(metrics: Metrics) {
  return async (app: FastifyInstance) => {
    app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
      const { body, contentType } = await metrics.scrape();
      return reply.type(contentType).send(body);
    });
  };
}
