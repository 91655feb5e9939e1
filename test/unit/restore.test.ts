import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restoreFromArchive } from "../../bin/commands/restore.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { freePort } from "../helpers/service.ts";

/**
 * A real HTTP server stands in for the API server: the Inspection and InspectionRecord lists are
 * empty, and their watches stay open until the client closes them.
 */
describe("vehicle-inspection restore", () => {
  let server: Server;
  let watching = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      if (req.url?.includes("watch=true")) {
        watching++;
        req.on("close", () => watching--);
        res.write("");
        return;
      }
      res.end(JSON.stringify({ items: [], metadata: { resourceVersion: "1" } }));
    });
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    const dir = mkdtempSync(join(tmpdir(), "vi-restore-"));
    const kubeconfig = join(dir, "kubeconfig");
    // client-node takes a plain http:// server only with TLS verification off.
    const apiServer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const clusters = [{ name: "c", cluster: { server: apiServer, "insecure-skip-tls-verify": true } }];
    const contexts = [{ name: "x", context: { cluster: "c", user: "u" } }];
    writeFileSync(kubeconfig, JSON.stringify({ clusters, users: [{ name: "u", user: { token: "t" } }], contexts, "current-context": "x" }));
    process.env.KUBECONFIG = kubeconfig;
  });

  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((closed) => server.close(() => closed()));
  });

  it("stops watching the Inspection resources when it cannot go on (NATS away): the command ends instead of hanging", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "vi-restore-data-"));
    const config = loadConfig({
      DATA_DIR: dataDir,
      INSPECTION_STORE: "kubernetes",
      NATS_URL: `nats://127.0.0.1:${await freePort()}`,
      POD_NAMESPACE: "vi",
    });
    await expect(restoreFromArchive(config, Date.now(), () => {})).rejects.toThrow();
    // Nothing of it left running: no watch open, so the process can end.
    await expect.poll(() => watching, { timeout: 3_000 }).toBe(0);
  });
});
