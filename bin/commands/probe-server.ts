import fastify from "fastify";
import type { Logger } from "pino";
import type { Config } from "../../core/config.ts";
import type { Metrics } from "../../core/metrics.ts";
import { metricsRoute, probeRoutes } from "../../core/net/probe-routes.ts";

/** What /readyz asks: not ready until told how to tell (the workload's stores are open), then that. */
export class Readiness {
  #check: (() => Promise<void>) | null = null;

  when(check: () => Promise<void>): void {
    this.#check = check;
  }

  async check(): Promise<void> {
    if (!this.#check) throw new Error("starting: waiting for the servers its stores live on");
    await this.#check();
  }
}

/**
 * /metrics, and /healthz and /readyz, on METRICS_PORT: a small server of every workload's own, apart
 * from the port customers and clients reach (`start` and `api` answer their probes there too).
 */
export async function startProbeServer(
  config: Config,
  metrics: Metrics,
  ready: () => Promise<void>,
  log: Logger,
): Promise<{ port: number; close(): Promise<void> }> {
  const app = fastify();
  await app.register(probeRoutes(ready));
  await app.register(metricsRoute(metrics));
  try {
    await app.listen({ port: config.metricsPort, host: config.host });
  } catch (error) {
    // METRICS_PORT unset and its default held by another workload of this machine: any free port, logged.
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || config.metricsPortFixed) throw error;
    log.warn(
      { taken: config.metricsPort },
      "the default metrics port is taken and METRICS_PORT is unset; serving probes and metrics on a free port",
    );
    await app.listen({ port: 0, host: config.host });
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.metricsPort;
  log.info({ metrics_port: port }, "probes and metrics listening");
  return { port, close: () => app.close() };
}
