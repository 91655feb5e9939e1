import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { METRIC } from "../../core/runtime/metrics.ts";
import { sample } from "../helpers/prometheus.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/** /metrics of the embedded service, as Prometheus scrapes it: after an inspection taken from creation to its webhooks. */
describe("/metrics", () => {
  let svc: TestService;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    svc = await startService();
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await svc.close();
    await receiver.close();
  });

  it("counts requests by route, inspections by phase, detection and webhook attempts, without an API key", async () => {
    const key = await svc.key("test", "metered");
    const made = await create(svc, key, { notify_url: receiver.url });
    await walkaround(svc, key, made, { confirmVin: false, wait: false });
    await until(
      "created, in_progress, processing and completed delivered",
      () => receiver.received.length,
      (n) => n >= 4,
      60_000,
    );
    await svc.api(key, `/v1/inspections/${made.id}`);
    await svc.api(key, "/v1/inspections/insp_000000000000000000000000");

    // Not on the port clients reach: that one answers it as any unknown route.
    expect((await fetch(`${svc.url}/metrics`)).status).toBe(404);
    const res = await fetch(`${svc.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const start = { workload: "start" };
    // By the route's pattern: one series for every inspection's GET, whatever its id.
    const getOne = { method: "GET", route: "/v1/inspections/:id" };
    expect(sample(text, METRIC.httpRequests, { ...start, ...getOne, status_class: "2xx" })).toBe(1);
    expect(sample(text, METRIC.httpRequests, { ...getOne, status_class: "4xx" })).toBe(1);
    expect(sample(text, `${METRIC.httpRequestSeconds}_count`, { ...getOne, status_class: "2xx" })).toBe(1);
    expect(sample(text, METRIC.httpRequests, { method: "PUT", route: "/capture/v1/:token/photos/:angle", status_class: "2xx" })).toBe(9);
    // A path no route matches is one series, whatever the path.
    expect(sample(text, METRIC.httpRequests, { method: "GET", route: "unmatched", status_class: "4xx" })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(made.id);
    expect(text).not.toContain("/metrics");
    expect(sample(text, METRIC.inspections, { ...start, phase: "completed" })).toBe(1);
    expect(sample(text, METRIC.inspections, { phase: "processing" })).toBe(0);
    // One inspection, one detection: counted once, by the controller.
    expect(sample(text, `${METRIC.detectionSeconds}_count`, { outcome: "completed" })).toBe(1);
    expect(sample(text, METRIC.webhookAttempts, { outcome: "succeeded" })).toBeGreaterThanOrEqual(4);
    expect(sample(text, METRIC.queueDepth, { queue: "controller" })).toBe(0);
    // Its reconciles, each with a result and a time; none threw. No API server here: no request to one.
    const inspection = { controller: "inspection" };
    expect(sample(text, METRIC.reconciles, { ...inspection, result: "success" })).toBeGreaterThanOrEqual(4);
    expect(sample(text, METRIC.reconciles, { ...inspection, result: "error" })).toBeNull();
    expect(sample(text, `${METRIC.reconcileSeconds}_count`, inspection)).toBeGreaterThanOrEqual(4);
    expect(sample(text, METRIC.kubernetesRequests)).toBeNull();
    // The service's own series, every one, carry the one prefix; prom-client's defaults keep theirs.
    const names = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    for (const name of names) expect(name, name).toMatch(/^(vehicle_inspection_|process_|nodejs_)/);
    for (const name of Object.values(METRIC)) expect(names, name).toContain(name);
    expect(sample(text, "process_cpu_seconds_total", start)).toBeGreaterThan(0);
  });
});
