import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectionResource } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { INSPECTION_RESOURCE as WHERE } from "../../core/schemas/inspection-resource.ts";
import { METRIC } from "../../core/runtime/metrics.ts";
import { DEFAULT_STEPS } from "../../core/domain/capture-plan.ts";
import { MOVED_MARKER } from "../../bin/commands/move-sqlite-inspections.ts";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until } from "../helpers/webhook-receiver.ts";
import { sample } from "../helpers/prometheus.ts";
import { photograph, submit } from "../helpers/walkaround.ts";

const RETENTION_S = 15;
const run = promisify(execFile);
const CLI = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");

/**
 * Embedded mode in Kubernetes, as the chart runs it (`start`, one pod, INSPECTION_STORE=kubernetes
 * without NATS or S3), against a real kube-apiserver: the Inspection resources are the store, as in
 * cluster mode, while keys and photos stay under DATA_DIR. The inspections an earlier release kept
 * in its SQLite store (with a copy of each as a resource) are moved into the resources at the first
 * start; then each inspection's resource follows it, takes a cancel set with kubectl, rides out status
 * writes racing its own, and is archived and pruned after the retention while the API still serves it.
 */
describe("embedded mode: the Inspection resources are the store", () => {
  let k: ControlPlane;
  let service: ServiceProcess;
  let dir: string;
  let url: string;
  let key: string;
  let env: Record<string, string>;
  /** Made by the SQLite release before: one completed (with its copy as a resource), one still open. */
  let before: { completed: string; open: { id: string; capture: string } };

  beforeAll(async () => {
    k = await startControlPlane();
    await k.installCrds();
    dir = mkdtempSync(join(tmpdir(), "vi-resources-"));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      DATA_DIR: dir,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: url,
      KUBECONFIG: k.kubeconfig,
      INSPECTION_RESOURCES_RETENTION_SECONDS: String(RETENTION_S),
      CONTROLLER_POLL_MS: "100",
      LOG_LEVEL: "debug",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    };
    key = await createKey(loadConfig(env), "test", "resources-co");

    // The release before: inspections in SQLite, and the copy its projector kept of one as a resource.
    const sqlite = new ServiceProcess({ ...env, INSPECTION_STORE: "sqlite" });
    await sqlite.line((l) => l.msg === "vehicle inspection service started", 60_000);
    const completed = await create("before-completed");
    await submitted(completed.capture);
    await until(
      "completed in SQLite",
      async () => (await (await api(`/v1/inspections/${completed.id}`)).json()).status,
      (st) => st === "completed",
      60_000,
    );
    const open = await create("before-open");
    expect(await sqlite.stop()).toBe(0);
    const db = openDatabase(dir);
    const record = await new SqliteInspectionStore(db).getById(completed.id);
    db.close();
    const copy = inspectionResource(record!, "default");
    await k.kubectl("create", "-f", writeJson(join(dir, "copy.json"), copy));
    before = { completed: completed.id, open: { id: open.id, capture: open.capture } };

    service = new ServiceProcess({ ...env, INSPECTION_STORE: "kubernetes" });
    await service.line((l) => l.msg === "vehicle inspection service started", 60_000);
  }, 300_000);

  afterAll(async () => {
    expect(await service?.stop()).toBe(0);
    await k?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = (path: string, init: RequestInit = {}) =>
    fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
  const create = async (reference: string) => {
    const made = await (
      await api("/v1/inspections", { method: "POST", body: JSON.stringify({ reference, vehicle: { vin: VALID_VIN } }) })
    ).json();
    return {
      id: made.id as string,
      name: (made.id as string).replace("_", "-"),
      capture: made.capture_url.replace("/c/", "/capture/v1/") as string,
    };
  };
  const resource = async (name: string) => {
    const r = await k.kubectlResult(["get", "inspection", name, "-o", "json"]);
    return r.code === 0 ? JSON.parse(r.stdout) : null;
  };
  const writeJson = (path: string, value: unknown) => {
    writeFileSync(path, JSON.stringify(value));
    return path;
  };
  const submitted = async (base: string) => {
    await photograph({ base });
    await submit({ base });
  };

  /** The resource once it shows the inspection completed, graded as photos with no damage model are. */
  const completed = async (name: string) => {
    const done = await until(
      "the resource completed",
      () => resource(name),
      (r) => r?.status?.phase === "completed",
      60_000,
    );
    expect(done.status).toMatchObject({ grade: "none", findings: 0 });
    return done;
  };

  it("moves the inspections the SQLite release kept into the resources at its first start: served, recorded, the capture link still working", async () => {
    const moved = await service.line((l) => l.msg === "the SQLite store's inspections are in the Inspection resources");
    // Both copied; the projector's copy of the completed one replaced by the store's own.
    expect([moved.copied, moved.copies_replaced]).toEqual([2, 1]);
    expect(JSON.parse(readFileSync(join(dir, MOVED_MARKER), "utf8"))).toMatchObject({ namespace: "default", inspections: 2 });

    // The open one: an Inspection with its record and the archive finalizer, its status shown.
    const open = before.open.id.replace("_", "-");
    const made = await until(
      "the open inspection's resource",
      () => resource(open),
      (r) => r?.status?.phase === "created",
      30_000,
    );
    expect(made.metadata.finalizers).toEqual(["inspection.dev/archive"]);
    expect((await k.kubectlResult(["get", "inspectionrecord", open])).code).toBe(0);
    // The link the customer was sent before the move still works, to the end.
    await submitted(before.open.capture);
    await completed(open);

    // The completed one is served as it was, then archived and pruned after the retention, and served still.
    const served = async () => (await (await api(`/v1/inspections/${before.completed}`)).json()).status;
    expect(await served()).toBe("completed");
    expect((await api(`/v1/inspections/${before.completed}/report`)).status).toBe(200);
    await until(
      "the moved inspection pruned",
      () => resource(before.completed.replace("_", "-")),
      (r) => r === null,
      (RETENTION_S + 15) * 1000,
    );
    expect(await served()).toBe("completed");
    expect((await api(`/v1/inspections/${before.completed}/report`)).status).toBe(200);
  });

  it("makes the resource when the inspection is made, follows it to completed, and prunes it after the retention while the API still serves it", async () => {
    const { id, name, capture } = await create("resources-1");
    const made = await until(
      "the resource",
      () => resource(name),
      (r) => r?.status?.phase === "created",
      30_000,
    );
    expect(made.spec).toEqual({
      reference: "resources-1",
      vehicle: { vin: VALID_VIN },
      // What the customer is asked for, the defaults filled in (the browser's locale: none).
      capture: { steps: DEFAULT_STEPS, closeups: "optional" },
      accountId: expect.stringMatching(/^acct_/),
      livemode: false,
    });
    expect(made.metadata.labels).toEqual({ "inspection.dev/account": made.spec.accountId, "inspection.dev/livemode": "false" });
    expect(made.status.conditions.map((c: { type: string; status: string; reason: string }) => [c.type, c.status, c.reason])).toEqual([
      ["Submitted", "False", "AwaitingPhotos"],
      ["ReportReady", "False", "AwaitingSubmission"],
      ["Reviewed", "False", "NotCompleted"],
    ]);
    expect(made.status.observedGeneration).toBe(made.metadata.generation);

    await submitted(capture);
    const done = await completed(name);
    expect(done.status.conditions.find((c: { type: string }) => c.type === "ReportReady")).toMatchObject({
      status: "True",
      reason: "Completed",
    });
    const table = await k.kubectl("get", "inspections");
    console.log(`kubectl get inspections (the service's own):\n${table}`);
    expect(table).toMatch(new RegExp(`${name}\\s+completed\\s+none\\s+0\\s+required\\s+${VALID_VIN}\\s+resources-1`));

    // Pruned once finished for the retention; the record and report stay.
    await until(
      "the resource pruned",
      () => resource(name),
      (r) => r === null,
      (RETENTION_S + 10) * 1000,
    );
    expect((await (await api(`/v1/inspections/${id}`)).json()).status).toBe("completed");
    expect((await api(`/v1/inspections/${id}/report`)).status).toBe(200);
    expect(
      service.logs.some((l) => l.msg === "finished inspection's resource pruned; its record is archived" && l.inspection_id === id),
    ).toBe(true);
    // The cache of resources is watched: it heard from the API server moments ago.
    const port = (await service.line((l) => typeof l.metrics_port === "number")).metrics_port;
    const staleness = sample(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), METRIC.informerStaleness, {
      resource: "inspections",
    });
    expect(staleness).toBeGreaterThanOrEqual(0);
    expect(staleness).toBeLessThan(60);
    // Its requests to the API server, each counted by verb and code: the cache's list and watch, the
    // resources made (201) and their status written.
    const scraped = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    console.log(
      scraped
        .split("\n")
        .filter((l) => l.startsWith(`${METRIC.kubernetesRequests}{`) || l.startsWith(`${METRIC.reconciles}{`))
        .join("\n"),
    );
    expect(sample(scraped, METRIC.kubernetesRequests, { verb: "GET", code: "200" })).toBeGreaterThanOrEqual(1);
    expect(sample(scraped, METRIC.kubernetesRequests, { verb: "WATCH", code: "200" })).toBeGreaterThanOrEqual(1);
    expect(sample(scraped, METRIC.kubernetesRequests, { verb: "POST", code: "201" })).toBeGreaterThanOrEqual(1);
    expect(sample(scraped, METRIC.kubernetesRequests, { verb: "PUT", code: "200" })).toBeGreaterThanOrEqual(1);
    expect(sample(scraped, METRIC.reconciles, { controller: "inspection", result: "success" })).toBeGreaterThanOrEqual(1);
  });

  it("cancels the inspection when a platform team sets spec.cancelRequested with kubectl", async () => {
    const { id, name } = await create("resources-cancel");
    await until(
      "the resource",
      () => resource(name),
      (r) => r?.status?.phase === "created",
      30_000,
    );
    await k.kubectl("patch", "inspection", name, "--type=merge", "-p", JSON.stringify({ spec: { cancelRequested: true } }));
    await until(
      "canceled through the API",
      async () => (await (await api(`/v1/inspections/${id}`)).json()).status,
      (s) => s === "canceled",
      30_000,
    );
    const canceled = await until(
      "the resource canceled",
      () => resource(name),
      (r) => r?.status?.phase === "canceled",
      30_000,
    );
    expect(canceled.status.conditions.map((c: { reason: string }) => c.reason)).toEqual(["Canceled", "Canceled", "NotCompleted"]);
  });

  it("rides out a storm of status writes racing its own: each overwrite is made right again, and it ends as the record says", async () => {
    const { name, capture } = await create("resources-storm");
    await until(
      "the resource",
      () => resource(name),
      (r) => r !== null,
      30_000,
    );
    // Other writers for 3 s while the inspection moves: two loops overwriting the status, two changing
    // a label (each change a new resourceVersion, so a status write made from an older one is refused).
    const kc = new KubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const rogue = kc.makeApiClient(CustomObjectsApi);
    const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
    const until3s = Date.now() + 3_000;
    let overwrites = 0;
    let relabels = 0;
    const storm = Promise.all([
      ...Array.from({ length: 2 }, async () => {
        while (Date.now() < until3s) {
          await rogue.patchNamespacedCustomObjectStatus(
            { ...WHERE, namespace: "default", name, body: { status: { phase: "failed" } } },
            merge,
          );
          overwrites++;
        }
      }),
      ...Array.from({ length: 2 }, async () => {
        while (Date.now() < until3s) {
          const body = { metadata: { labels: { storm: String(++relabels) } } };
          await rogue.patchNamespacedCustomObject({ ...WHERE, namespace: "default", name, body }, merge);
        }
      }),
    ]);
    await submitted(capture);
    await storm;
    await completed(name);
    // It stays so: the storm is over and nothing writes it back.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await resource(name)).status.phase).toBe("completed");
    const port = (await service.line((l) => typeof l.metrics_port === "number")).metrics_port;
    const scraped = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const conflicts = sample(scraped, METRIC.kubernetesRequests, { verb: "PUT", code: "409" }) ?? 0;
    console.log(
      `storm: ${overwrites} status overwrites and ${relabels} label changes; the service's writes refused with 409: ${conflicts}`,
    );
    // The storm did overwrite the status: what is shown is it made right again, not a quiet moment.
    expect(overwrites).toBeGreaterThan(0);
  });

  // Last of the service's tests: it takes the CRDs away.
  it("loses nothing to kubectl delete crd: each inspection archived by its finalizer, served meanwhile, made live again by restore", async () => {
    const open = await create("resources-crd");
    await until(
      "the resource",
      () => resource(open.name),
      (r) => r?.status?.phase === "created",
      30_000,
    );
    // With the service running: each Inspection and record is held by its finalizer until archived.
    await k.kubectl("delete", "crd", "inspections.inspection.dev", "inspectionrecords.inspection.dev", "--timeout=120s");
    const served = async () => (await api(`/v1/inspections/${open.id}`)).json();
    expect((await served()).status).toBe("created");

    // Run before the CRDs are back, restore says so and ends, rather than waiting on lists that never come.
    const early = await run(process.execPath, [CLI, "restore"], { env: { ...process.env, ...env, INSPECTION_STORE: "kubernetes" } }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(early?.code).toBe(1);
    expect(early?.stderr).toContain("does not serve inspections.inspection.dev (404): put the CRDs back first");
    // The CRDs back (helm upgrade), then the archive made live again, with the service's own environment.
    await k.installCrds();
    const { stdout } = await run(process.execPath, [CLI, "restore"], { env: { ...process.env, ...env, INSPECTION_STORE: "kubernetes" } });
    console.log(`vehicle-inspection restore:\n${stdout}`);
    expect(stdout).toContain(`restored ${open.id} (created)`);
    // A re-run restores nothing twice.
    const again = await run(process.execPath, [CLI, "restore"], { env: { ...process.env, ...env, INSPECTION_STORE: "kubernetes" } });
    expect(again.stdout).toMatch(/^0 restored/m);
    // Its record is back in an InspectionRecord, and the customer's link works to the end.
    await until(
      "the restored inspection's record",
      async () => (await k.kubectlResult(["get", "inspectionrecord", open.name])).code,
      (code) => code === 0,
      30_000,
    );
    await submitted(open.capture);
    await completed(open.name);
    expect((await served()).status).toBe("completed");
  });

  it("waits for an API server it cannot reach: alive, not ready, saying so", async () => {
    const away = join(dir, "kubeconfig-away");
    const config = JSON.parse(readFileSync(k.kubeconfig, "utf8"));
    config.clusters[0].cluster.server = `https://127.0.0.1:${await freePort()}`;
    writeFileSync(away, JSON.stringify(config));
    const probes = await freePort();
    const lonely = new ServiceProcess({
      DATA_DIR: join(dir, "away"),
      PORT: String(await freePort()),
      METRICS_PORT: String(probes),
      HOST: "127.0.0.1",
      KUBECONFIG: away,
      INSPECTION_STORE: "kubernetes",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    });
    try {
      await lonely.line((l) => l.msg === "listing or watching Inspection resources failed; again", 30_000);
      expect((await fetch(`http://127.0.0.1:${probes}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${probes}/readyz`)).status).toBe(503);
      expect(lonely.logs.some((l) => l.msg === "vehicle inspection service started")).toBe(false);
    } finally {
      expect(await lonely.stop()).toBe(0);
    }
  });
});
