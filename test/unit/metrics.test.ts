import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { METRIC, METRIC_PREFIX, Metrics } from "../../core/runtime/metrics.ts";
import { statusClass } from "../../core/runtime/request-tally.ts";

const DOCS = join(import.meta.dirname, "../../docs/cluster-and-kubernetes.md");

describe("the service's metrics", () => {
  it("registers every name of METRIC, each with the one prefix, and nothing else of its own", () => {
    const registered = new Metrics("test").registry.getMetricsAsArray().map((m) => m.name);
    const own = registered.filter((name) => !/^(process|nodejs)_/.test(name));
    expect(own.sort()).toEqual(Object.values(METRIC).sort());
    for (const name of own) expect(name).toMatch(new RegExp(`^${METRIC_PREFIX}[a-z_]+$`));
  });

  it("is documented: the metrics table of docs/cluster-and-kubernetes.md names exactly these", () => {
    const rows = [...readFileSync(DOCS, "utf8").matchAll(/^\| `(vehicle_inspection_[a-z_]+)[{`]/gm)].map((m) => m[1]!);
    expect(rows.sort()).toEqual(Object.values(METRIC).sort());
  });

  it("labels requests with a status class: a handful of series a route, whatever codes it answers", () => {
    expect([200, 201, 204, 302, 400, 404, 429, 500, 503].map(statusClass)).toEqual([
      "2xx",
      "2xx",
      "2xx",
      "3xx",
      "4xx",
      "4xx",
      "4xx",
      "5xx",
      "5xx",
    ]);
  });
});
