import fastify from "fastify";
import type { Logger } from "pino";
import type { Config } from "../../core/runtime/config.ts";
import type { Metrics } from "../../core/runtime/metrics.ts";
import { type CheckResult, metricsRoute, probeRoutes, type ReadyCheck, runChecks } from "../../api/routes/probe-routes.ts";

/** What /readyz asks: a failing `startup` while the workload starts, then its named checks (`when`). */
export class Readiness {
  #checks: ReadyCheck[] | null = null;

  when(checks: ReadyCheck[]): void {
    this.#checks = checks;
  }

  async check(): Promise<CheckResult[]> {
    if (this.#checks) return runChecks(this.#checks);
    return [{ name: "startup", ok: false, reason: "starting: waiting for the servers its stores live on (NATS, the API server)" }];
  }
}

/**
 * /metrics, and /healthz and /readyz, on METRICS_PORT: a small server of every workload's own, apart
 * from the port customers and clients reach (`start` and `api` answer their probes there too).
 */
export async function startProbeServer(
  config: Config,
  metrics: Metrics,
  ready: () => Promise<CheckResult[]>,
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
