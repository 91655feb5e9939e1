/** The value of the sample `name` whose labels include every one of `labels`; null when there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.entries(labels).every(([k, v]) => (m[2] ?? "").split(",").includes(`${k}="${v}"`));
    if (has) return Number(m[3]);
  }
  return null;
}
