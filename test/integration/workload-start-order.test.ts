import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_METRICS_PORT } from "../../core/runtime/config.ts";
import { type NatsServer, startNatsServer } from "../helpers/go-servers.ts";
import { freePort } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";

/**
 * Issue 30: a workload of the cluster mode started before NATS (a node's pods come up in any order;
 * NATS restarts) waits for it, alive and not ready, rather than exiting; once NATS answers it starts
 * and is ready. Real processes, a real nats-server started after them on the port they were given.
 */
describe("cluster workloads started before NATS", () => {
  const processes: ServiceProcess[] = [];
  let nats: NatsServer | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "vi-start-order-"));
  afterAll(async () => {
    for (const p of processes) p.kill();
    await nats?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("wait for NATS with /healthz 200 and /readyz 503, then start and are ready", async () => {
    const natsPort = await freePort();
    const env = {
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      LOG_LEVEL: "info",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
      JUDGE_MODEL: "none",
    };
    const workloads = [
      ["api", "api workload started"],
      ["operator", "operator workload started"],
      ["inference", "inference workload started"],
    ] as const;
    const metricsPorts: number[] = [];
    for (const [workload] of workloads) {
      const p = new ServiceProcess({ ...env, PORT: String(await freePort()) }, workload);
      processes.push(p);
      const listening = await p.line((l) => l.msg === "probes and metrics listening");
      metricsPorts.push(listening.metrics_port as number);
    }
    const probe = async (port: number, path: string) => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
    // Two seconds without NATS: every workload is still running, alive and not ready.
    await new Promise((r) => setTimeout(r, 2_000));
    for (const [i, port] of metricsPorts.entries()) {
      expect(
        processes[i]!.logs.some((l) => l.msg === workloads[i]![1]),
        workloads[i]![0],
      ).toBe(false);
      expect(await probe(port, "/healthz")).toBe(200);
      expect(await probe(port, "/readyz")).toBe(503);
    }
    nats = await startNatsServer(natsPort);
    for (const [i, [, started]] of workloads.entries()) await processes[i]!.line((l) => l.msg === started, 30_000);
    for (const port of metricsPorts) expect(await probe(port, "/readyz")).toBe(200);
  }, 90_000);

  it("serve probes on a free port when METRICS_PORT is unset and its default is taken by another process", async () => {
    const holder = createServer();
    // Held by this test, or already by something else of the machine: either way taken.
    await new Promise<void>((resolve) => holder.once("error", () => resolve()).listen(DEFAULT_METRICS_PORT, "127.0.0.1", resolve));
    try {
      const p = new ServiceProcess(
        {
          DATA_DIR: mkdtempSync(join(dataDir, "default-port-")),
          HOST: "127.0.0.1",
          PORT: String(await freePort()),
          METRICS_PORT: undefined,
        },
        "api",
      );
      processes.push(p);
      const listening = await p.line((l) => l.msg === "probes and metrics listening");
      expect(listening.metrics_port).not.toBe(DEFAULT_METRICS_PORT);
      await p.line((l) => l.msg === "api workload started");
      expect((await fetch(`http://127.0.0.1:${listening.metrics_port}/healthz`)).status).toBe(200);
    } finally {
      holder.close();
    }
  }, 60_000);
});
