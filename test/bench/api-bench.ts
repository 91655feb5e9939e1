/**
 * `npm run bench`: the service against baselines, in the same run, on loopback. Prints requests/s,
 * p99 latency and server CPU time a request for GET /v1/inspections/:id and GET
 * /v1/inspections?limit=100 (with 1,000 and with BENCH_BIG stored inspections, a million by
 * default), each beside a bare Fastify server's, and for POST /v1/inspections beside the naive
 * durable peer's (durable-peer.ts). A benchmark, not a test: it asserts nothing.
 *
 * BENCH_ROOT: the checkout whose service is measured (default this one), so a change is compared
 * with its base by the same script: `git worktree add /tmp/bench-base <sha>`, then runs with and
 * without BENCH_ROOT=/tmp/bench-base, interleaved. BENCH_ONLY=get|post|list: those rows alone.
 * BENCH_CPU_PROF=<dir>: the service runs under `--cpu-prof`, its profile written there at exit.
 * BENCH_RUNS, BENCH_SECONDS, BENCH_WARM_SECONDS: runs a row, and their length (below).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { createKey } from "../../bin/commands/keys.ts";
import { openDatabase, transaction } from "../../core/adapters/sqlite/database.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { newId } from "../../core/domain/ids.ts";
import { freePort } from "../helpers/service.ts";
import { median } from "./stats.ts";

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 8);
/**
 * Seconds of load, not measured, before each measured run, for every server alike: a server's first
 * seconds of an endpoint pay for compiling its request path (the service's hooks, routes and store
 * reads are many more functions for V8 to optimize than the bare server's one handler), which a
 * running server paid once, long ago. BENCH_WARM_SECONDS=0 BENCH_RUNS=1 measures as before 2026-11-29, from cold.
 */
const WARM_S = Number(process.env.BENCH_WARM_SECONDS ?? 2);
/**
 * Pairs of runs a row, the order flipped every pair, their medians printed: a single run's ratio
 * swings by a fifth with the machine's other load (docs/benchmarks.md). BENCH_RUNS=1 for one pair.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CONNECTIONS = 20;
const BIG = Number(process.env.BENCH_BIG ?? 1_000_000);
const ONLY = new Set((process.env.BENCH_ONLY ?? "get,post,list").split(","));
const root = join(import.meta.dirname, "../..");
const serviceRoot = process.env.BENCH_ROOT ?? root;
const PROFILE = process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF] : [];

function startChild(args: string[], env: Record<string, string>, ready: string, cwd = root): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes(ready) && resolve(child));
    child.once("exit", (code) => reject(new Error(`${args.at(-1)} exited (${code}) before it was ready`)));
  });
}

/** The kernel's clock ticks a second, the unit of /proc CPU times (100 on common builds, asked rather than assumed). */
const CLOCK_TICKS = existsSync("/proc/self/stat") ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" })) : NaN;

/**
 * CPU seconds the process has used, all its threads, from /proc (Linux; NaN elsewhere). Server CPU a
 * request is steadier than requests/s where the load generator shares the machine's cores.
 */
function cpuSeconds(pid: number): number {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return NaN;
  const stat = readFileSync(file, "utf8");
  // utime and stime are fields 14 and 15, in clock ticks, counted after the command name, which may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Thrown to skip the rest of the runs (BENCH_ONLY). */
class Stop extends Error {}

type Figures = { rps: number; p99: number; non2xx: number; cpuUs: number };
async function load(
  server: ChildProcess,
  url: string,
  opts: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string } = {},
): Promise<Figures> {
  const run = (duration: number) =>
    autocannon({ url, connections: CONNECTIONS, duration, method: opts.method ?? "GET", headers: opts.headers, body: opts.body });
  if (WARM_S > 0) await run(WARM_S);
  const cpu0 = cpuSeconds(server.pid!);
  const r = await run(DURATION_S);
  return {
    rps: r.requests.average,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    cpuUs: ((cpuSeconds(server.pid!) - cpu0) * 1e6) / r.requests.total,
  };
}

/**
 * The service's and its baseline's figures, RUNS runs each, alternated (the service first, then the
 * baseline first, …): the medians of each figure, and each pair's requests/s ratio.
 */
async function paired(service: () => Promise<Figures>, baseline: () => Promise<Figures>): Promise<Row> {
  const s: Figures[] = [];
  const b: Figures[] = [];
  for (let run = 0; run < RUNS; run++) {
    if (run % 2 === 0) {
      s.push(await service());
      b.push(await baseline());
    } else {
      b.push(await baseline());
      s.push(await service());
    }
  }
  const middle = (runs: Figures[]): Figures => ({
    rps: median(runs.map((r) => r.rps)),
    p99: median(runs.map((r) => r.p99)),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    cpuUs: median(runs.map((r) => r.cpuUs)),
  });
  return { service: middle(s), baseline: middle(b), ratios: s.map((r, i) => r.rps / b[i]!.rps) };
}
type Row = { service: Figures; baseline: Figures; ratios: number[] };

/** Inserts inspections straight into the store: a million through the API would take the whole run. */
function seed(dataDir: string, accountId: string, count: number, startAt: number): void {
  const db = openDatabase(dataDir);
  const insert = db.prepare(
    `INSERT INTO inspections (id, account_id, livemode, status, vin, capture_token_hash, expires_at, created_at, updated_at)
     VALUES (?, ?, 0, 'completed', '1HGCM82633A004352', ?, ?, ?, ?)`,
  );
  for (let done = 0; done < count; ) {
    const batch = Math.min(50_000, count - done);
    transaction(db, () => {
      for (let i = 0; i < batch; i++) {
        const t = startAt - (done + i) * 10;
        insert.run(newId("insp"), accountId, newId("key"), t + 86_400_000, t, t);
      }
    });
    done += batch;
  }
  db.close();
}

