import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { get, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, listKeys, revokeKey } from "../../bin/commands/keys.ts";
import { createUser } from "../../bin/commands/users.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { startNatsServer, type NatsServer } from "../helpers/go-servers.ts";
import { freePorts } from "../helpers/free-port.ts";
import { ServiceProcess } from "../helpers/service-process.ts";

/**
 * Two `vehicle-inspection api` processes as two machines would run them: each its own DATA_DIR, one
 * NATS between them, a client spread over both as a load balancer spreads it. What the API's edge
 * keeps (API keys, dashboard users and sessions, every rate limit) is in NATS KV, so either replica
 * answers alike and the client meets one limit, not one per replica.
 */
describe("what API replicas share through NATS", () => {
  let nats: NatsServer;
  const dirs: string[] = [];
  let env: Record<string, string>;
  const urls: string[] = [];
  const replicas: ServiceProcess[] = [];
  /** The CLI's view: NATS, and a data directory of its own that holds none of it. */
  let config: ReturnType<typeof loadConfig>;

  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), "vi-replica-"));
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    env = {
      HOST: "127.0.0.1",
      NATS_URL: nats.url,
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
      RATE_LIMIT_TEST_PER_SECOND: "4",
      RATE_LIMIT_FAILED_AUTH_PER_MINUTE: "3",
      LOG_LEVEL: "info",
    };
    config = loadConfig({ ...env, DATA_DIR: dir() });
    for (const port of await freePorts(2)) {
      urls.push(`http://127.0.0.1:${port}`);
      replicas.push(new ServiceProcess({ ...env, DATA_DIR: dir(), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` }, "api"));
    }
    await Promise.all(replicas.map((r) => r.line((l) => l.msg === "api workload started", 60_000)));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await nats?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const list = (i: number, key: string) => fetch(`${urls[i % 2]}/v1/inspections?limit=1`, { headers: { authorization: `Bearer ${key}` } });
  /** The same from another client address (127.0.0.2 is loopback too), so other tests' failures do not count for it. */
  const listFromElsewhere = (i: number, key: string) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders }>((resolve, reject) => {
      const url = `${urls[i % 2]}/v1/inspections?limit=1`;
      get(url, { localAddress: "127.0.0.2", headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers }));
      }).on("error", reject);
    });

  it("a key made by the CLI works on both at once; revoked, both refuse it", async () => {
    const key = await createKey(config, "test", "shared-co");
    expect((await list(0, key)).status).toBe(200);
    expect((await list(1, key)).status).toBe(200);
    const id = (await listKeys(config)).find((line) => line.includes(key.slice(-4)) && line.includes("shared-co"))!.split("\t")[0]!;
    expect(await revokeKey(config, id)).toBe(true);
    // The revocation reaches each replica's key cache through its KV watch.
    await new Promise((r) => setTimeout(r, 200));
    for (const i of [0, 1]) expect((await list(i, key)).status).toBe(401);
  });

  it("a person signed in on one replica is signed in on the other", async () => {
    await createUser(config, "roamer@example.com", "roaming-co", "correct horse battery");
    const a = new DashboardClient(urls[0]!);
    expect((await a.signIn("roamer@example.com", "correct horse battery")).status).toBe(303);
    const b = new DashboardClient(urls[1]!);
    for (const [name, value] of a.cookies) b.cookies.set(name, value);
    const page = await b.get("/dashboard/test/inspections");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("roamer@example.com");
    // Signed out on the other replica: the session is gone on both.
    expect((await b.post("/dashboard/sign-out", {}, "/dashboard/test/inspections")).status).toBe(303);
    expect((await a.get("/dashboard/test/inspections")).status).toBe(303);
  });

  it("a key's requests spread over both replicas meet one per-key limit", async () => {
    const key = await createKey(config, "test", "spread-co");
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => list(i, key)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(4);
    const refused = answers.filter((r) => r.status === 429);
    expect(refused).toHaveLength(6);
    // Each replica was sent 5: counting alone, each would have allowed 4 of them.
    expect((await refused[0]!.json()).error.code).toBe("rate_limited");
    expect(Number(refused[0]!.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("failed authentications counted on one replica refuse the address's next failure on the other, never the right key", async () => {
    const key = await createKey(config, "test", "guessed-co");
    for (let i = 0; i < 3; i++) expect((await listFromElsewhere(0, `sk_test_${String(i).padStart(32, "0")}`)).status).toBe(401);
    // The failures reach the other replica's watched counters within milliseconds.
    await new Promise((r) => setTimeout(r, 200));
    for (const i of [0, 1]) {
      const refused = await listFromElsewhere(i, `sk_test_${String(9).padStart(32, "0")}`);
      expect(refused.status).toBe(429);
      expect(refused.headers["ratelimit-remaining"]).toBe("0");
      expect((await listFromElsewhere(i, key)).status).toBe(200);
    }
  });
});
