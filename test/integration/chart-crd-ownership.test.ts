import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, kubeTools, startControlPlane } from "../helpers/kube-control-plane.ts";

const run = promisify(execFile);
const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");
const CRD = "inspections.inspection.dev";

/**
 * The CRDs as Helm meets them on a real API server. Releases before kept the CRD in the chart's
 * crds/ folder, which Helm installs with no ownership metadata; the chart now renders it as a
 * template (so it upgrades), and Helm refuses to take over an object another release or no release
 * made. The way over, as the chart's README and docs/cluster-and-kubernetes.md say: the first
 * upgrade with --take-ownership --force-conflicts; a second release in another namespace with
 * crds.install=false.
 */
describe("the chart's CRDs and Helm's ownership", () => {
  let k: ControlPlane;
  let chart: string;
  beforeAll(async () => {
    k = await startControlPlane();
    // The API server built from source says it is v0.0.0-master, which no kubeVersion admits.
    chart = join(mkdtempSync(join(tmpdir(), "vi-chart-")), "vehicle-inspection");
    cpSync(CHART, chart, { recursive: true });
    const meta = join(chart, "Chart.yaml");
    writeFileSync(meta, readFileSync(meta, "utf8").replace(/^kubeVersion:.*$/m, ""));
  }, 240_000);
  afterAll(() => k?.close());

  const helm = (namespace: string, ...args: string[]) =>
    run(kubeTools().helm, [...args, "--kubeconfig", k.kubeconfig, "--namespace", namespace], { encoding: "utf8" }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
    );

  it("takes over the CRDs a crds/ release left, keeping the Inspections; a second release leaves them to the first", async () => {
    // What a release with crds/ leaves: the CRDs as they are, no Helm labels or annotations.
    await k.installCrds();
    await k.kubectl("create", "namespace", "vi-old");
    const kept = {
      apiVersion: "inspection.dev/v1",
      kind: "Inspection",
      metadata: { name: "insp-kept", namespace: "vi-old" },
      spec: { vehicle: { vin: "1HGCM82633A004352" }, accountId: "acct_test", livemode: false },
    };
    const made = await k.kubectlResult(["create", "-f", "-"], JSON.stringify(kept));
    expect(made.code, made.stderr).toBe(0);
    const values = ["--set", "publicUrl=https://inspect.example.com"];

    // Without a word, Helm refuses: the CRD is not the release's.
    const refused = await helm("vi-old", "install", "r", chart, ...values);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toMatch(
      /CustomResourceDefinition "inspections\.inspection\.dev".*(invalid ownership metadata|cannot be imported|exists)/s,
    );

    // The first upgrade (here an install over the kept data) with --take-ownership, and
    // --force-conflicts: Helm 4 applies server-side, and the CRD's fields belong to whoever applied it.
    const taken = await helm("vi-old", "upgrade", "--install", "r", chart, "--take-ownership", "--force-conflicts", ...values);
    expect(taken.code, taken.out).toBe(0);
    const crd = JSON.parse(await k.kubectl("get", "crd", CRD, "-o", "json"));
    expect(crd.metadata.annotations).toMatchObject({
      "meta.helm.sh/release-name": "r",
      "meta.helm.sh/release-namespace": "vi-old",
      "helm.sh/resource-policy": "keep",
    });
    expect((await k.kubectlResult(["get", "inspection", "-n", "vi-old", "insp-kept"])).code).toBe(0);
    // From then on plain upgrades go through.
    expect((await helm("vi-old", "upgrade", "r", chart, ...values)).code).toBe(0);

    // A second release in another namespace cannot own the same CRDs; with crds.install=false it uses them.
    await k.kubectl("create", "namespace", "vi-second");
    const clash = await helm("vi-second", "install", "s", chart, ...values);
    expect(clash.code).not.toBe(0);
    expect(clash.out).toMatch(/inspections\.inspection\.dev/);
    const second = await helm("vi-second", "install", "s", chart, ...values, "--set", "crds.install=false");
    expect(second.code, second.out).toBe(0);

    // Uninstalled, the release leaves the CRDs (and so every Inspection) in place.
    expect((await helm("vi-second", "uninstall", "s")).code).toBe(0);
    expect((await helm("vi-old", "uninstall", "r")).code).toBe(0);
    expect((await k.kubectlResult(["get", "crd", CRD])).code).toBe(0);
    expect((await k.kubectlResult(["get", "inspection", "-n", "vi-old", "insp-kept"])).code).toBe(0);
  });
});