const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-"));
const [svcPort, barePort, peerPort] = [await freePort(), await freePort(), await freePort()];
const env = {
  DATA_DIR: dataDir,
  PORT: String(svcPort),
  HOST: "127.0.0.1",
  LOG_LEVEL: "info",
  RATE_LIMIT_TEST_PER_SECOND: "1000000",
  RATE_LIMIT_LIVE_PER_SECOND: "1000000",
};
const key = await createKey(loadConfig(env), "test", "bench");
const auth = { authorization: `Bearer ${key}` };

const bare = await startChild(["test/bench/bare-server.ts"], { PORT: String(barePort) }, "ready");
const peerDir = mkdtempSync(join(tmpdir(), "vi-bench-peer-"));
const peer = await startChild(["test/bench/durable-peer.ts"], { PORT: String(peerPort), DATA_DIR: peerDir }, "ready");
const svc = await startChild([...PROFILE, "bin/vehicle-inspection.ts", "start"], env, "vehicle inspection service started", serviceRoot);
const base = `http://127.0.0.1:${svcPort}`;
const createBody = JSON.stringify({ vehicle: { vin: "1HGCM82633A004352" }, reference: "bench" });
const made = (await (
  await fetch(`${base}/v1/inspections`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: createBody })
).json()) as { id: string };
// The list runs use an account of their own, so the POST run's inspections do not count.
const listKey = await createKey(loadConfig(env), "test", "bench-list");
const listAuth = { authorization: `Bearer ${listKey}` };
// One reading connection for the bench's own counts (the service has its own).
const reader = openDatabase(dataDir);
const listAccount = (reader.prepare("SELECT a.id FROM accounts a WHERE a.name = 'bench-list'").get() as { id: string }).id;

/** Each row: the endpoint, the service's figures, the baseline's, and which baseline. */
const rows: [string, Row, string][] = [];
const bareUrl = `http://127.0.0.1:${barePort}/`;
const bareRun = () => load(bare, bareUrl);
try {
  if (ONLY.has("get"))
    rows.push([
      "GET /v1/inspections/:id",
      await paired(() => load(svc, `${base}/v1/inspections/${made.id}`, { headers: auth }), bareRun),
      "bare",
    ]);
  if (ONLY.has("post")) {
    const post = { method: "POST" as const, headers: { "content-type": "application/json" }, body: createBody };
    rows.push([
      "POST /v1/inspections",
      await paired(
        () => load(svc, `${base}/v1/inspections`, { ...post, headers: { ...auth, ...post.headers } }),
        () => load(peer, `http://127.0.0.1:${peerPort}/v1/inspections`, post),
      ),
      "peer",
    ]);
  }
  if (!ONLY.has("list")) throw new Stop();

  const stored = () => (reader.prepare("SELECT count(*) AS n FROM inspections WHERE account_id = ?").get(listAccount) as { n: number }).n;
  const list = () => load(svc, `${base}/v1/inspections?limit=100`, { headers: listAuth });
  seed(dataDir, listAccount, 1000, Date.now() - 1000);
  rows.push([`GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`, await paired(list, bareRun), "bare"]);
  const t0 = Date.now();
  seed(dataDir, listAccount, BIG - 1000, Date.now() - 10_000_000);
  console.error(`seeded ${(BIG - 1000).toLocaleString("en")} inspections in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  rows.push([`GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`, await paired(list, bareRun), "bare"]);
} catch (error) {
  if (!(error instanceof Stop)) throw error;
} finally {
  const exited = new Promise((resolve) => svc.once("exit", resolve));
  svc.kill("SIGTERM");
  bare.kill("SIGTERM");
  peer.kill("SIGTERM");
  reader.close();
  // The profile is written as the service exits.
  await exited;
}

console.log(
  `\n${CONNECTIONS} connections, ${DURATION_S} s a run after ${WARM_S} s unmeasured, ${RUNS} runs a row alternated with its baseline's, each figure their median and each ratio the medians' ratio; loopback, Node ${process.version}, service from ${serviceRoot} (bare: bare-server.ts; peer: durable-peer.ts)\n`,
);
console.log(
  "| endpoint | req/s | p99 ms | server CPU µs a request | baseline | its req/s | its p99 ms | its CPU µs a request | req/s ratio | CPU ratio | each run's req/s ratio |",
);
console.log("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|");
for (const [name, { service: s, baseline: b, ratios }, baseline] of rows) {
  console.log(
    `| ${name} | ${s.rps.toFixed(0)} | ${s.p99} | ${s.cpuUs.toFixed(1)} | ${baseline} | ${b.rps.toFixed(0)} | ${b.p99} | ${b.cpuUs.toFixed(1)} | ${(s.rps / b.rps).toFixed(2)} | ${(b.cpuUs / s.cpuUs).toFixed(2)} | ${ratios.map((r) => r.toFixed(2)).join(", ")} |${s.non2xx ? ` (${s.non2xx} non-2xx!)` : ""}`,
  );
}
const [small, big] = rows.filter(([name]) => name.startsWith("GET /v1/inspections?"));
if (small && big)
  console.log(
    `\nlist p99 with ${BIG.toLocaleString("en")} stored / with 1,000 stored: ${(big[1].service.p99 / small[1].service.p99).toFixed(2)}`,
  );
rmSync(dataDir, { recursive: true, force: true });
rmSync(peerDir, { recursive: true, force: true });
