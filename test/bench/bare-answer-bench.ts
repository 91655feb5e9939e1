/**
 * `node test/bench/bare-answer-bench.ts`: does the service's answer to GET /v1/inspections/:id cost
 * a server more than bare-server.ts's? That answer is 1,043 bytes (an inspection with its capture
 * plan) with nine headers (request-id and the three RateLimit-* besides Fastify's five), the bare
 * server's 512 with five. Runs bare-server.ts and a bare Fastify server sending a body of the
 * service's size with the service's headers, each under autocannon as npm run bench does (20
 * connections, loopback), alternated, three rounds; prints requests/s and server CPU µs a request.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import Fastify from "fastify";
import { freePort } from "../helpers/service.ts";

const SERVICE_BODY_BYTES = 1043;

if (process.env.SERVE_LIKE_SERVICE) {
  const body = JSON.stringify({ object: "inspection", capture: "x".repeat(SERVICE_BODY_BYTES - 38) });
  const app = Fastify();
  let n = 0;
  app.all("/*", async (_request, reply) =>
    reply
      .headers({
        "request-id": `req_${String(n++).padStart(24, "0")}`,
        "ratelimit-limit": "1000000",
        "ratelimit-remaining": "999999",
        "ratelimit-reset": "1",
      })
      .type("application/json; charset=utf-8")
      .send(body),
  );
  await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
  console.log("ready");
} else {
  const start = (args: string[], port: number, env: Record<string, string> = {}) =>
    new Promise<ChildProcess>((resolve) => {
      const child = spawn(process.execPath, args, {
        env: { ...process.env, PORT: String(port), ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      child.stdout!.on("data", (d) => String(d).includes("ready") && resolve(child));
    });
  /** CPU seconds of a process, from /proc (Linux), in clock ticks of 1/100 s. */
  const cpu = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  };
  const [barePort, likePort] = [await freePort(), await freePort()];
  const servers: [string, ChildProcess, number][] = [
    ["bare-server.ts", await start(["test/bench/bare-server.ts"], barePort), barePort],
    ["bare, with the service's answer", await start([import.meta.filename], likePort, { SERVE_LIKE_SERVICE: "1" }), likePort],
  ];
  for (let round = 1; round <= 3; round++) {
    for (const [name, child, port] of servers) {
      const cpu0 = cpu(child.pid!);
      const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 20, duration: 6 });
      const us = ((cpu(child.pid!) - cpu0) * 1e6) / r.requests.total;
      const bytes = Math.round(r.throughput.total / r.requests.total);
      console.log(
        `round ${round}, ${name}: ${r.requests.average.toFixed(0)} req/s, ${us.toFixed(1)} µs CPU a request, ${bytes} bytes a response`,
      );
    }
  }
  for (const [, child] of servers) child.kill();
}
