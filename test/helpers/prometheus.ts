import { METRIC, type Metrics } from "../../core/runtime/metrics.ts";

/** Each sample `name` in Prometheus text: its labels as written (`key="value"`) and its value. */
function* samplesOf(text: string, name: string): Generator<{ labels: string[]; value: number }> {
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] === name) yield { labels: (m[2] ?? "").split(","), value: Number(m[3]) };
  }
}

const hasAll = (labels: string[], wanted: Record<string, string>) =>
  Object.entries(wanted).every(([k, v]) => labels.includes(`${k}="${v}"`));

/** The value of the sample `name` whose labels include every one of `labels`; null when there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const s of samplesOf(text, name)) if (hasAll(s.labels, labels)) return s.value;
  return null;
}

/** The sum of the samples `name` whose labels include every one of `labels` (0 when there is none). */
export function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samplesOf(text, name)) if (hasAll(s.labels, labels)) sum += s.value;
  return sum;
}

/** The process's tally of its requests to the Kubernetes API server, `VERB code` to count, as a scrape of `metrics` shows it. */
export async function kubernetesRequestsCounted(metrics: Metrics): Promise<Map<string, number>> {
  const counted = new Map<string, number>();
  for (const { labels, value } of samplesOf((await metrics.scrape()).body, METRIC.kubernetesRequests)) {
    const label = (key: string) => labels.find((l) => l.startsWith(`${key}="`))?.slice(key.length + 2, -1);
    counted.set(`${label("verb")} ${label("code")}`, value);
  }
  return counted;
}

/** What the tally `after` counted that `before` had not, `VERB code` to count. */
export function countedSince(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const added: Record<string, number> = {};
  for (const [key, count] of after) if (count !== (before.get(key) ?? 0)) added[key] = count - (before.get(key) ?? 0);
  return added;
}
