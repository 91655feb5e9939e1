import { Counter, Histogram, Registry } from "prom-client";
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

/** A registry as the service's: a default label, the counter and the histogram under their names. */
function registryWith(add: (registers: Registry[]) => void): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ workload: "test" });
  add([registry]);
  return registry;
}

describe("RequestTally", () => {
  it("scrapes as prom-client's own Counter and Histogram would, fed the same requests one by one", async () => {
    const tally = new RequestTally(BOUNDS);
    const ours = registryWith((registers) => {
      tally.counter({ name: "requests_total", help: "Requests.", registers });
      tally.histogram({ name: "request_seconds", help: "Seconds.", registers });
    });
    const counter = new Counter({ name: "requests_total", help: "Requests.", labelNames: LABELS, registers: [] });
    const histogram = new Histogram({ name: "request_seconds", help: "Seconds.", labelNames: LABELS, buckets: BOUNDS, registers: [] });
    const theirs = registryWith((registers) => {
      for (const r of registers) {
        r.registerMetric(counter);
        r.registerMetric(histogram);
      }
    });

    const compare = async () => {
      expect(await ours.metrics()).toBe(await theirs.metrics());
      expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    };
    await compare(); // nothing yet: both empty
    for (const [round, [method, route, code, seconds]] of [...REQUESTS, ...REQUESTS].entries()) {
      tally.record(method, route, code, seconds);
      const labels = { method, route, status_class: `${Math.floor(code / 100)}xx` };
      counter.inc(labels);
      histogram.observe(labels, seconds);
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
});
