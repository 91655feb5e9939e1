/**
 * `node test/bench/request-metrics-bench.ts`: what the request-metrics plugin (api/plugins/request-metrics.ts,
 * a counter and a histogram observed in onResponse) costs a request. The same Fastify app with and
 * without it, one route answering a fixed body, driven through inject() (no sockets, so the
 * difference is not lost among them), rounds alternated; prints CPU µs a request for each and the
 * difference, then the medians over the rounds (the machine's other work moves single rounds). A
 * benchmark, not a test: it asserts nothing.
 */
import Fastify from "fastify";
import { requestMetrics } from "../../api/plugins/request-metrics.ts";
import { Metrics } from "../../core/runtime/metrics.ts";
import { median } from "./stats.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const BODY = JSON.stringify({ id: "insp_0a1b2c3d4e5f6g7h8i9j0k1l", object: "inspection", status: "created" });

async function app(withMetrics: boolean) {
  const app = Fastify();
  if (withMetrics) await app.register(requestMetrics, { metrics: new Metrics("bench") });
  app.get("/v1/inspections/:id", async (_request, reply) => reply.type("application/json; charset=utf-8").send(BODY));
  await app.ready();
  return app;
}

/** CPU µs a request (user and system, this process) over REQUESTS requests, 16 in flight at a time. */
async function measure(target: Awaited<ReturnType<typeof app>>): Promise<number> {
  const cpu0 = process.cpuUsage();
  for (let sent = 0; sent < REQUESTS; sent += 16) {
    await Promise.all(Array.from({ length: 16 }, (_, i) => target.inject({ url: `/v1/inspections/insp_${sent + i}` })));
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / REQUESTS;
}

const rounds: [number, number][] = [];
for (let round = 1; round <= ROUNDS; round++) {
  // New apps each round, warmed first: inject() leaves memory behind on every request, ours or not.
  const [bare, metered] = [await app(false), await app(true)];
  await Promise.all([measure(bare), measure(metered)]);
  const without = await measure(bare);
  const withIt = await measure(metered);
  rounds.push([without, withIt]);
  console.log(
    `round ${round}: without ${without.toFixed(2)} µs, with request metrics ${withIt.toFixed(2)} µs a request: +${(withIt - without).toFixed(2)} µs (${((withIt / without - 1) * 100).toFixed(0)}%)`,
  );
}
console.log(
  `median of ${ROUNDS}: without ${median(rounds.map(([w]) => w)).toFixed(2)} µs, with ${median(rounds.map(([, m]) => m)).toFixed(2)} µs; the difference's median +${median(rounds.map(([w, m]) => m - w)).toFixed(2)} µs a request`,
);
