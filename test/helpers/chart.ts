import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubeTools } from "./kube-control-plane.ts";

export const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");

/** The chart's objects as `helm template r` renders them with each `--set`. */
export function renderChart(...set: string[]): any[] {
  const out = execFileSync(kubeTools().helm, ["template", "r", CHART, ...set.flatMap((s) => ["--set", s])], { encoding: "utf8" });
  return parseAllDocuments(out)
    .map((d) => d.toJS())
    .filter(Boolean);
}

/** Cluster mode with its alerts all rendered: the leader's, the detection Jobs', and those of every mode. */
export const RULE_VALUES = [
  "publicUrl=https://inspect.example.com",
  "mode=cluster",
  "nats.url=nats://nats:4222",
  "s3.bucket=vi-photos",
  "detection.jobs.enabled=true",
  "metrics.prometheusRule.enabled=true",
];

/** Each alert of the chart's PrometheusRule with the metric names its expression selects (every selector has braces). */
export function prometheusRuleMetrics(...set: string[]): { alert: string; expr: string; metrics: string[] }[] {
  const rule = renderChart(...RULE_VALUES, ...set).find((d) => d.kind === "PrometheusRule");
  return (rule.spec.groups as { rules: { alert: string; expr: string }[] }[]).flatMap((g) =>
    g.rules.map(({ alert, expr }) => ({ alert, expr, metrics: [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map((m) => m[1]!) })),
  );
}
