import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type NatsServer, startNatsServer, startVersityGw, type VersityGw } from "../helpers/go-servers.ts";
import { freePort } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until } from "../helpers/webhook-receiver.ts";

type Readyz = { status: number; body: { status: string; checks?: Record<string, string> } };

/**
 * Issue 30: a workload's /readyz says which of its dependencies does not answer, by name, as
 * controller-runtime's named checks do: `s3` (the blob store) and `nats` (the bus and the KV
 * stores), besides `store`. Started while S3 is down, a workload keeps running, not ready, and is
 * ready once S3 answers; NATS lost after it started makes it not ready until NATS is back.
 */
describe("cluster workloads' readiness names S3 and NATS", () => {
  const processes: ServiceProcess[] = [];
  let nats: NatsServer | undefined;
  let s3: VersityGw | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "vi-readiness-"));
  afterAll(async () => {
    for (const p of processes) p.kill();
    await Promise.all([nats?.close(), s3?.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("start while S3 is down, answer 503 naming s3 until it is up, then 503 naming nats while NATS is away", async () => {
    [nats, s3] = await Promise.all([startNatsServer(), startVersityGw()]);
    await s3.stop();
    const env = {
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      NATS_URL: nats.url,
      METRICS_PORT: "0",
      ...s3.clientEnv,
      LOG_LEVEL: "info",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
      JUDGE_MODEL: "none",
    };
    const workloads = ["api", "operator", "inference"] as const;
    const ports: number[] = [];
    for (const workload of workloads) {
      const p = new ServiceProcess({ ...env, PORT: String(await freePort()) }, workload);
      processes.push(p);
      ports.push((await p.line((l) => l.msg === "probes and metrics listening")).metrics_port as number);
      await p.line((l) => l.msg === `${workload} workload started`, 60_000);
    }
    const readyz = async (port: number, query = ""): Promise<Readyz> => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz${query}`);
      return { status: r.status, body: await r.json() };
    };
    // S3 down: started, running, not ready, and /readyz says why by name.
    for (const [i, port] of ports.entries()) {
      const r = await readyz(port);
      expect(r.status, workloads[i]).toBe(503);
      expect(r.body.checks?.s3, workloads[i]).toMatch(/^failed: /);
      expect(r.body.checks?.nats, workloads[i]).toBe("ok");
    }
    // Still running a while later: none exits for want of S3.
    const exited = processes.map(() => false);
    for (const [i, p] of processes.entries()) void p.exited.then(() => (exited[i] = true));
    await new Promise((r) => setTimeout(r, 2_000));
    expect(exited).toEqual([false, false, false]);

    await s3.start();
    const s3UpAt = Date.now();
    for (const port of ports)
      await until(
        `${port} ready`,
        () => readyz(port),
        (r) => r.status === 200,
        15_000,
      );
    console.log(`readiness: every workload ready ${Date.now() - s3UpAt} ms after S3 answered`);
    expect((await readyz(ports[0]!)).body).toEqual({ status: "ready" });
    const verbose = await readyz(ports[1]!, "?verbose");
    expect(verbose).toEqual({ status: 200, body: { status: "ready", checks: { store: "ok", s3: "ok", nats: "ok" } } });
    expect((await readyz(ports[2]!, "?verbose")).body.checks).toEqual({ nats: "ok", s3: "ok" });

    // NATS lost after startup: not ready, naming nats, until it is back.
    await nats.stop();
    for (const port of ports) {
      const r = await until(
        `${port} not ready`,
        () => readyz(port),
        (x) => x.status === 503,
        10_000,
      );
      expect(r.body.checks?.nats).toMatch(/^failed: /);
    }
    await nats.start();
    const natsUpAt = Date.now();
    for (const port of ports)
      await until(
        `${port} ready again`,
        () => readyz(port),
        (r) => r.status === 200,
        20_000,
      );
    console.log(`readiness: every workload ready ${Date.now() - natsUpAt} ms after NATS was back`);
  }, 180_000);
});
