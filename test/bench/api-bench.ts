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

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 8);
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
  const cpu0 = cpuSeconds(server.pid!);
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    method: opts.method ?? "GET",
    headers: opts.headers,
    body: opts.body,
  });
  return {
    rps: r.requests.average,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    cpuUs: ((cpuSeconds(server.pid!) - cpu0) * 1e6) / r.requests.total,
  };
}

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
const rows: [string, Figures, Figures, string][] = [];
const bareUrl = `http://127.0.0.1:${barePort}/`;
try {
  if (ONLY.has("get"))
    rows.push([
      "GET /v1/inspections/:id",
      await load(svc, `${base}/v1/inspections/${made.id}`, { headers: auth }),
      await load(bare, bareUrl),
      "bare",
    ]);
  if (ONLY.has("post"))
    rows.push([
      "POST /v1/inspections",
      await load(svc, `${base}/v1/inspections`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: createBody,
      }),
      await load(peer, `http://127.0.0.1:${peerPort}/v1/inspections`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: createBody,
      }),
      "peer",
    ]);
  if (!ONLY.has("list")) throw new Stop();

  const stored = () => (reader.prepare("SELECT count(*) AS n FROM inspections WHERE account_id = ?").get(listAccount) as { n: number }).n;
  seed(dataDir, listAccount, 1000, Date.now() - 1000);
  rows.push([
    `GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`,
    await load(svc, `${base}/v1/inspections?limit=100`, { headers: listAuth }),
    await load(bare, bareUrl),
    "bare",
  ]);
  const t0 = Date.now();
  seed(dataDir, listAccount, BIG - 1000, Date.now() - 10_000_000);
  console.error(`seeded ${(BIG - 1000).toLocaleString("en")} inspections in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  rows.push([
    `GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`,
    await load(svc, `${base}/v1/inspections?limit=100`, { headers: listAuth }),
    await load(bare, bareUrl),
    "bare",
  ]);
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
  `\n${CONNECTIONS} connections, ${DURATION_S} s a run, loopback, Node ${process.version}, service from ${serviceRoot}; each service run is paired with its baseline's run right after it (bare: bare-server.ts; peer: durable-peer.ts)\n`,
);
console.log(
  "| endpoint | req/s | p99 ms | server CPU µs a request | baseline | its req/s | its p99 ms | its CPU µs a request | req/s ratio | CPU ratio |",
);
console.log("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|");
for (const [name, s, b, baseline] of rows) {
  console.log(
    `| ${name} | ${s.rps.toFixed(0)} | ${s.p99} | ${s.cpuUs.toFixed(1)} | ${baseline} | ${b.rps.toFixed(0)} | ${b.p99} | ${b.cpuUs.toFixed(1)} | ${(s.rps / b.rps).toFixed(2)} | ${(b.cpuUs / s.cpuUs).toFixed(2)} |${s.non2xx ? ` (${s.non2xx} non-2xx!)` : ""}`,
  );
}
const [small, big] = rows.filter(([name]) => name.startsWith("GET /v1/inspections?"));
if (small && big)
  console.log(`\nlist p99 with ${BIG.toLocaleString("en")} stored / with 1,000 stored: ${(big[1].p99 / small[1].p99).toFixed(2)}`);
rmSync(dataDir, { recursive: true, force: true });
rmSync(peerDir, { recursive: true, force: true });
