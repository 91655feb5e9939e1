import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type Received = { headers: IncomingHttpHeaders; body: string; status: number; at: number };

/** A real HTTP receiver on loopback; `respond` decides each answer (a status, or a redirect). */
export class WebhookReceiver {
  readonly received: Received[] = [];
  respond: (n: number, body: string) => number | { redirect: string } = () => 200;
  #server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const answer = this.respond(this.received.length, body);
        const status = typeof answer === "number" ? answer : 302;
        this.received.push({ headers: req.headers, body, status, at: Date.now() });
        if (typeof answer === "object") res.setHeader("location", answer.redirect);
        res.statusCode = status;
        res.end("ok");
      });
    });
    await new Promise<void>((r) => this.#server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}/hooks`;
    return this;
  }

  /** The parsed event bodies received so far. */
  events(): { id: string; type: string; data: { id: string; status: string } }[] {
    return this.received.map((r) => JSON.parse(r.body));
  }

  async close(): Promise<void> {
    await new Promise((r) => this.#server?.close(r));
  }
}

export async function until<T>(what: string, read: () => T | Promise<T>, done: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(v)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
