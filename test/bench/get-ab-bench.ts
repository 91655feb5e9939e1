/**
 * `npm run bench:get-ab -- <base checkout>`: GET /v1/inspections/:id on two services side by side,
 * the base checkout's and this one's, started once and loaded in turn (20 connections, BENCH_SECONDS
 * a run, 4 by default; BENCH_ROUNDS rounds, 8 by default, the order flipped every round), printing
 * each run's server CPU a request (all its threads, from /proc) and the ratio of the medians. Both
 * services share every run's machine load, so a change of a few percent on the request path shows
 * here where `npm run bench`'s requests/s against a bare server swings with the load
 * (docs/benchmarks.md). `git worktree add /tmp/base <sha>` makes the base checkout. A benchmark,
 * not a test: it asserts nothing. Linux only (/proc).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { freePort } from "../helpers/service.ts";
import { median } from "./stats.ts";

const base = process.argv[2];
if (!base) {
  console.error("usage: npm run bench:get-ab -- <base checkout>");
  process.exit(2);
}
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const CLOCK_TICKS = 100;

/** CPU seconds the process has used, all its threads: utime and stime, fields 14 and 15 of /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

type Service = { name: string; child: ChildProcess; url: string; headers: Record<string, string>; cpuUs: number[] };

/**
 * What to undo at the end, added the moment each thing exists: a service that fails to start, or
 * the second failing after the first started, leaves no process running and no data directory.
 */
const cleanups: (() => Promise<void>)[] = [];

/** Stops a service's process, if it still runs, and waits for it to exit. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

async function start(name: string, root: string): Promise<Service> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "vi-get-ab-"));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    RATE_LIMIT_TEST_PER_SECOND: "1000000",
    RATE_LIMIT_LIVE_PER_SECOND: "1000000",
  };
  const headers = { authorization: `Bearer ${await createKey(loadConfig(env), "test", "bench")}` };
  const child = spawn(process.execPath, ["bin/vehicle-inspection.ts", "start"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanups.unshift(() => stop(child)); // stopped before its data directory goes
  await new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes("vehicle inspection service started") && resolve(null));
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the service of ${root} exited (${code}) before it was ready`)));
  });
  const api = `http://127.0.0.1:${port}`;
  const made = await fetch(`${api}/v1/inspections`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ vehicle: { vin: "1HGCM82633A004352" }, reference: "bench" }),
  });
  const { id } = (await made.json()) as { id: string };
  return { name, child, url: `${api}/v1/inspections/${id}`, headers, cpuUs: [] };
}

const services: Service[] = [];
try {
  services.push(await start(`base (${base})`, base), await start("this checkout", join(import.meta.dirname, "../..")));
  // A first short run each, so neither's first measured run pays for its JIT warming up.
  for (const s of services) await autocannon({ url: s.url, headers: s.headers, connections: 20, duration: 2 });
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 ? [...services].reverse() : services) {
      const cpu0 = cpuSeconds(s.child.pid!);
      const r = await autocannon({ url: s.url, headers: s.headers, connections: 20, duration: SECONDS });
      if (r.non2xx) throw new Error(`${s.name}: ${r.non2xx} answers were not 2xx`);
      s.cpuUs.push(((cpuSeconds(s.child.pid!) - cpu0) * 1e6) / r.requests.total);
    }
  }
} finally {
  for (const cleanup of cleanups) await cleanup();
}

console.log(`GET /v1/inspections/:id, server CPU µs a request, ${ROUNDS} runs of ${SECONDS} s each, alternated (Node ${process.version}):`);
for (const s of services) console.log(`  ${s.name}: ${s.cpuUs.map((u) => u.toFixed(1)).join(", ")}; median ${median(s.cpuUs).toFixed(1)}`);
const [b, t] = services.map((s) => median(s.cpuUs)) as [number, number];
console.log(`this checkout / base: ${(t / b).toFixed(3)}`);
