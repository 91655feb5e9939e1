import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_RETENTION_MS } from "../../api/plugins/idempotency.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { NatsIdempotencyStore } from "../../core/adapters/nats/nats-idempotency-store.ts";
import { NatsKeyStore } from "../../core/adapters/nats/nats-key-store.ts";
import { startNatsServer, type NatsServer } from "../helpers/go-servers.ts";

const scope = { accountId: "acct_a", livemode: false };
const response = { statusCode: 201, body: '{"id":"insp_1"}', headers: { location: "/v1/inspections/insp_1" } };
/** Reconnecting (the client waits 2 s between tries) and JetStream recovering its streams. */
const RECOVERY_MS = 30_000;

/**
 * The NATS adapters through a nats-server restart on the same port and store directory, as a
 * rolling restart or a crash of NATS looks to an API replica: calls meanwhile fail as unavailable
 * (503 to the client, who retries), the connection comes back by itself, and what JetStream had
 * stored (file storage) is there after it.
 */
describe("NATS KV adapters across a nats-server restart", () => {
  let server: NatsServer;
  let api: Nats;
  let cli: Nats;
  const statuses: string[] = [];
  const unhandled: unknown[] = [];
  const watchErrors: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on("unhandledRejection", onUnhandled);
    server = await startNatsServer();
    api = await connectNats({ url: server.url, name: "api", onStatus: (s) => statuses.push(s.type) });
    cli = await connectNats({ url: server.url, name: "cli" });
  });
  afterAll(async () => {
    await api?.close();
    await cli?.close();
    await server?.close();
    process.off("unhandledRejection", onUnhandled);
  });

  it("an idempotency key begun before the restart replays after it, and revocations reach the key cache again", async () => {
    const idempotency = await NatsIdempotencyStore.open(api.kvm, { retentionMs: IDEMPOTENCY_RETENTION_MS });
    const keys = await NatsKeyStore.open(api.kvm, { onWatchError: (e) => watchErrors.push(e) });
    const now = Date.now();
    const begin = (key: string, fingerprint = "f") => idempotency.begin(scope, key, fingerprint, now, IDEMPOTENCY_RETENTION_MS);
    expect(await begin("done")).toEqual({ kind: "started" });
    await idempotency.complete(scope, "done", response);
    expect(await begin("running")).toEqual({ kind: "started" });
    await keys.createKey("acme", "test", "hash-1", "abcd", "key_1", 1);
    expect((await keys.findByHash("hash-1"))!.revokedAt).toBeNull();

    await server.stop();
    await expect(begin("during")).rejects.toMatchObject({ code: "service_unavailable", statusCode: 503 });
    // The key cache answers from memory while NATS is away: authentication keeps working.
    expect((await keys.findByHash("hash-1"))!.revokedAt).toBeNull();
    await server.start();

    await expect
      .poll(() => begin("done").catch((error: Error) => error.message), { timeout: RECOVERY_MS })
      .toEqual({ kind: "replay", response });
    // Each call once the server answers again; a request that times out while JetStream is still
    // recovering is a 503 the client retries, as any client would.
    const settled = (key: string, fingerprint?: string) =>
      expect.poll(() => begin(key, fingerprint).catch((error: Error) => error.message), { timeout: RECOVERY_MS });
    await settled("running").toEqual({ kind: "in_flight" });
    await settled("running", "another request").toEqual({ kind: "mismatch" });
    // The begin refused during the outage may still land once the client reconnects (it keeps what it
    // could not send): the key then reads as running, and the client's retry gets 409 until it is
    // stale, never a second run. Either way nothing was replayed or mismatched.
    expect(["started", "in_flight"]).toContain((await begin("during")).kind);

    // Another process (the CLI) revokes the key after the restart: the API replica's cache follows.
    // Opened after the restart too, so retried as the calls above are while JetStream recovers.
    const revokeElsewhere = async () => (await NatsKeyStore.open(cli.kvm)).revoke("key_1", 9);
    await expect.poll(() => revokeElsewhere().catch((error: Error) => error.message), { timeout: RECOVERY_MS }).toBe(true);
    await expect.poll(async () => (await keys.findByHash("hash-1"))!.revokedAt, { timeout: RECOVERY_MS }).toBe(9);
    await keys.close();

    expect(statuses).toEqual(expect.arrayContaining(["disconnect", "reconnect"]));
    expect(unhandled).toEqual([]);
    expect(watchErrors).toEqual([]);
  });
});
