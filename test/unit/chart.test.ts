import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { kubeTools } from "../helpers/kube-control-plane.ts";

const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");
let helm: string;

beforeAll(() => {
  helm = kubeTools().helm;
});

const render = (...set: string[]) => {
  const out = execFileSync(helm, ["template", "r", CHART, ...set.flatMap((s) => ["--set", s])], { encoding: "utf8" });
  return parseAllDocuments(out)
    .map((d) => d.toJS())
    .filter(Boolean);
};

describe("the Helm chart", () => {
  it("passes helm lint --strict", () => {
    const r = spawnSync(helm, ["lint", "--strict", CHART, "--set", "publicUrl=https://inspect.example.com"], { encoding: "utf8" });
    expect(r.stdout + r.stderr).toContain("0 chart(s) failed");
    expect(r.status).toBe(0);
  });

  it("refuses values its schema does not know or allow, saying which (values.schema.json)", () => {
    const refused = (...set: string[]) =>
      spawnSync(helm, ["template", "r", CHART, "--set", "publicUrl=https://inspect.example.com", ...set.flatMap((s) => ["--set", s])], {
        encoding: "utf8",
      });
    // A typo that would otherwise render, and leave the pod without the volume size asked for.
    const typo = refused("persistance.size=1Gi");
    expect(typo.status).not.toBe(0);
    expect(typo.stderr).toContain("additional properties 'persistance' not allowed");
    expect(refused("persistence.sise=1Gi").stderr).toContain("additional properties 'sise' not allowed");
    expect(refused("publicUrl=not-a-url").stderr).toContain("/publicUrl");
    expect(refused("detection.provider=tpu").stderr).toContain("/detection/provider");
    expect(refused("resources.requests.cpu=lots").stderr).toContain("/resources/requests/cpu");
    expect(refused("image.pullPolicy=Sometimes").status).not.toBe(0);
  });

  it("refuses to render without publicUrl, saying why", () => {
    const r = spawnSync(helm, ["template", "r", CHART], { encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("publicUrl is required");
  });

  it("runs one hardened replica of `start` with its data on a volume and probes on the health routes", () => {
    const docs = render("publicUrl=https://inspect.example.com");
    expect(docs.map((d: any) => d.kind).sort()).toEqual(["Service", "Service", "ServiceAccount", "StatefulSet"]);
    const sts = docs.find((d: any) => d.kind === "StatefulSet");
    const pod = sts.spec.template.spec;
    const c = pod.containers[0];
    expect(sts.spec.replicas).toBe(1);
    expect(c.args).toEqual(["start"]);
    expect(c.env).toContainEqual({ name: "PUBLIC_URL", value: "https://inspect.example.com" });
    expect(c.env).toContainEqual({ name: "DATA_DIR", value: "/data" });
    expect(c.livenessProbe.httpGet.path).toBe("/healthz");
    expect(c.readinessProbe.httpGet.path).toBe("/readyz");
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe("20Gi");
    // A readiness drain before SIGTERM, inside the grace period.
    expect(c.lifecycle.preStop.sleep.seconds).toBe(5);
    expect(pod.terminationGracePeriodSeconds).toBe(35);
  });

  it("serves /metrics on a port of its own that only the headless Service names, never the client-facing one", () => {
    const docs = render("publicUrl=https://inspect.example.com");
    const sts = docs.find((d: any) => d.kind === "StatefulSet");
    const c = sts.spec.template.spec.containers[0];
    expect(c.ports).toContainEqual({ name: "metrics", containerPort: 9464 });
    expect(c.env).toContainEqual({ name: "METRICS_PORT", value: "9464" });
    const services = docs.filter((d: any) => d.kind === "Service");
    const headless = services.find((svc: any) => svc.spec.clusterIP === "None");
    expect(sts.spec.serviceName).toBe(headless.metadata.name);
    expect(headless.spec.ports.map((p: any) => p.name)).toEqual(["http", "metrics"]);
    const facing = services.find((svc: any) => svc !== headless);
    expect(facing.spec.ports.map((p: any) => p.name)).toEqual(["http"]);
  });

  it("adds a ServiceMonitor and a NetworkPolicy that keeps /metrics to the monitoring namespace, on request", () => {
    const docs = render("publicUrl=https://inspect.example.com", "metrics.serviceMonitor.enabled=true", "networkPolicy.enabled=true");
    const monitor = docs.find((d: any) => d.kind === "ServiceMonitor");
    expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s" }]);
    const policy = docs.find((d: any) => d.kind === "NetworkPolicy");
    const metricsRule = policy.spec.ingress.find((r: any) => r.ports[0].port === "metrics");
    expect(metricsRule.from).toEqual([{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }]);
    expect(render("publicUrl=https://inspect.example.com").some((d: any) => d.kind === "NetworkPolicy")).toBe(false);
  });

  it("adds an ingress on request", () => {
    const docs = render("publicUrl=https://inspect.example.com", "ingress.enabled=true", "ingress.host=inspect.example.com");
    const ingress = docs.find((d: any) => d.kind === "Ingress");
    expect(ingress.spec.rules[0].host).toBe("inspect.example.com");
  });
});
