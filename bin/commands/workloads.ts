import type { Logger } from "pino";
import { buildApp, DASHBOARD_PREFIX } from "../../api/app.ts";
import { DOCS_PREFIX } from "../../api/routes/site-routes.ts";
import { IDEMPOTENCY_RETENTION_MS } from "../../api/plugins/idempotency.ts";
import type { Config } from "../../core/runtime/config.ts";
import type { Bus } from "../../core/ports/bus.ts";
import type { DetectionRunner } from "../../core/ports/detection-runner.ts";
import type { Services } from "../../core/runtime/services.ts";
import { BusWebhookDispatcher } from "../../operator/bus-webhook-dispatcher.ts";
import { consumeIntents } from "../../core/operations/intents-over-bus.ts";
import { Controller } from "../../operator/controller.ts";
import { startInspectionUpkeep } from "../../operator/inspection-upkeep.ts";
import { type WorkloadServices, workloadServices } from "../cluster-services.ts";
import { Metrics } from "../../core/runtime/metrics.ts";
import { Readiness, startProbeServer } from "./probe-server.ts";
import { type DispatcherOptions, WebhookDispatcher } from "../../operator/webhook-dispatcher.ts";

/**
 * The parts a process runs, each started alone so that `start` (all of them, embedded), `api` and
 * `operator` compose the same code. Each answers a close() that stops what it started, not the services.
 */

/**
 * A workload's probes, then its services: while the servers its stores need (NATS, the API server)
 * are away it is alive and not ready, as Kubernetes expects; `readiness.when` names its checks once
 * it is up. The probes are closed again if the services cannot be opened.
 */
export async function servicesBehindProbes(config: Config, log: Logger, workload: string) {
  const metrics = new Metrics(workload);
  const readiness = new Readiness();
  const probes = await startProbeServer(config, metrics, () => readiness.check(), log);
  const s = await workloadServices(config, log, workload, metrics).catch(async (error) => {
    await probes.close();
    throw error;
  });
  return { s, probes, readiness, metrics };
}

/** The HTTP edge: the /v1 API, the capture API and page, the dashboard. */
export async function startHttp(s: Services, config: Config, log: Logger): Promise<{ port: number; close(): Promise<void> }> {
  const app = await buildApp(s);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const at = config.publicUrl;
  // What a newcomer looks for first, as a line to read: where each part is.
  log.info(
    {
      port,
      public_url: at,
      api: `${at}/v1`,
      docs: `${at}${DOCS_PREFIX}`,
      dashboard: `${at}${DASHBOARD_PREFIX}`,
      capture: `${at}/c/<token>`,
    },
    `HTTP listening: API ${at}/v1 (reference ${at}${DOCS_PREFIX}), dashboard ${at}${DASHBOARD_PREFIX}, capture pages ${at}/c/<token> (each inspection's capture_url)`,
  );
  return { port, close: () => app.close() };
}

/**
 * The controller (the only writer of status), webhook delivery, and the purge of old idempotency
 * keys. Webhooks are delivered from the outbox by polling it, or, given a bus (cluster mode), relayed
 * from the outbox to the bus and delivered by its consumer group.
 */
export async function startOperator(
  s: Services & Pick<WorkloadServices, "inspectionRecords">,
  config: Config,
  log: Logger,
  runner: DetectionRunner,
  bus: Bus | null = null,
): Promise<{ close(): Promise<void> }> {
  const controller = new Controller({
    store: s.inspections,
    blobs: s.blobs,
    runner,
    signals: s.signals,
    clock: s.clock,
    log: log.child({ component: "controller" }),
    publicUrl: config.publicUrl,
    pollMs: config.controllerPollMs,
    ...(config.controllerResyncMs === null ? {} : { resyncMs: config.controllerResyncMs }),
    maxProcessingAttempts: config.processingMaxAttempts,
    processingRetryScheduleMs: config.processingRetryScheduleMs,
    shutdownGraceMs: config.shutdownGraceMs,
    settled: async (r) => s.modelInputs.delete(r.id, await s.inspections.photos(r.id)),
    metrics: s.metrics,
    reviewPolicyOf: async (r) => r.reviewPolicy ?? (await s.keys.reviewPolicy(r.accountId, r.livemode)),
    recorder: await eventRecorder(config, log, s.inspectionRecords),
  });
  // The controller's process reports the phases: it is the one writer of them.
  s.metrics.countInspections(() => s.inspections.countByStatus());
  const webhooks: DispatcherOptions = {
    events: s.events,
    keys: s.keys,
    clock: s.clock,
    log: log.child({ component: "webhooks" }),
    retryScheduleMs: config.webhooks.retryScheduleMs,
    timeoutMs: config.webhooks.timeoutMs,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    pollMs: Math.min(config.controllerPollMs, 250),
    metrics: s.metrics,
  };
  const dispatcher = bus ? await BusWebhookDispatcher.open(bus, webhooks) : new WebhookDispatcher(webhooks);
  // A KV bucket's TTL already drops old keys; SQLite needs the sweep.
  const purge = config.natsUrl
    ? undefined
    : setInterval(() => {
        s.idempotency
          .purge(s.clock.now() - IDEMPOTENCY_RETENTION_MS)
          .catch((err) => log.warn({ err }, "purging old idempotency keys failed"));
      }, 60_000).unref();
  controller.start();
  dispatcher.start();
  const intents = bus ? await consumeIntents(bus, s.signals) : null;
  const stopNudges = s.signals.onDeliveryDue(() => dispatcher.nudge());
  return {
    async close() {
      clearInterval(purge);
      await intents?.close();
      // Waits up to SHUTDOWN_GRACE_MS for detection; closing the runner then drops what has not started.
      await controller.stop();
      await runner.close();
      stopNudges();
      await dispatcher.stop();
    },
  };
}

/**
 * Where there are Inspection resources (INSPECTION_STORE=kubernetes), Kubernetes Events about them;
 * loaded only then, as kube-config.ts says why. Each names its Inspection's uid as the store's cache
 * holds it, which `kubectl describe` finds Events by.
 */
async function eventRecorder(config: Config, log: Logger, records: WorkloadServices["inspectionRecords"]) {
  if (!records) return undefined;
  const [{ EventsV1Api }, { KubernetesEventRecorder }, { kubeConfig }] = await Promise.all([
    import("@kubernetes/client-node"),
    import("../../core/adapters/kubernetes/kubernetes-event-recorder.ts"),
    import("./kube-config.ts"),
  ]);
  return new KubernetesEventRecorder(
    kubeConfig().makeApiClient(EventsV1Api),
    config.namespace,
    log.child({ component: "events" }),
    (id) => records.byId(id)?.inspection?.metadata,
  );
}

/** How often the Inspection resources are looked over (new ones to show, finished ones to prune). */
const UPKEEP_EVERY_MS = 2_000;

/** Where the Inspection resources are the store, their upkeep (operator/inspection-upkeep.ts); else nothing. */
export function startUpkeep(
  s: Pick<WorkloadServices, "inspectionRecords" | "clock">,
  config: Config,
  log: Logger,
): { stop(): Promise<void> } | null {
  if (!s.inspectionRecords) return null;
  return startInspectionUpkeep({
    records: s.inspectionRecords,
    retentionMs: config.resourceRetentionMs,
    everyMs: UPKEEP_EVERY_MS,
    clock: s.clock,
    log: log.child({ component: "inspection-upkeep" }),
  });
}
