import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { chartReadme } from "../../charts/chart-docs.ts";
import { METRIC } from "../../core/runtime/metrics.ts";
import { CHART, prometheusRuleMetrics, RULE_VALUES, renderChart } from "../helpers/chart.ts";
import { kubeTools } from "../helpers/kube-control-plane.ts";
import { parseJobTemplate } from "../../operator/detection-job-scaler.ts";

let helm: string;

beforeAll(() => {
  helm = kubeTools().helm;
});

const render = renderChart;

describe("the Helm chart", () => {
  it("passes helm lint --strict, in embedded and in cluster mode", () => {
    const cluster = ["mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos", "detection.jobs.enabled=true"];
    for (const values of [["publicUrl=https://inspect.example.com"], ["publicUrl=https://inspect.example.com", ...cluster]]) {
      const r = spawnSync(helm, ["lint", "--strict", CHART, ...values.flatMap((v) => ["--set", v])], { encoding: "utf8" });
      expect(r.stdout + r.stderr).toContain("0 chart(s) failed");
      expect(r.status).toBe(0);
    }
  });

  it("carries a checksum of the Job template on every pod template, so helm upgrade of its values rolls the pods", () => {
    const cluster = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos"];
    const checksums = (...set: string[]) =>
      render(...cluster, "detection.jobs.enabled=true", ...set)
        .filter((d) => d.kind === "Deployment" || d.kind === "StatefulSet")
        .map((d) => [d.metadata.name, d.spec.template.metadata.annotations["checksum/config"]]);
    const before = checksums("detection.jobs.gpus=1");
    expect(before.length).toBeGreaterThan(0);
    for (const [, sum] of before) expect(sum).toMatch(/^[0-9a-f]{64}$/);
    const after = checksums("detection.jobs.gpus=2");
    expect(after.map(([name]) => name)).toEqual(before.map(([name]) => name));
    for (const [i, [name, sum]] of after.entries()) expect(sum, name).not.toBe(before[i]![1]);
    expect(checksums("detection.jobs.gpus=1")).toEqual(before);
  });

  it("takes the values charts share: name overrides, pod labels and placement, on every workload's pods", () => {
    const cluster = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos"];
    const placement = [
      "podLabels.team=claims",
      "priorityClassName=inspection-high",
      "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
      "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
      "topologySpreadConstraints[0].maxSkew=1",
      "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
      "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
    ];
    for (const mode of [["publicUrl=https://inspect.example.com"], cluster]) {
      const workloads = render(...mode, ...placement, "fullnameOverride=claims-vi").filter(
        (d) => d.kind === "Deployment" || d.kind === "StatefulSet",
      );
      expect(workloads.length).toBeGreaterThan(0);
      for (const w of workloads) {
        expect(w.metadata.name, w.metadata.name).toMatch(/^claims-vi(-|$)/);
        const pod = w.spec.template;
        expect(pod.metadata.labels.team, w.metadata.name).toBe("claims");
        expect(w.spec.selector.matchLabels.team, w.metadata.name).toBeUndefined();
        expect(pod.spec.priorityClassName, w.metadata.name).toBe("inspection-high");
        expect(pod.spec.affinity.nodeAffinity, w.metadata.name).toBeDefined();
        expect(pod.spec.topologySpreadConstraints[0].maxSkew, w.metadata.name).toBe(1);
      }
    }
    const renamed = render("publicUrl=https://inspect.example.com", "nameOverride=inspect");
    expect(renamed.find((d) => d.kind === "StatefulSet").metadata.name).toBe("r-inspect");
  });

  it("lets extraEnv set a variable the chart sets: the user's value in its place, never a name twice (server-side apply refuses that)", () => {
    const cluster = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos"];
    const extra = ["extraEnv[0].name=LOG_LEVEL", "extraEnv[0].value=debug", "extraEnv[1].name=TEAM", "extraEnv[1].value=claims"];
    // The secret-sourced form replaces a plain value too, and a repeated extraEnv name keeps its last.
    const secret = [
      "extraEnv[2].name=PUBLIC_URL",
      "extraEnv[2].valueFrom.secretKeyRef.name=urls",
      "extraEnv[2].valueFrom.secretKeyRef.key=public",
    ];
    const repeated = ["extraEnv[3].name=TEAM", "extraEnv[3].value=fleet"];
    for (const mode of [["publicUrl=https://inspect.example.com"], cluster]) {
      const plain = render(...mode).filter((d) => d.kind === "Deployment" || d.kind === "StatefulSet");
      const workloads = render(...mode, ...extra, ...secret, ...repeated).filter(
        (d) => d.kind === "Deployment" || d.kind === "StatefulSet",
      );
      expect(workloads.length).toBeGreaterThan(0);
      for (const [i, w] of workloads.entries()) {
        const env = w.spec.template.spec.containers[0].env as { name: string; value?: string; valueFrom?: unknown }[];
        const names = env.map((e) => e.name);
        expect(new Set(names).size, `${w.metadata.name}: ${names}`).toBe(names.length);
        expect(
          env.find((e) => e.name === "LOG_LEVEL"),
          w.metadata.name,
        ).toEqual({ name: "LOG_LEVEL", value: "debug" });
        expect(
          env.find((e) => e.name === "TEAM"),
          w.metadata.name,
        ).toEqual({ name: "TEAM", value: "fleet" });
        expect(
          env.find((e) => e.name === "PUBLIC_URL"),
          w.metadata.name,
        ).toEqual({
          name: "PUBLIC_URL",
          valueFrom: { secretKeyRef: { name: "urls", key: "public" } },
        });
        // The chart's own order kept, the user's new names after it (PUBLIC_URL is new to the workers).
        const before = (plain[i].spec.template.spec.containers[0].env as { name: string }[]).map((e) => e.name);
        expect(names.slice(0, before.length)).toEqual(before);
        expect(names.slice(before.length)).toEqual(before.includes("PUBLIC_URL") ? ["TEAM"] : ["TEAM", "PUBLIC_URL"]);
      }
    }
  });

  it("adds a helm test that walks an inspection round through the Service, once a Secret holds its test key", () => {
    const test = (...set: string[]) =>
      render("publicUrl=https://inspect.example.com", ...set).find(
        (d) => d.kind === "Pod" && d.metadata.annotations?.["helm.sh/hook"] === "test",
      );
    expect(test()).toBeUndefined();
    const withKey = ["helmTest.apiKeySecret.name=vi-test-key"];
    const pod = test(...withKey);
    expect(pod.metadata.name).toBe("r-vehicle-inspection-test-walkaround");
    const [container] = pod.spec.containers;
    expect(container.args).toEqual([
      "demo",
      "--drawn-photos",
      "--url",
      "http://r-vehicle-inspection:80",
      "--api-key",
      "$(VI_TEST_API_KEY)",
    ]);
    expect(container.env[0]).toEqual({ name: "VI_TEST_API_KEY", valueFrom: { secretKeyRef: { name: "vi-test-key", key: "api-key" } } });
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(test(...withKey, "helmTest.enabled=false")).toBeUndefined();
    // No Service, PDB or NetworkPolicy of the release selects it as one of the service's pods.
    const docs = render("publicUrl=https://inspect.example.com", ...withKey, "networkPolicy.enabled=true");
    for (const d of docs) {
      const selector = d.spec?.selector?.matchLabels ?? d.spec?.selector ?? d.spec?.podSelector?.matchLabels;
      if (d.kind === "Pod" || !selector || typeof selector !== "object") continue;
      const matches = Object.entries(selector).every(([k, v]) => pod.metadata.labels[k] === v);
      expect(matches, `${d.kind} ${d.metadata.name}`).toBe(false);
    }
    // Where the NetworkPolicy narrows who may reach the HTTP port, the test's pod is among them.
    const narrowed = render(
      "publicUrl=https://inspect.example.com",
      ...withKey,
      "networkPolicy.enabled=true",
      "networkPolicy.httpFrom[0].namespaceSelector.matchLabels.ingress=yes",
    ).find((d) => d.kind === "NetworkPolicy");
    expect(narrowed.spec.ingress[0].from).toContainEqual({
      podSelector: { matchLabels: { "app.kubernetes.io/name": "vehicle-inspection-test", "app.kubernetes.io/instance": "r" } },
    });
  });

  it("asks for the Kubernetes version whose features its pods use", () => {
    const chart = parseAllDocuments(readFileSync(join(CHART, "Chart.yaml"), "utf8"))[0]!.toJS();
    // A preStop sleep of 0 s (shutdown.drainSeconds: 0) is accepted from 1.33 (Chart.yaml says what else needs what).
    expect(chart.kubeVersion).toBe(">=1.33.0-0");
    const drain = render("publicUrl=https://inspect.example.com", "shutdown.drainSeconds=0").find((d) => d.kind === "StatefulSet");
    expect(drain.spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds).toBe(0);
    const old = spawnSync(helm, ["template", "r", CHART, "--kube-version", "1.32.0", "--set", "publicUrl=https://inspect.example.com"], {
      encoding: "utf8",
    });
    expect(old.status).not.toBe(0);
    expect(old.stderr).toMatch(/kubeVersion/);
  });

  it("adds a PrometheusRule on request whose alerts read metrics the service exports, by their prefixed names", () => {
    const alerts = prometheusRuleMetrics();
    expect(alerts.map((a) => a.alert)).toEqual([
      "VehicleInspectionNoLeader",
      "VehicleInspectionDetectionJobsStuck",
      "VehicleInspectionWebhooksFailing",
      "VehicleInspectionReconcileErrors",
      "VehicleInspectionApiErrors",
    ]);
    // Names, not samples: the real workloads' scrape is checked in cluster.test.ts.
    const exported: string[] = Object.values(METRIC);
    for (const { alert, metrics } of alerts) {
      expect(metrics.length, alert).toBeGreaterThan(0);
      for (const name of metrics) expect(exported, `${alert}: ${name}`).toContain(name);
    }
    // A lost leader fires when no operator is scraped at all, not only when each says 0.
    expect(alerts[0]!.expr).toContain("or vector(0)");
    // The Jobs' alert only where there are Jobs, the leader's only where there is a lease.
    const embedded = prometheusRuleMetrics("mode=embedded", "detection.jobs.enabled=false").map((a) => a.alert);
    expect(embedded).not.toContain("VehicleInspectionNoLeader");
    expect(embedded).not.toContain("VehicleInspectionDetectionJobsStuck");
    expect(render(...RULE_VALUES, "metrics.prometheusRule.enabled=false").some((d) => d.kind === "PrometheusRule")).toBe(false);
  });

  it("has a README whose values table is what helm-docs makes of values.yaml (npm run chart-docs)", () => {
    expect(readFileSync(join(CHART, "README.md"), "utf8")).toBe(chartReadme());
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

  it("keeps the release's namespace from a delete where it holds the Inspections, unless told not to", () => {
    const names = (...set: string[]) =>
      render("publicUrl=https://inspect.example.com", ...set)
        .filter((d: any) => d.kind === "ValidatingAdmissionPolicy")
        .map((d: any) => d.spec.matchConstraints.resourceRules[0]);
    expect(names()).toEqual([
      { apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["namespaces"], resourceNames: ["default"] },
    ]);
    expect(names("deletionProtection.namespace=false")).toEqual([]);
    // Without resources there is nothing in etcd to strand.
    expect(names("inspectionResources.enabled=false")).toEqual([]);
  });

  it("runs one hardened replica of `start` with its data on a volume and probes on the health routes", () => {
    const docs = render("publicUrl=https://inspect.example.com");
    expect(docs.map((d: any) => d.kind).sort()).toEqual([
      "CustomResourceDefinition",
      "CustomResourceDefinition",
      "Role",
      "RoleBinding",
      "Service",
      "Service",
      "ServiceAccount",
      "StatefulSet",
      // The namespace kept from a delete that would strand its Inspections (templates/namespace-protection.yaml).
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
    ]);
    // The CRDs (Inspection and its InspectionRecord) with the release (upgraded with it, kept on
    // uninstall), unless the platform team applies them.
    const crds = docs.filter((d: any) => d.kind === "CustomResourceDefinition");
    expect(crds.map((d: any) => d.metadata.name).sort()).toEqual(["inspectionrecords.inspection.dev", "inspections.inspection.dev"]);
    for (const crd of crds) expect(crd.metadata.annotations).toEqual({ "helm.sh/resource-policy": "keep" });
    expect(
      render("publicUrl=https://inspect.example.com", "crds.install=false").some((d: any) => d.kind === "CustomResourceDefinition"),
    ).toBe(false);
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
    expect(docs.some((d: any) => d.kind === "PodMonitor")).toBe(false);
    // With detection Jobs, their pods too: no Service selects them.
    const jobs = ["nats.url=nats://nats:4222", "s3.bucket=vi-photos", "detection.jobs.enabled=true"];
    const withJobs = render("publicUrl=https://inspect.example.com", "metrics.serviceMonitor.enabled=true", ...jobs);
    const pods = withJobs.find((d: any) => d.kind === "PodMonitor");
    const template = parseJobTemplate(
      withJobs.find((d: any) => d.kind === "ConfigMap" && d.metadata.name.endsWith("-detection-job")).data["detection-job.yaml"],
    );
    for (const [k, v] of Object.entries(pods.spec.selector.matchLabels)) expect(template.spec!.template.metadata!.labels![k], k).toBe(v);
    expect(pods.spec.podMetricsEndpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s" }]);
  });

  it("adds an ingress on request", () => {
    const docs = render("publicUrl=https://inspect.example.com", "ingress.enabled=true", "ingress.host=inspect.example.com");
    const ingress = docs.find((d: any) => d.kind === "Ingress");
    expect(ingress.spec.rules[0].host).toBe("inspect.example.com");
  });

  describe("detection as Jobs on GPU nodes", () => {
    const JOBS = [
      "publicUrl=https://inspect.example.com",
      "detection.jobs.enabled=true",
      "nats.url=nats://nats:4222",
      "s3.bucket=inspections",
    ];
    const template = (docs: any[]) => parseJobTemplate(docs.find((d) => d.kind === "ConfigMap").data["detection-job.yaml"]);

    it("renders the Job template for GPU nodes, and points the service at it with the access it needs", () => {
      const docs = render(...JOBS, "s3.credentialsSecret=s3-credentials");
      const job = template(docs);
      expect(job.metadata!.name).toBe("r-vehicle-inspection-detection");
      // Made by the service, not by Helm, and said so; its pods run as their own account.
      expect(job.metadata!.labels!["app.kubernetes.io/managed-by"]).toBe("vehicle-inspection");
      expect(job.metadata!.labels!["helm.sh/chart"]).toBeUndefined();
      expect(job.spec!.template.spec!.serviceAccountName).toBe("r-vehicle-inspection-detection");
      expect(job.spec).toMatchObject({ backoffLimit: 6, activeDeadlineSeconds: 3600, ttlSecondsAfterFinished: 600 });
      expect(job.spec!.podFailurePolicy!.rules.map((r) => r.action)).toEqual(["Ignore", "FailJob"]);
      const pod = job.spec!.template.spec!;
      expect(pod.restartPolicy).toBe("Never");
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.nodeSelector).toEqual({ "nvidia.com/gpu.present": "true" });
      expect(pod.tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
      const c = pod.containers[0]!;
      expect(c.args).toEqual(["inference"]);
      expect(c.resources!.limits).toEqual({ memory: "4Gi", "nvidia.com/gpu": 1 });
      expect(c.env).toContainEqual({ name: "ONNX_PROVIDER", value: "cuda" });
      expect(c.env).toContainEqual({ name: "INFERENCE_EXIT_WHEN_IDLE_MS", value: "60000" });
      expect(c.env).toContainEqual({ name: "NATS_URL", value: "nats://nats:4222" });
      expect(c.env).toContainEqual({ name: "S3_BUCKET", value: "inspections" });
      expect(c.envFrom).toEqual([{ secretRef: { name: "s3-credentials" } }]);
      const service = docs.find((d: any) => d.kind === "StatefulSet").spec.template.spec.containers[0];
      expect(service.env).toContainEqual({ name: "DETECTION_JOB_TEMPLATE", value: "/etc/vehicle-inspection/detection-job.yaml" });
      expect(service.env).toContainEqual({ name: "DETECTION_JOB_OWNER", value: "StatefulSet/r-vehicle-inspection" });
      expect(service.env).toContainEqual({ name: "DETECTION_JOBS_STUCK_AFTER_MS", value: "600000" });
      expect(service.volumeMounts).toContainEqual({ name: "detection-job", mountPath: "/etc/vehicle-inspection", readOnly: true });
      expect(docs.find((d: any) => d.kind === "ServiceAccount").automountServiceAccountToken).toBe(true);
      // No Service, StatefulSet or NetworkPolicy of the chart selects the detection pods.
      const podLabels = job.spec!.template.metadata!.labels!;
      const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
      const selectors = [
        ...docs.filter((d: any) => d.kind === "Service").map((d: any) => d.spec.selector),
        docs.find((d: any) => d.kind === "StatefulSet").spec.selector.matchLabels,
      ];
      expect(selectors.length).toBe(3);
      expect(selectors.filter(selects)).toEqual([]);
      const role = docs.find((d: any) => d.kind === "Role");
      expect(role.rules[0]).toEqual({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["list", "create", "patch"] });
    });

    it("runs the Jobs on CPU nodes with gpus=0, and renders no Kubernetes access when they are off", () => {
      const pod = template(render(...JOBS, "detection.jobs.gpus=0", "detection.jobs.nodeSelector=null", "detection.jobs.tolerations=null"))
        .spec!.template.spec!;
      expect(pod.containers[0]!.resources!.limits).toEqual({ memory: "4Gi" });
      expect(pod.containers[0]!.env).toContainEqual({ name: "ONNX_PROVIDER", value: "cpu" });
      expect(pod.nodeSelector).toBeUndefined();
      const plain = render("publicUrl=https://inspect.example.com", "inspectionResources.enabled=false");
      expect(plain.some((d: any) => ["Role", "RoleBinding", "ConfigMap"].includes(d.kind))).toBe(false);
      expect(plain.find((d: any) => d.kind === "ServiceAccount").automountServiceAccountToken).toBe(false);
    });

    it("keeps the detection pods' /metrics to the monitoring namespaces, with the NetworkPolicy on", () => {
      const docs = render(...JOBS, "networkPolicy.enabled=true");
      const podLabels = template(docs).spec!.template.metadata!.labels!;
      const policies = docs.filter((d: any) => d.kind === "NetworkPolicy");
      const theirs = policies.filter((p: any) => Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => podLabels[k] === v));
      expect(theirs.map((p: any) => p.metadata.name)).toEqual(["r-vehicle-inspection-detection"]);
      expect(theirs[0].spec.ingress).toEqual([
        { ports: [{ port: "metrics" }], from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }] },
      ]);
      expect(render(...JOBS).some((d: any) => d.kind === "NetworkPolicy")).toBe(false);
    });

    it("holds the service's Jobs to the rendered template with an admission policy that follows the values", () => {
      const policyOf = (docs: any[]) => docs.find((d: any) => d.kind === "ValidatingAdmissionPolicy");
      const policy = policyOf(render(...JOBS));
      // The service's account only, on a create or on an update that changes the pod template (a raise of
      // parallelism leaves it as admitted); in cluster mode the operator's.
      expect(policy.spec.matchConditions.map((c: any) => c.name)).toEqual(["made-by-the-service", "a-new-pod-template"]);
      expect(policy.spec.matchConditions[0].expression).toContain('"system:serviceaccount:default:r-vehicle-inspection"');
      const cluster = policyOf(render(...JOBS, "mode=cluster"));
      expect(cluster.spec.matchConditions[0].expression).toContain('"system:serviceaccount:default:r-vehicle-inspection-operator"');
      // One rule for each thing pinned, each saying what it holds to.
      expect(policy.spec.validations.map((v: any) => v.message.split(/[:(]/)[0].trim())).toEqual([
        "detection Jobs run as r-vehicle-inspection-detection",
        "detection Jobs mount no service account token",
        "detection Jobs run vehicle-inspection",
        "detection Jobs run one container, inference, and no init or ephemeral containers",
        "detection Jobs run the image's entrypoint with the args [inference] only",
        "detection Jobs share none of the node's namespaces",
        "detection Jobs' containers are privileged only as securityContext sets",
        "detection Jobs run as podSecurityContext's user",
        "detection Jobs' containers set allowPrivilegeEscalation as securityContext does",
        "detection Jobs' containers have the capabilities securityContext sets",
        "detection Jobs keep the confinement podSecurityContext",
        "detection Jobs' containers have the environment the chart renders and no other",
        "detection Jobs mount scratch volumes",
        "detection Jobs read no Secret but the S3 credentials",
      ]);
      // securityContext as the values set it: another user, an added capability, a writable root.
      const rule = (docs: any[], start: string) => policyOf(docs).spec.validations.find((v: any) => v.message.startsWith(start));
      // The environment exactly as the Job template renders it: NODE_OPTIONS would run any code.
      const rendered = render(...JOBS);
      const env = template(rendered).spec!.template!.spec!.containers[0]!.env!.map((e) => `${e.name}=${e.value}`);
      expect(env).toContain("NATS_URL=nats://nats:4222");
      expect(rule(rendered, "detection Jobs' containers have the environment").expression).toContain(`== ${JSON.stringify(env)})`);
      const loosened = render(
        ...JOBS,
        "podSecurityContext.runAsUser=2000",
        "securityContext.capabilities.add={NET_BIND_SERVICE}",
        "securityContext.readOnlyRootFilesystem=false",
      );
      const user = rule(loosened, "detection Jobs run as podSecurityContext's user");
      expect(user.expression).toContain("variables.pod.?securityContext.?runAsUser == optional.of(2000)");
      expect(user.message).toContain("runAsNonRoot true, runAsUser 2000, runAsGroup 1000");
      expect(rule(loosened, "detection Jobs' containers have the capabilities").expression).toContain(
        'c.?securityContext.?capabilities.?add == optional.of(["NET_BIND_SERVICE"])',
      );
      expect(rule(loosened, "detection Jobs keep the confinement").expression).toContain(
        "c.?securityContext.?readOnlyRootFilesystem == optional.of(false)",
      );
      // What the values leave out must be left out: no capability added by default, no privileged.
      expect(rule(render(...JOBS), "detection Jobs' containers have the capabilities").expression).toContain(
        "!c.?securityContext.?capabilities.?add.hasValue()",
      );
      expect(rule(render(...JOBS), "detection Jobs' containers are privileged").expression).toContain(
        "c.?securityContext.?privileged.orValue(false) == false",
      );
    });

    it("refuses Jobs without NATS or S3, and a NATS URL that is not one, saying why", () => {
      const refused = (...set: string[]) =>
        spawnSync(helm, ["template", "r", CHART, ...set.flatMap((s) => ["--set", s])], { encoding: "utf8" }).stderr;
      expect(refused(...JOBS.filter((v) => !v.startsWith("nats.")))).toContain("detection.jobs needs nats.url");
      expect(refused(...JOBS.filter((v) => !v.startsWith("s3.")))).toContain("detection.jobs needs s3.bucket");
      expect(refused(...JOBS, "nats.url=http://nats:4222")).toContain("/nats/url");
      expect(refused(...JOBS, "detection.jobs.gpu=1")).toContain("additional properties 'gpu' not allowed");
    });
  });

  it("keeps the inspections as Inspection resources by default: the service told so, and allowed what the store does", () => {
    const docs = render("publicUrl=https://inspect.example.com", "inspectionResources.retentionHours=48");
    const service = docs.find((d: any) => d.kind === "StatefulSet").spec.template.spec.containers[0];
    expect(service.env).toContainEqual({ name: "INSPECTION_STORE", value: "kubernetes" });
    expect(service.env.some((e: any) => e.name === "INSPECTION_RESOURCES")).toBe(false);
    expect(service.env).toContainEqual({ name: "INSPECTION_RESOURCES_RETENTION_SECONDS", value: "172800" });
    expect(service.env).toContainEqual({ name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } });
    expect(docs.find((d: any) => d.kind === "Role").rules).toEqual([
      {
        apiGroups: ["inspection.dev"],
        resources: ["inspections", "inspectionrecords"],
        verbs: ["get", "list", "watch", "create", "update", "delete"],
      },
      { apiGroups: ["inspection.dev"], resources: ["inspections/status", "inspectionrecords/status"], verbs: ["update"] },
      { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
    ]);
    // Off: SQLite on the volume, as a laptop runs it.
    const off = render("publicUrl=https://inspect.example.com", "inspectionResources.enabled=false");
    const plainEnv = off.find((d: any) => d.kind === "StatefulSet").spec.template.spec.containers[0].env;
    expect(plainEnv.some((e: any) => e.name === "INSPECTION_STORE")).toBe(false);
    expect(docs.find((d: any) => d.kind === "ServiceAccount").automountServiceAccountToken).toBe(true);
  });

  describe("cluster mode", () => {
    const CLUSTER = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos"];
    const container = (docs: any[], name: string) =>
      docs.find((d) => d.kind === "Deployment" && d.metadata.name === name).spec.template.spec;

    it("runs api, operator and inference Deployments over the Inspection resources, and no StatefulSet", () => {
      const docs = render(...CLUSTER, "inspectionResources.retentionHours=48");
      expect(docs.filter((d: any) => d.kind === "Deployment").map((d: any) => [d.metadata.name, d.spec.replicas])).toEqual([
        ["r-vehicle-inspection-api", 2],
        ["r-vehicle-inspection-inference", 1],
        ["r-vehicle-inspection-operator", 2],
      ]);
      expect(docs.some((d: any) => d.kind === "StatefulSet")).toBe(false);
      const api = container(docs, "r-vehicle-inspection-api");
      const operator = container(docs, "r-vehicle-inspection-operator");
      const inference = container(docs, "r-vehicle-inspection-inference");
      expect([api, operator, inference].map((p) => p.containers[0].args)).toEqual([["api"], ["operator"], ["inference"]]);
      for (const pod of [api, operator]) {
        const env = pod.containers[0].env;
        expect(env).toContainEqual({ name: "INSPECTION_STORE", value: "kubernetes" });
        expect(env).toContainEqual({ name: "INSPECTION_RESOURCES_RETENTION_SECONDS", value: "172800" });
        expect(env).toContainEqual({ name: "NATS_URL", value: "nats://nats:4222" });
        expect(env).toContainEqual({ name: "S3_BUCKET", value: "vi-photos" });
        expect(env).toContainEqual({ name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } });
        expect(env.some((e: any) => e.name === "INSPECTION_RESOURCES")).toBe(false);
      }
      expect(operator.containers[0].env).toContainEqual({ name: "OPERATOR_LEASE_BACKEND", value: "kubernetes" });
      expect(operator.containers[0].env).toContainEqual({ name: "OPERATOR_LEASE_NAME", value: "r-vehicle-inspection-operator" });
      // Each its own account: the workers' mounts no token.
      expect([api, operator, inference].map((p) => p.serviceAccountName)).toEqual([
        "r-vehicle-inspection-api",
        "r-vehicle-inspection-operator",
        "r-vehicle-inspection-inference",
      ]);
      const accounts = docs.filter((d: any) => d.kind === "ServiceAccount");
      expect(accounts.map((a: any) => [a.metadata.name, a.automountServiceAccountToken])).toEqual([
        ["r-vehicle-inspection-api", true],
        ["r-vehicle-inspection-operator", true],
        ["r-vehicle-inspection-inference", false],
      ]);
      // The api drains before it stops; probes on its HTTP port, the others' on their metrics port.
      expect(api.containers[0].lifecycle.preStop.sleep.seconds).toBe(5);
      expect(api.containers[0].readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
      expect(operator.containers[0].readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
      // Only the api's pods behind the client-facing Service.
      const service = docs.find((d: any) => d.kind === "Service" && d.metadata.name === "r-vehicle-inspection");
      expect(service.spec.selector["app.kubernetes.io/component"]).toBe("api");
      expect(docs.filter((d: any) => d.kind === "PodDisruptionBudget").map((d: any) => [d.metadata.name, d.spec.maxUnavailable])).toEqual([
        ["r-vehicle-inspection-api", 1],
        ["r-vehicle-inspection-operator", 1],
      ]);
    });

    it("writes status from the operator's account only, and gives the api's what it writes on the resource", () => {
      const roles = Object.fromEntries(
        render(...CLUSTER)
          .filter((d: any) => d.kind === "Role")
          .map((d: any) => [d.metadata.name, d.rules]),
      );
      expect(roles["r-vehicle-inspection-api"]).toEqual([
        {
          apiGroups: ["inspection.dev"],
          resources: ["inspections", "inspectionrecords"],
          verbs: ["get", "list", "watch", "create", "update"],
        },
      ]);
      const operator = roles["r-vehicle-inspection-operator"];
      expect(operator).toContainEqual({
        apiGroups: ["inspection.dev"],
        resources: ["inspections/status", "inspectionrecords/status"],
        verbs: ["update"],
      });
      expect(operator).toContainEqual({
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        resourceNames: ["r-vehicle-inspection-operator"],
        verbs: ["get", "watch", "update"],
      });
      expect(operator.some((r: any) => r.resources.includes("jobs"))).toBe(false);
    });

    it("makes detection Jobs from the operator, owned by its Deployment, and then runs no inference Deployment", () => {
      const docs = render(...CLUSTER, "detection.jobs.enabled=true");
      expect(docs.filter((d: any) => d.kind === "Deployment").map((d: any) => d.metadata.name)).toEqual([
        "r-vehicle-inspection-api",
        "r-vehicle-inspection-operator",
      ]);
      const operator = container(docs, "r-vehicle-inspection-operator");
      expect(operator.containers[0].env).toContainEqual({ name: "DETECTION_JOB_OWNER", value: "Deployment/r-vehicle-inspection-operator" });
      expect(operator.volumes).toContainEqual({ name: "detection-job", configMap: { name: "r-vehicle-inspection-detection-job" } });
      const rules = docs.find((d: any) => d.kind === "Role" && d.metadata.name === "r-vehicle-inspection-operator").rules;
      expect(rules).toContainEqual({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["list", "create", "patch"] });
      expect(rules).toContainEqual({
        apiGroups: ["apps"],
        resources: ["deployments"],
        resourceNames: ["r-vehicle-inspection-operator"],
        verbs: ["get"],
      });
    });

    it("refuses cluster mode without NATS or S3, and a mode it does not know, saying why", () => {
      const refused = (...set: string[]) =>
        spawnSync(helm, ["template", "r", CHART, ...set.flatMap((s) => ["--set", s])], { encoding: "utf8" }).stderr;
      expect(refused(...CLUSTER.filter((v) => !v.startsWith("nats.")))).toContain("mode=cluster needs nats.url");
      expect(refused(...CLUSTER.filter((v) => !v.startsWith("s3.")))).toContain("mode=cluster needs s3.bucket");
      expect(refused(...CLUSTER, "mode=replicated")).toContain("/mode");
      expect(refused(...CLUSTER, "api.replica=3")).toContain("additional properties 'replica' not allowed");
    });
  });
});
