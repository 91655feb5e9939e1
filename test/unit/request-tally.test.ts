import { Counter, Histogram, Registry, type RegistryContentType } from "prom-client";
import { describe, expect, it } from "vitest";
import { RequestTally } from "../../core/runtime/request-tally.ts";

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ["method", "route", "status_class"] as const;

/**
 * Requests of several routes, methods and classes; durations on bounds, between them and past the
 * last. Not sorted: a route's 4xx before its 2xx, and another route between a route's two methods,
 * as prom-client lists series in the order their first request came.
 */
const REQUESTS: [string, string, number, number][] = [
  ["GET", "/v1/inspections/:id", 404, 0.0011],
  ["POST", "/v1/inspections", 422, 0.0007],
  ["GET", "/v1/inspections/:id", 200, 0.0004],
  ["GET", "unmatched", 404, 0.00001],
  ["GET", "/v1/inspections", 200, 0.002],
  ["GET", "/v1/inspections/:id", 200, 0.001],
  ["GET", "/v1/inspections/:id", 304, 0.003],
  ["POST", "/v1/inspections", 201, 0.0251],
  ["POST", "/v1/inspections", 201, 2.5],
  ["PUT", "/capture/v1/:token/photos/:angle", 200, 0.4],
  ["PUT", "/capture/v1/:token/photos/:angle", 500, 12],
  ["GET", "/v1/inspections/:id", 200, 0.00999],
];

/**
 * A tally's counter and histogram in one registry and prom-client's own in another, each as the
 * service's (a default label), OpenMetrics where asked; `record` feeds both the same request.
 */
function pair(contentType: RegistryContentType = Registry.PROMETHEUS_CONTENT_TYPE) {
  const tally = new RequestTally(BOUNDS);
  const ours = new Registry<RegistryContentType>();
  const theirs = new Registry<RegistryContentType>();
  for (const registry of [ours, theirs]) {
    registry.setContentType(contentType);
    registry.setDefaultLabels({ workload: "test" });
  }
  tally.counter({ name: "requests_total", help: "Requests.", registers: [ours] });
  tally.histogram({ name: "request_seconds", help: "Seconds.", registers: [ours] });
  const counter = new Counter({ name: "requests_total", help: "Requests.", labelNames: LABELS, registers: [theirs] });
  const histogram = new Histogram({ name: "request_seconds", help: "Seconds.", labelNames: LABELS, buckets: BOUNDS, registers: [theirs] });
  return {
    ours,
    theirs,
    record([method, route, code, seconds]: (typeof REQUESTS)[number]) {
      tally.record(method, route, code, seconds);
      const labels = { method, route, status_class: `${Math.floor(code / 100)}xx` };
      counter.inc(labels);
      histogram.observe(labels, seconds);
    },
    async compare() {
      expect(await ours.metrics()).toBe(await theirs.metrics());
      expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    },
  };
}

describe("RequestTally", () => {
  it("scrapes as prom-client's own Counter and Histogram would, fed the same requests one by one", async () => {
    const { ours, record, compare } = pair();
    await compare(); // nothing yet: both empty
    for (const [round, request] of [...REQUESTS, ...REQUESTS].entries()) {
      record(request);
      // Scraped in between too: a scrape must neither lose nor count twice what came before it.
      if (round === REQUESTS.length - 1) await compare();
    }
    await compare();
    const text = await ours.metrics();
    expect(text).toContain(
      'request_seconds_bucket{le="0.001",workload="test",method="GET",route="/v1/inspections/:id",status_class="2xx"} 4',
    );
    expect(text).toContain('requests_total{method="POST",route="/v1/inspections",status_class="2xx",workload="test"} 4');
  });

  it("scrapes as OpenMetrics as prom-client's own do: the counter's name without _total, its samples with it", async () => {
    const { ours, record, compare } = pair(Registry.OPENMETRICS_CONTENT_TYPE);
    for (const request of REQUESTS) record(request);
    await compare();
    await compare(); // the registry renames a counter at its first OpenMetrics scrape
    const text = await ours.metrics();
    expect(text).toContain("# TYPE requests counter");
    expect(text).toContain('requests_total{method="GET",route="unmatched",status_class="4xx",workload="test"} 1');
  });

  it("is emptied by the registry's resetMetrics, as prom-client's own are, and counts again after", async () => {
    const { ours, theirs, record, compare } = pair();
    for (const request of REQUESTS) record(request);
    await compare();
    for (const registry of [ours, theirs]) registry.resetMetrics();
    await compare();
    expect(await ours.metrics()).not.toContain("requests_total{");
    for (const request of REQUESTS.slice(0, 3)) record(request);
    await compare();
  });
});
