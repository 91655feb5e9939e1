/**
 * `npm run chart-docs`: writes the chart's README (its values table) with helm-docs, built from the Go
 * module proxy as the tests' servers are (test/helpers/go-servers.ts). test/unit/chart.test.ts fails
 * when the README is not what this writes.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { buildGoServers, goBinary } from "../test/helpers/go-servers.ts";

export const CHART_DIR = join(import.meta.dirname, "vehicle-inspection");

/** The README helm-docs makes of the chart as it is now (`write`: also written to the chart). */
export function chartReadme(write = false): string {
  return execFileSync(goBinary("helm-docs"), ["--chart-search-root", ".", ...(write ? [] : ["--dry-run"]), "--log-level", "warning"], {
    cwd: CHART_DIR,
    encoding: "utf8",
  });
}

if (process.argv[1] === import.meta.filename) {
  await buildGoServers((line) => console.log(line));
  chartReadme(true);
  console.log(`wrote ${join(CHART_DIR, "README.md")}`);
}
