import { describe, expect, it } from "vitest";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";

/**
 * What CountedKubeConfig counts on: a dispatcher of its own on every request. Its counting of the
 * requests themselves is tested on a real kube-apiserver (test/integration/kubernetes-connections.test.ts).
 */
describe("the process's requests to the Kubernetes API server", () => {
  it("has a dispatcher to count on where client-node would leave it to fetch's global one (https, no TLS options)", () => {
    const kc = new CountedKubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server: "https://kubernetes.example", skipTLSVerify: false }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    expect(kc.createDispatcherOptions({ name: "c", server: "https://kubernetes.example", skipTLSVerify: false }, {}).type).toBe("agent");
  });
});
