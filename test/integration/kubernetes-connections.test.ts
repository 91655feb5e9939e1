import { mkdtempSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";
import { restoreFromArchive } from "../../bin/commands/restore.ts";
import { InspectionRecords } from "../../core/adapters/kubernetes/inspection-records.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { INSPECTION_RESOURCE } from "../../core/schemas/inspection-resource.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { freePort } from "../helpers/service.ts";

const NAMESPACE = "vi";

/**
 * The watches the API server holds open on the Inspection kinds, as it counts them itself on its
 * /metrics (apiserver_longrunning_requests, verb WATCH): only this file's clients watch them.
 */
async function inspectionWatches(k: ControlPlane): Promise<number> {
  const metrics = await k.kubectl("get", "--raw", "/metrics");
  let open = 0;
  for (const line of metrics.split("\n")) {
    const m = /^apiserver_longrunning_requests\{(.*)\} (\S+)$/.exec(line);
    if (m && m[1]!.includes(`group="${INSPECTION_RESOURCE.group}"`) && m[1]!.includes('verb="WATCH"')) open += Number(m[2]);
  }
  return open;
}

/**
 * The local ports of this process's own TCP connections to `port` on loopback, as the kernel lists
 * them (/proc/net/tcp, matched by inode to this process's file descriptors): kubectl's and the API
 * server's own connections to its port are not ours.
 */
function connectionsTo(port: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // Closed between the listing and the read.
    }
  }
  const remote = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/self/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[2] === remote && inodes.has(f[9]!))
    .map((f) => f[1]!);
}

/**
 * What the process's requests to a real kube-apiserver leave behind: the watches of `restore` once it
 * ends, and the connections of many requests through the one pool of CountedKubeConfig.
 */
describe("the process's watches and connections on a real API server", () => {
  let k: ControlPlane;

  beforeAll(async () => {
    k = await startControlPlane();
    await k.installCrds();
    await k.kubectl("create", "namespace", NAMESPACE);
    // restore finds the API server as the commands do, from KUBECONFIG.
    process.env.KUBECONFIG = k.kubeconfig;
  }, 120_000);
  afterAll(async () => {
    await k?.close();
  });

  const restoreConfig = (env: Record<string, string> = {}) =>
    loadConfig({
      DATA_DIR: mkdtempSync(join(tmpdir(), "vi-restore-data-")),
      INSPECTION_STORE: "kubernetes",
      POD_NAMESPACE: NAMESPACE,
      ...env,
    });

  it("counts the Inspection caches' watches where the API server counts them: two while open, none once closed", async () => {
    const kc = new CountedKubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const records = await InspectionRecords.open(kc, NAMESPACE, { archive: new MemoryBlobStore() });
    await expect.poll(() => inspectionWatches(k), { timeout: 10_000 }).toBe(2);
    await records.close();
    await expect.poll(() => inspectionWatches(k), { timeout: 10_000 }).toBe(0);
  });

  it("restore ends once it is done, its watches closed with it", async () => {
    const began = Date.now();
    expect(await restoreFromArchive(restoreConfig(), began, () => {})).toEqual({ restored: 0, live: 0, leftArchived: 0 });
    // With nothing to restore it closes its caches as soon as they hold their lists: a watch that
    // close did not end would hold it until the client's 30 s inactivity timeout.
    expect(Date.now() - began).toBeLessThan(15_000);
    await expect.poll(() => inspectionWatches(k), { timeout: 10_000 }).toBe(0);
  });

  it("restore stops watching the Inspection resources when it cannot go on (NATS away): the command ends instead of hanging", async () => {
    const config = restoreConfig({ NATS_URL: `nats://127.0.0.1:${await freePort()}` });
    await expect(restoreFromArchive(config, Date.now(), () => {})).rejects.toThrow();
    await expect.poll(() => inspectionWatches(k), { timeout: 10_000 }).toBe(0);
  });

  it("keeps its connections to the API server open for the next request, as client-go does", async () => {
    const kc = new CountedKubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const port = Number(new URL(k.server).port);
    // The pools of the cases above may keep theirs open a while yet: only ones opened from here on count.
    const before = new Set(connectionsTo(port));
    const opened = new Set<string>();
    for (let i = 0; i < 50; i++) {
      expect((await core.readNamespace({ name: "default" })).metadata?.name).toBe("default");
      for (const local of connectionsTo(port)) if (!before.has(local)) opened.add(local);
    }
    // client-node 2.0.1 alone makes a new pool, so a new TLS connection, for each of the 50.
    expect(opened.size).toBeGreaterThanOrEqual(1);
    expect(opened.size).toBeLessThanOrEqual(2);
  });
});
