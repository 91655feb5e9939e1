import { connect } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { GO_SERVERS, startNatsServer, type NatsServer } from "../helpers/go-servers.ts";

/** The first line a NATS server sends on a new connection: `INFO {json}`. */
function infoLine(port: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString();
      const end = received.indexOf("\r\n");
      if (end < 0) return;
      socket.destroy();
      const line = received.slice(0, end);
      if (!line.startsWith("INFO ")) reject(new Error(`not an INFO line: ${line}`));
      else resolve(JSON.parse(line.slice(5)));
    });
    socket.on("error", reject);
  });
}

describe("nats-server built from the Go module proxy", () => {
  let nats: NatsServer;
  afterAll(() => nats?.close());

  it("answers with JetStream on, and comes back on the same port after a stop", async () => {
    nats = await startNatsServer();
    const info = await infoLine(nats.port);
    expect(`v${info.version}`).toBe(GO_SERVERS["nats-server"].version);
    expect(info.jetstream).toBe(true);
    expect(nats.url).toBe(`nats://127.0.0.1:${nats.port}`);

    await nats.stop();
    await expect(infoLine(nats.port)).rejects.toThrow(/ECONNREFUSED/);
    await nats.start();
    expect((await infoLine(nats.port)).server_id).toEqual(expect.any(String));
  });
});
