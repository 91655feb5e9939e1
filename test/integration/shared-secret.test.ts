import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workloadServices } from "../../bin/cluster-services.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { startNatsServer, type NatsServer } from "../helpers/go-servers.ts";

/**
 * API replicas on different machines (here: different data directories) share one signing secret
 * through NATS KV, so a capture link made by one is accepted by the other, and so are cookies and
 * share links.
 */
describe("the signing secret in cluster mode", () => {
  let nats: NatsServer;
  const dirs: string[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterAll(async () => {
    await nats.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const replica = async (natsUrl?: string) => {
    const dir = mkdtempSync(join(tmpdir(), "vi-secret-"));
    dirs.push(dir);
    const env = { DATA_DIR: dir, DAMAGE_MODEL: "none", PARTS_MODEL: "none", ...(natsUrl ? { NATS_URL: natsUrl } : {}) };
    return workloadServices(loadConfig(env), pino({ level: "silent" }), "api");
  };

  it("is the same for every replica through NATS; without it each data directory has its own", async () => {
    const [a, b, alone] = [await replica(nats.url), await replica(nats.url), await replica()];
    try {
      const id = "insp_0123456789abcdefghijklmn";
      expect(b.captureLinks.token(id)).toBe(a.captureLinks.token(id));
      expect(b.signingKeys.shareLinks.equals(a.signingKeys.shareLinks)).toBe(true);
      expect(b.signingKeys.cookies.equals(a.signingKeys.cookies)).toBe(true);
      // Each data directory has a secret of its own: without NATS the replicas would disagree.
      expect(alone.captureLinks.token(id)).not.toBe(a.captureLinks.token(id));
    } finally {
      await Promise.all([a.close(), b.close(), alone.close()]);
    }
  });
});
