import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CoreV1Api, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";
import { METRIC, Metrics } from "../../core/runtime/metrics.ts";
import { freePort } from "../helpers/service.ts";
import { sample } from "../helpers/prometheus.ts";

/** A KubeConfig of the process's kind for the API server at `server`. */
function configFor(server: string): CountedKubeConfig {
  const kc = new CountedKubeConfig();
  kc.loadFromOptions({
    // client-node takes a plain http:// server only with this set.
    clusters: [{ name: "c", server, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

/**
 * A real HTTP server stands in for the API server: a namespace read, a create that conflicts, a
 * watch; and a server that is not there. Every request the API clients and Watch make is counted
 * once on vehicle_inspection_kubernetes_requests_total{verb,code}, the 409 visible.
 */
describe("the process's requests to the Kubernetes API server", () => {
  let server: Server;
  let url: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.setHeader("content-type", "application/json");
      if (req.method === "GET" && req.url === "/api/v1/namespaces/default") {
        res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } }));
      } else if (req.method === "POST" && req.url === "/api/v1/namespaces") {
        res.statusCode = 409;
        res.end(JSON.stringify({ apiVersion: "v1", kind: "Status", status: "Failure", reason: "AlreadyExists", code: 409 }));
      } else if (req.method === "GET" && req.url?.startsWith("/api/v1/namespaces?") && req.url.includes("watch=true")) {
        res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "default" } } })}\n`);
        res.end();
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((closed) => server.close(() => closed())));

  it("counts each by verb and code, once, the API clients' and Watch's alike", async () => {
    const kc = configFor(url);
    const core = kc.makeApiClient(CoreV1Api);
    expect((await core.readNamespace({ name: "default" })).metadata?.name).toBe("default");
    await expect(core.createNamespace({ body: { metadata: { name: "default" } } })).rejects.toMatchObject({ code: 409 });
    const events: string[] = [];
    await new Promise<void>((done, failed) => {
      new Watch(kc).watch(
        "/api/v1/namespaces",
        {},
        (type) => events.push(type),
        (err) => (err ? failed(err) : done()),
      );
    });
    expect(events).toEqual(["ADDED"]);
    // Nothing listens there: no response, counted as <error>.
    const away = configFor(`http://127.0.0.1:${await freePort()}`).makeApiClient(CoreV1Api);
    await expect(away.readNamespace({ name: "default" })).rejects.toThrow();

    // The server saw each once, with the token: counting changed nothing of the requests.
    expect(seen).toEqual([
      "GET /api/v1/namespaces/default Bearer t",
      "POST /api/v1/namespaces Bearer t",
      "GET /api/v1/namespaces?watch=true Bearer t",
    ]);
    const { body } = await new Metrics("operator").scrape();
    const requests = body.split("\n").filter((line) => line.startsWith(`${METRIC.kubernetesRequests}{`));
    console.log(requests.join("\n"));
    expect(sample(body, METRIC.kubernetesRequests, { verb: "GET", code: "200", workload: "operator" })).toBe(1);
    expect(sample(body, METRIC.kubernetesRequests, { verb: "POST", code: "409" })).toBe(1);
    expect(sample(body, METRIC.kubernetesRequests, { verb: "WATCH", code: "200" })).toBe(1);
    expect(sample(body, METRIC.kubernetesRequests, { verb: "GET", code: "<error>" })).toBe(1);
    expect(requests).toHaveLength(4);
    // Read again, the counts stay: each scrape reads the tally, and adds nothing to it.
    expect(sample((await new Metrics("operator").scrape()).body, METRIC.kubernetesRequests, { verb: "POST", code: "409" })).toBe(1);
  });

  it("has a dispatcher to count on where client-node would leave it to fetch's global one (https, no TLS options)", () => {
    const kc = configFor("https://kubernetes.example");
    expect(kc.createDispatcherOptions({ name: "c", server: "https://kubernetes.example", skipTLSVerify: false }, {}).type).toBe("agent");
  });
});
