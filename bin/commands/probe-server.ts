import fastify from "fastify";
import type { Logger } from "pino";
import type { Config } from "../../core/config.ts";
import type { Metrics } from "../../core/metrics.ts";
import { probeRoutes } from "../../core/net/probe-routes.ts";

/**
 * The workloads without an HTTP edge (`operator`, `inference`) answer their probes and /metrics on
 * METRICS_PORT: a small server of their own, beside nothing else.
 */
export async function startProbeServer(
  config: Config,
  metrics: Metrics,
  ready: () => Promise<void>,
  log: Logger,
): Promise<{ port: number; close(): Promise<void> }> {
  const app = fastify();
  await app.register(probeRoutes(metrics, ready));
  await app.listen({ port: config.metricsPort, host: config.host });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.metricsPort;
  log.info({ metrics_port: port }, "probes and metrics listening");
  return { port, close: () => app.close() };
}
