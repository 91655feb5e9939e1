import { buildApp } from "../../api/app.ts";
import type { Config } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { deleteInspectionModelInputs } from "../../inference/detection/model-input.ts";
import { WorkerPoolRunner } from "../../inference/detection/worker-pool-runner.ts";
import { Controller } from "../../operator/controller.ts";
import { WebhookDispatcher } from "../../operator/webhook-dispatcher.ts";
import { IDEMPOTENCY_RETENTION_MS } from "../../api/plugins/idempotency.ts";
import { embeddedServices } from "../embedded-services.ts";

/** `vehicle-inspection start`: the whole service in one process (embedded mode). */
export async function start(config: Config): Promise<{ close(): Promise<void>; port: number }> {
  const log = createLogger(config.logLevel);
  const s = embeddedServices(config, log);
  const runner = new WorkerPoolRunner({ blobs: config.blobs, threads: config.detectionThreads, models: config.models });
  const controller = new Controller({
    store: s.inspections,
    runner,
    signals: s.signals,
    clock: s.clock,
    log: log.child({ component: "controller" }),
    publicUrl: config.publicUrl,
    pollMs: config.controllerPollMs,
    maxProcessingAttempts: config.processingMaxAttempts,
    shutdownGraceMs: config.shutdownGraceMs,
    settled: async (r) => deleteInspectionModelInputs(s.blobs, r.id, await s.inspections.photos(r.id), s.modelInputSizes),
  });
  const dispatcher = new WebhookDispatcher({
    events: s.events,
    keys: s.keys,
    clock: s.clock,
    log: log.child({ component: "webhooks" }),
    retryScheduleMs: config.webhooks.retryScheduleMs,
    timeoutMs: config.webhooks.timeoutMs,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    pollMs: Math.min(config.controllerPollMs, 250),
  });
  const purge = setInterval(() => {
    s.idempotency.purge(s.clock.now() - IDEMPOTENCY_RETENTION_MS).catch((err) => log.warn({ err }, "purging old idempotency keys failed"));
  }, 60_000).unref();

  const app = await buildApp(s);
  controller.start();
  dispatcher.start();
  const stopNudges = s.signals.onDeliveryDue(() => dispatcher.nudge());
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  log.info({ port, data_dir: config.dataDir, public_url: config.publicUrl }, "vehicle inspection service started");

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info("vehicle inspection service stopping");
      clearInterval(purge);
      await app.close();
      // Waits up to SHUTDOWN_GRACE_MS for detection; closing the runner then drops what has not started.
      await controller.stop();
      await runner.close();
      stopNudges();
      await dispatcher.stop();
      await s.close();
      log.info("vehicle inspection service stopped");
    })());
  return { close, port };
}
