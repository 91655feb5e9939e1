/**
 * `npm run bench`: the service against a bare Fastify server, in the same run, on loopback.
 * Prints requests/s, p99 latency and server CPU time a request for GET /v1/inspections/:id,
 * POST /v1/inspections and GET /v1/inspections?limit=100 (with 1,000 and with 1,000,000 stored
 * inspections), each beside the bare server's. A benchmark, not a test: it asserts nothing.
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
const root = join(import.meta.dirname, "../..");

function startChild(args: string[], env: Record<string, string>, ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve) => child.stdout!.on("data", (d) => String(d).includes(ready) && resolve(child)));
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
const [svcPort, barePort] = [await freePort(), await freePort()];
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
const svc = await startChild(["bin/vehicle-inspection.ts", "start"], env, "vehicle inspection service started");
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

const rows: [string, Figures, Figures][] = [];
const bareUrl = `http://127.0.0.1:${barePort}/`;
try {
  rows.push([
    "GET /v1/inspections/:id",
    await load(svc, `${base}/v1/inspections/${made.id}`, { headers: auth }),
    await load(bare, bareUrl),
  ]);
  rows.push([
    "POST /v1/inspections",
    await load(svc, `${base}/v1/inspections`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: createBody,
    }),
    await load(bare, bareUrl, { method: "POST", headers: { "content-type": "application/json" }, body: createBody }),
  ]);

  const stored = () => (reader.prepare("SELECT count(*) AS n FROM inspections WHERE account_id = ?").get(listAccount) as { n: number }).n;
  seed(dataDir, listAccount, 1000, Date.now() - 1000);
  rows.push([
    `GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`,
    await load(svc, `${base}/v1/inspections?limit=100`, { headers: listAuth }),
    await load(bare, bareUrl),
  ]);
  const t0 = Date.now();
  seed(dataDir, listAccount, BIG - 1000, Date.now() - 10_000_000);
  console.error(`seeded ${(BIG - 1000).toLocaleString("en")} inspections in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  rows.push([
    `GET /v1/inspections?limit=100 (${stored().toLocaleString("en")} stored)`,
    await load(svc, `${base}/v1/inspections?limit=100`, { headers: listAuth }),
    await load(bare, bareUrl),
  ]);
} finally {
  svc.kill("SIGTERM");
  bare.kill("SIGTERM");
  reader.close();
}

console.log(
  `\n${CONNECTIONS} connections, ${DURATION_S} s a run, loopback, Node ${process.version}; each service run is paired with a bare Fastify run right after it\n`,
);
console.log(
  "| endpoint | req/s | p99 ms | server CPU µs a request | bare req/s | bare p99 ms | bare CPU µs a request | req/s ratio to bare |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const [name, s, b] of rows) {
  console.log(
    `| ${name} | ${s.rps.toFixed(0)} | ${s.p99} | ${s.cpuUs.toFixed(1)} | ${b.rps.toFixed(0)} | ${b.p99} | ${b.cpuUs.toFixed(1)} | ${(s.rps / b.rps).toFixed(2)} |${s.non2xx ? ` (${s.non2xx} non-2xx!)` : ""}`,
  );
}
const [, , small, big] = rows;
if (small && big)
  console.log(`\nlist p99 with ${BIG.toLocaleString("en")} stored / with 1,000 stored: ${(big[1].p99 / small[1].p99).toFixed(2)}`);
rmSync(dataDir, { recursive: true, force: true });
