import type { Config } from "../../core/runtime/config.ts";
import { NatsBus } from "../../core/adapters/nats/nats-bus.ts";
import { publishIntents } from "../../core/operations/intents-over-bus.ts";
import { createLogger } from "../../core/runtime/logger.ts";
import { serviceChecks } from "../../api/routes/probe-routes.ts";
import { closeOnce } from "./close-once.ts";
import { startHttp, servicesBehindProbes } from "./workloads.ts";

/** `vehicle-inspection api`: the /v1 and capture routes and the dashboard, alone; run as many as needed. */
export async function api(config: Config): Promise<{ close(): Promise<void>; port: number }> {
  const log = createLogger(config.logLevel).child({ workload: "api" });
  // Probes first: while its stores' servers are not up yet, the workload is alive and not ready.
  const { s, probes, readiness } = await servicesBehindProbes(config, log, "api");
  // Intents recorded here wake the operator's controller over the bus (cluster mode), unless its
  // watch of the store sees them already (the Inspection resources: every writer's changes).
  const watched = s.inspections.watchReach === "cluster" && config.controllerResyncMs !== null;
  const bus = s.nats && !watched ? await NatsBus.open(s.nats, { log: log.child({ component: "bus" }) }) : null;
  const stopIntents = bus ? publishIntents(s.signals, bus, log) : () => {};
  // A request waiting for the controller's move (awaitController) is woken when the watch brings it,
  // not at its next re-read.
  const stopMoves = watched ? s.inspections.watch((id) => s.signals.changed(id)) : () => {};
  const http = await startHttp(s, config, log);
  readiness.when(serviceChecks(s));
  log.info({ port: http.port, metrics_port: probes.port, nats: config.natsUrl !== null, blobs: config.blobs.kind }, "api workload started");
  return {
    port: http.port,
    close: closeOnce(async () => {
      await http.close();
      await probes.close();
      stopIntents();
      stopMoves();
      await bus?.close();
      await s.close();
      log.info("api workload stopped");
    }),
  };
}
