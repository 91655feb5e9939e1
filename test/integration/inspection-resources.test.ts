import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResourceCache } from "../../core/adapters/kubernetes/resource-cache.ts";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { newId } from "../../core/domain/ids.ts";
import { INSPECTION_RESOURCE as WHERE } from "../../core/schemas/inspection-resource.ts";
import { METRIC } from "../../core/runtime/metrics.ts";
import { systemClock } from "../../core/runtime/time.ts";
import { inspectionCache } from "../../core/adapters/kubernetes/inspection-cache.ts";
import { InspectionProjector } from "../../operator/inspection-projector.ts";
import type { InspectionResource } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { DEFAULT_STEPS } from "../../core/domain/capture-plan.ts";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until } from "../helpers/webhook-receiver.ts";
import { sample } from "../helpers/prometheus.ts";
import { photograph, submit } from "../helpers/walkaround.ts";

const RETENTION_S = 15;

/**
 * The Inspection resources kept for the service's inspections, against a real kube-apiserver: the
 * service (`start`, as the chart runs it) with INSPECTION_RESOURCES makes one per inspection, keeps
 * its status with the record's, takes a cancel set on its spec with kubectl, rides out writes racing
 * its own (409s), and prunes a finished one after the retention while the API still serves it.
 */
describe("Inspection resources kept by the service", () => {
  let k: ControlPlane;
  let service: ServiceProcess;
  let dir: string;
  let url: string;
  let key: string;

  beforeAll(async () => {
    k = await startControlPlane();
    await k.installCrds();
    dir = mkdtempSync(join(tmpdir(), "vi-resources-"));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const env = {
      DATA_DIR: dir,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: url,
      KUBECONFIG: k.kubeconfig,
      INSPECTION_RESOURCES: "true",
      INSPECTION_RESOURCES_RETENTION_SECONDS: String(RETENTION_S),
      CONTROLLER_POLL_MS: "100",
      LOG_LEVEL: "debug",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    };
    service = new ServiceProcess(env);
    await service.line((l) => l.msg === "vehicle inspection service started", 60_000);
    key = await createKey(loadConfig(env), "test", "resources-co");
  }, 240_000);

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
    expect(service.logs.some((l) => l.msg === "finished inspection's resource pruned" && l.inspection_id === id)).toBe(true);
    // The cache of resources is watched: it heard from the API server moments ago.
    const port = (await service.line((l) => typeof l.metrics_port === "number")).metrics_port;
    const staleness = sample(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), METRIC.informerStaleness, {
      resource: "inspections",
    });
    expect(staleness).toBeGreaterThanOrEqual(0);
    expect(staleness).toBeLessThan(60);
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

  it("rides out a storm of status writes racing its own (409s): each overwrite is made right again, and it ends as the record says", async () => {
    const { id, name, capture } = await create("resources-storm");
    await until(
      "the resource",
      () => resource(name),
      (r) => r !== null,
      30_000,
    );
    const conflicts = () => service.logs.filter((l) => l.msg === "inspection resource changed since read; again").length;
    const before = conflicts();
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
    const written = service.logs.filter((l) => l.msg === "inspection resource status written" && l.inspection_id === id).length;
    console.log(
      `storm: ${overwrites} status overwrites and ${relabels} label changes; the service's status writes: ${written} made, ${conflicts() - before} refused with 409 and retried`,
    );
    // The storm did refuse some of its writes: what is shown is the retry, not a quiet moment.
    expect(conflicts() - before).toBeGreaterThan(0);
  });

  it("a status write on a version someone else has replaced since is refused (409), and made once the cache has the new one", async () => {
    await k.kubectl("create", "namespace", "vi-conflict");
    const state = new MemoryState();
    const store = new MemoryInspectionStore(state);
    const kc = new KubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const projector = (cache: ResourceCache<InspectionResource>) =>
      new InspectionProjector({
        store,
        api,
        cache,
        namespace: "vi-conflict",
        retentionMs: 60_000,
        pollMs: 60_000,
        clock: systemClock,
        log: pino({ level: "silent" }),
      });
    const cacheOf = async () => {
      const cache = inspectionCache(kc, "vi-conflict", { relistMs: 60_000 });
      await cache.start();
      return cache;
    };
    const r = sampleInspection();
    await store.create(r, "hash-409", () => ({ id: newId("evt"), type: "inspection.created", data: "{}" }));
    const frozen = await cacheOf();
    const first = projector(frozen);
    await first.reconcile(r.id);
    const name = r.id.replace("_", "-");
    expect(JSON.parse(await k.kubectl("get", "-n", "vi-conflict", "inspection", name, "-o", "json")).status.phase).toBe("created");
    // The cache stops hearing; someone else writes; the record moves.
    await frozen.stop();
    await k.kubectl("label", "-n", "vi-conflict", "inspection", name, "touched=yes");
    await store.transition(r.id, "created", "canceled", Date.now(), { canceledAt: Date.now() }, () => ({
      id: newId("evt"),
      type: "inspection.canceled",
      data: "{}",
    }));
    const refused = await first.reconcile(r.id).catch((e: unknown) => e);
    expect((refused as { code?: number }).code).toBe(409);
    // With a cache that has the new version, the same reconcile goes through.
    const fresh = await cacheOf();
    await projector(fresh).reconcile(r.id);
    await fresh.stop();
    const after = JSON.parse(await k.kubectl("get", "-n", "vi-conflict", "inspection", name, "-o", "json"));
    expect([after.status.phase, after.metadata.labels.touched]).toEqual(["canceled", "yes"]);
  });

  it("starts and serves while the API server cannot be reached, saying so", async () => {
    const away = join(dir, "kubeconfig-away");
    const config = JSON.parse(readFileSync(k.kubeconfig, "utf8"));
    config.clusters[0].cluster.server = `https://127.0.0.1:${await freePort()}`;
    writeFileSync(away, JSON.stringify(config));
    const port = await freePort();
    const lonely = new ServiceProcess({
      DATA_DIR: join(dir, "away"),
      PORT: String(port),
      HOST: "127.0.0.1",
      KUBECONFIG: away,
      INSPECTION_RESOURCES: "true",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
    });
    try {
      await lonely.line((l) => l.msg === "vehicle inspection service started", 60_000);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      await lonely.line((l) => l.msg === "listing or watching Inspection resources failed; again", 30_000);
    } finally {
      expect(await lonely.stop()).toBe(0);
    }
  });
});
