import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CountedKubeConfig } from "../../bin/commands/kube-config.ts";
import { InspectionRecords } from "../../core/adapters/kubernetes/inspection-records.ts";
import { ATTEMPTS_KEPT, KubernetesEventStore } from "../../core/adapters/kubernetes/kubernetes-event-store.ts";
import { KubernetesInspectionStore } from "../../core/adapters/kubernetes/kubernetes-inspection-store.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { newId } from "../../core/domain/ids.ts";
import { findInspection } from "../../core/operations/inspections.ts";
import type { MediaRecord, PhotoRecord } from "../../core/ports/records.ts";
import { Metrics } from "../../core/runtime/metrics.ts";
import type { Services } from "../../core/runtime/services.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { countedSince, kubernetesRequestsCounted } from "../helpers/prometheus.ts";
import { until } from "../helpers/webhook-receiver.ts";

const event =
  (type = "inspection.created") =>
  () => ({ id: newId("evt"), type, data: "{}" });
const scope = { accountId: "acct_a", livemode: false };

/**
 * What the InspectionStore contract does not reach in the Kubernetes store, on a real
 * kube-apiserver: two replicas writing one inspection at once (409s, made again), a cancel set with
 * kubectl, and pruning to the archive, which refuses to delete what changed after it was archived.
 */
describe("the Kubernetes inspection store beyond its contract", () => {
  let k: ControlPlane;
  let kc: KubeConfig;
  const opened: InspectionRecords[] = [];
  let namespaces = 0;
  const archive = new MemoryBlobStore();

  /** Two replicas' records over a new namespace. */
  const replicas = async () => {
    const namespace = `store-${++namespaces}`;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const two = await Promise.all([0, 1].map(() => InspectionRecords.open(kc, namespace, { archive })));
    opened.push(...two);
    return { namespace, a: two[0]!, b: two[1]! };
  };

  beforeAll(async () => {
    k = await startControlPlane();
    await k.installCrds();
    kc = new KubeConfig();
    kc.loadFromFile(k.kubeconfig);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(opened.map((r) => r.close()));
    await k?.close();
  });

  const photoOf = (inspectionId: string, angle: string): [PhotoRecord, MediaRecord] => {
    const mediaId = newId("med");
    const quality = { brightness: 0.5, sharpness: 100, glare: 0, passed: true, problems: [] };
    const at = Date.now();
    return [
      { inspectionId, angle, slot: null, part: null, mediaId, width: 640, height: 480, quality, tries: 1, capturedAt: at },
      {
        id: mediaId,
        ...scope,
        inspectionId,
        kind: "photo",
        blobKey: `photos/${inspectionId}/${mediaId}.jpg`,
        bytes: 1,
        etag: "e",
        width: 640,
        height: 480,
        createdAt: at,
      },
    ];
  };

  it("lands every write of two replicas racing on one inspection, making each again after a 409", async () => {
    const { a, b } = await replicas();
    const [onA, onB] = [new KubernetesInspectionStore(a), new KubernetesInspectionStore(b)];
    const r = sampleInspection();
    await onA.create(r, "h", event());
    const angles = Array.from({ length: 24 }, (_, i) => `angle_${i}`);
    const results = await Promise.all([
      ...angles.map((angle, i) => (i % 2 ? onA : onB).putPhoto(...photoOf(r.id, angle))),
      onB.recordOpened(r.id, r.createdAt + 1),
      onA.recordVinObserved(r.id, r.vin),
      onB.transition(r.id, "created", "in_progress", r.createdAt + 2, {}, event("inspection.in_progress")),
    ]);
    expect(results.slice(0, angles.length)).toEqual(angles.map(() => ({ accepted: true, replaced: null })));
    expect(a.conflicts + b.conflicts).toBeGreaterThan(0);
    // Each replica's cache gets the last of the writes, whichever it was, a moment later.
    await until(
      "both replicas see every write",
      async () => [await onA.photos(r.id), await onB.photos(r.id), await onA.getById(r.id)] as const,
      ([onAPhotos, onBPhotos, seen]) =>
        onAPhotos.length === angles.length &&
        onBPhotos.length === angles.length &&
        seen?.openedAt !== null &&
        seen?.status === "in_progress",
    );
    const after = (await onA.getById(r.id))!;
    expect(after).toMatchObject({ status: "in_progress", vinObserved: r.vin });
    expect(after.openedAt).not.toBeNull();
    const events = await new KubernetesEventStore(a).forInspection(scope, r.id);
    expect(events.map((e) => e.type)).toEqual(["inspection.created", "inspection.in_progress"]);
  });

  it("reads on one replica what the other made a moment ago, before its own watch brings it", async () => {
    const { a, b } = await replicas();
    const [onA, onB] = [new KubernetesInspectionStore(a), new KubernetesInspectionStore(b)];
    for (let i = 0; i < 10; i++) {
      const r = sampleInspection();
      await onA.create(r, `h${i}`, event());
      expect((await onB.get(scope, r.id))?.id).toBe(r.id);
    }
  });

  it("takes a cancel set on the spec with kubectl as an intent, until the controller has reconciled that generation", async () => {
    const { namespace, a } = await replicas();
    const store = new KubernetesInspectionStore(a);
    const r = sampleInspection();
    await store.create(r, "h", event());
    await k.kubectl(
      "patch",
      "inspection",
      r.id.replace("_", "-"),
      "-n",
      namespace,
      "--type=merge",
      "-p",
      '{"spec":{"cancelRequested":true}}',
    );
    const [due] = await until(
      "the cancel seen",
      () => store.needingReconcile(Date.now(), 10),
      (d) => d.length === 1,
    );
    expect(due!.cancelRequestedAt).not.toBeNull();
    await store.transition(r.id, "created", "canceled", Date.now(), { canceledAt: Date.now() }, event("inspection.canceled"));
    await store.clearReconcile(r.id, due!.reconcileGeneration);
    expect(await store.needingReconcile(Date.now(), 10)).toEqual([]);
    const shown = JSON.parse(await k.kubectl("get", "inspection", r.id.replace("_", "-"), "-n", namespace, "-o", "json"));
    expect(shown.metadata.generation).toBe(2);
    expect(shown.status.observedGeneration).toBe(2);
    expect(shown.status.phase).toBe("canceled");
  });

  it("prunes to the archive only what has not changed since it was archived, and reads it from there after", async () => {
    const { namespace, a, b } = await replicas();
    const store = new KubernetesInspectionStore(a);
    const r = sampleInspection({ status: "completed" });
    await store.create(r, "h", event());
    const [photo, media] = photoOf(r.id, "front");
    const stale = a.byId(r.id)!;
    // A change after the view was read: the prune must not delete what it did not archive.
    await store.recordVinObserved(r.id, r.vin);
    expect(await a.prune(stale)).toBe(false);
    expect((await k.kubectlResult(["get", "inspection", r.id.replace("_", "-"), "-n", namespace])).code).toBe(0);
    expect(a.prunable(r.updatedAt + 1000, 1000).map((v) => v.record.id)).toEqual([r.id]);
    expect(await a.prune(a.byId(r.id)!)).toBe(true);
    await until(
      "the resource gone from the other replica's cache",
      () => b.byId(r.id),
      (v) => v === null,
    );
    const other = new KubernetesInspectionStore(b);
    expect(await other.getById(r.id)).toEqual({ ...r, vinObserved: r.vin });
    const [created] = await new KubernetesEventStore(b).forInspection(scope, r.id);
    expect(created?.type).toBe("inspection.created");
    expect((await new KubernetesEventStore(b).get(scope, created!.id))?.inspectionId).toBe(r.id);
    // A photo could not be taken on a completed inspection: its media is not in the archive.
    expect(await other.putPhoto(photo, media)).toEqual({ accepted: false });
    expect(await other.getMedia(scope, media.id)).toBeNull();
  });

  it("records a vehicle decoded on a replica that did not make the inspection, once its cache has it from the watch", async () => {
    const { a, b } = await replicas();
    const r = sampleInspection();
    await new KubernetesInspectionStore(a).create(r, "h", event());
    // recordVehicle writes only on a record the replica's cache holds: another replica's comes by the watch.
    await until(
      "the inspection in the other replica's cache",
      async () => b.byId(r.id),
      (v) => v !== null,
    );
    const accord = { make: "Honda", model: "Accord", year: 2003 };
    await new KubernetesInspectionStore(b).recordVehicle(r.id, accord);
    await until(
      "the vehicle in the making replica's cache",
      async () => a.byId(r.id)?.record.make,
      (make) => make === "Honda",
    );
    expect(await new KubernetesInspectionStore(a).get(scope, r.id)).toEqual({ ...r, ...accord });
  });

  it("reads a pruned inspection with no vehicle make for the read's own requests alone, though its VIN decodes (nothing to record it on)", async () => {
    const { namespace, a } = await replicas();
    const counted = new CountedKubeConfig();
    counted.loadFromFile(k.kubeconfig);
    const c = await InspectionRecords.open(counted, namespace, { archive });
    opened.push(c);
    const r = sampleInspection({ status: "completed" });
    await new KubernetesInspectionStore(a).create(r, "h", event());
    expect(await a.prune(a.byId(r.id)!)).toBe(true);
    await until(
      "the resource gone from the reading replica's cache",
      async () => c.byId(r.id),
      (v) => v === null,
    );
    // The read's own writes are the background decode's (findInspection): each one is awaited before counting.
    const inspections = new KubernetesInspectionStore(c);
    const writes: Promise<void>[] = [];
    const recordVehicle = inspections.recordVehicle.bind(inspections);
    inspections.recordVehicle = (id, vehicle) => {
      const written = recordVehicle(id, vehicle);
      writes.push(written);
      return written;
    };
    const looked: string[] = [];
    const s = {
      inspections,
      log: pino({ level: "silent" }),
      vin: {
        lookup: async (vin: string) => {
          looked.push(vin);
          return { vehicle: { make: "Honda", model: "Accord", year: 2003 }, later: null };
        },
      },
    } as unknown as Services;
    const metrics = new Metrics("api");
    const get = async () => {
      const before = await kubernetesRequestsCounted(metrics);
      const answered = await findInspection(s, scope, r.id);
      await expect.poll(() => looked.length).toBeGreaterThan(0);
      await new Promise(setImmediate);
      await Promise.allSettled(writes.splice(0));
      looked.length = 0;
      // The process's requests (CountedKubeConfig's) but watches: the reading replica's caches watch meanwhile.
      const made = Object.entries(countedSince(before, await kubernetesRequestsCounted(metrics)));
      return { answered, requests: Object.fromEntries(made.filter(([key]) => !key.startsWith("WATCH "))) };
    };
    const first = await get();
    const second = await get();
    // The client is answered what was archived each time: make, model and year null.
    expect(first.answered).toEqual(r);
    expect(second.answered).toEqual(r);
    // Each read asks the API server for the live resource (Inspection and record, 404 each) before the
    // archive, and no more: the decode's write must not look for them again.
    expect([first.requests, second.requests]).toEqual([{ "GET 404": 2 }, { "GET 404": 2 }]);
  });

  it("lists live and pruned inspections together, in the list's order, with every filter and from any cursor", async () => {
    const { a } = await replicas();
    const store = new KubernetesInspectionStore(a);
    // An account of its own: the archive is shared by the file's tests.
    const mine = { accountId: newId("acct"), livemode: false };
    const t = Math.floor(Date.now() / 1000) * 1000 - 10_000;
    const rows = Array.from({ length: 12 }, (_, i) =>
      sampleInspection({
        ...mine,
        status: i % 3 ? "completed" : "canceled",
        createdAt: t + (i % 3) * 1000 + i,
        updatedAt: t + 3000,
        reference: i % 2 ? "odd" : "even",
      }),
    );
    for (const [i, r] of rows.entries()) await store.create(r, `h${i}`, event());
    // Eight pruned, four still in the cluster, spread over every second.
    for (const r of rows.filter((_, i) => i % 5 < 3 || i === 11)) expect(await a.prune(a.byId(r.id)!)).toBe(true);
    await until(
      "the pruned ones gone from the cache",
      () => a.all().length,
      (n) => n === 4,
    );
    const order = (x: { createdAt: number; id: string }, y: { createdAt: number; id: string }) =>
      Math.floor(y.createdAt / 1000) - Math.floor(x.createdAt / 1000) || (x.id < y.id ? 1 : -1);
    for (const filter of [
      {},
      { reference: "odd" },
      { status: "canceled" as const },
      { createdFrom: t + 1000 },
      { createdBefore: t + 2000 },
    ]) {
      const expected = rows
        .filter((r) =>
          Object.entries(filter).every(([k, v]) =>
            k === "createdFrom"
              ? r.createdAt >= (v as number)
              : k === "createdBefore"
                ? r.createdAt < (v as number)
                : r[k as "status"] === v,
          ),
        )
        .sort(order)
        .map((r) => r.id);
      const seen: string[] = [];
      for (let after: { createdAt: number; id: string } | undefined; ; ) {
        const page = await store.list(mine, { limit: 3, after, ...filter });
        seen.push(...page.map((r) => r.id));
        if (page.length < 3) break;
        after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
      }
      expect(seen, JSON.stringify(filter)).toEqual(expected);
    }
    // A pruned one reads back whole.
    expect(await store.get(mine, rows[0]!.id)).toEqual(rows[0]);
  });

  /** An inspection with a photo and a move, on a replica of its own namespace. */
  const photographed = async (tokenHash: string) => {
    const { namespace, a } = await replicas();
    const store = new KubernetesInspectionStore(a);
    const r = sampleInspection();
    await store.create(r, tokenHash, event());
    await store.putPhoto(...photoOf(r.id, "front"));
    await store.transition(r.id, "created", "in_progress", Date.now(), {}, event("inspection.in_progress"));
    return { namespace, records: a, store, r, name: r.id.replace("_", "-") };
  };

  it("keeps the store's bookkeeping out of kubectl describe: no capture record, no token hash, no status.store (issue 31)", async () => {
    const { namespace, store, r, name } = await photographed("a-capture-token-hash");
    const described = await k.kubectl("describe", "inspection", name, "-n", namespace);
    console.log(`kubectl describe inspection (${described.split("\n").length} lines):\n${described}`);
    expect(described).toMatch(/Phase:\s+in_progress/);
    expect(described).toMatch(/Reason:\s+AwaitingSubmission/);
    for (const internal of [
      "a-capture-token-hash",
      "Token Hash",
      "tokenHash",
      "inspection.dev/capture",
      "Store:",
      "Created Event",
      "Media Id",
    ])
      expect(described, internal).not.toContain(internal);
    // They are the store's own record's, beside it.
    const kept = JSON.parse(await k.kubectl("get", "inspectionrecord", name, "-n", namespace, "-o", "json"));
    expect(kept.spec.capture.tokenHash).toBe("a-capture-token-hash");
    expect(kept.spec.capture.photos).toHaveLength(1);
    expect(kept.status.store.status).toBe("in_progress");
    expect((await store.getByCaptureTokenHash("a-capture-token-hash"))?.id).toBe(r.id);
  });

  it("moves an inspection a release before kept in its Inspection alone to its InspectionRecord, and reads it the same before and after (issue 31)", async () => {
    const { namespace, store, r, name } = await photographed("old-token-hash");
    const kept = JSON.parse(await k.kubectl("get", "inspectionrecord", name, "-n", namespace, "-o", "json"));
    // The same inspection as a release before kept it, in a namespace of its own: the capture record
    // as the Inspection's annotation, the store in its status.
    const old = `store-old-${++namespaces}`;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: old } } });
    const legacy = {
      apiVersion: "inspection.dev/v1",
      kind: "Inspection",
      metadata: {
        name,
        namespace: old,
        labels: kept.metadata.labels,
        annotations: { "inspection.dev/capture": JSON.stringify(kept.spec.capture) },
        finalizers: ["inspection.dev/archive"],
      },
      spec: kept.spec.request,
    };
    expect((await k.kubectlResult(["create", "-f", "-"], JSON.stringify(legacy))).code).toBe(0);
    // A replace, not a merge patch, whose nulls would delete the store's null fields.
    const made = JSON.parse(await k.kubectl("get", "inspection", name, "-n", old, "-o", "json"));
    const withStatus = JSON.stringify({ ...made, status: { phase: "in_progress", store: kept.status.store } });
    const replaced = await k.kubectlResult(["replace", "--subresource=status", "-f", "-"], withStatus);
    expect(replaced.code, replaced.stderr).toBe(0);
    const before = await store.getById(r.id);
    const onOld = await InspectionRecords.open(kc, old, { archive });
    opened.push(onOld);
    const oldStore = new KubernetesInspectionStore(onOld);
    expect(await oldStore.getById(r.id)).toEqual(before);
    expect(onOld.unmigrated().map((v) => v.record.id)).toEqual([r.id]);
    // A write before the move goes where that release wrote it.
    await oldStore.recordVinObserved(r.id, r.vin);
    await onOld.migrate(r.id);
    const moved = JSON.parse(await k.kubectl("get", "inspectionrecord", name, "-n", old, "-o", "json"));
    expect(moved.spec.capture.vinObserved).toBe(r.vin);
    expect(moved.status.store.status).toBe("in_progress");
    const inspection = JSON.parse(await k.kubectl("get", "inspection", name, "-n", old, "-o", "json"));
    expect(inspection.metadata.annotations?.["inspection.dev/capture"]).toBeUndefined();
    expect(inspection.status.store).toBeUndefined();
    expect(inspection.status.phase).toBe("in_progress");
    await until(
      "the move in the cache",
      async () => onOld.unmigrated().length,
      (n) => n === 0,
    );
    expect(await oldStore.getById(r.id)).toEqual({ ...before, vinObserved: r.vin });
    expect((await oldStore.getByCaptureTokenHash("old-token-hash"))?.id).toBe(r.id);
    expect(await oldStore.photos(r.id)).toHaveLength(1);
    // Moved, it moves on as any other.
    await oldStore.transition(r.id, "in_progress", "canceled", Date.now(), { canceledAt: Date.now() }, event("inspection.canceled"));
    expect((await oldStore.getById(r.id))?.status).toBe("canceled");
    expect(await k.kubectl("get", "inspection", name, "-n", old, "-o", "jsonpath={.status.phase}")).toBe("canceled");
  });

  it("archives a record whose Inspection was deleted past its finalizer, and still serves it (issue 31)", async () => {
    const { namespace, records: a, store, r, name } = await photographed("gone-token-hash");
    // Its finalizer taken off by hand and the Inspection deleted: the record is all that is left.
    await k.kubectl("patch", "inspection", name, "-n", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}');
    await k.kubectl("delete", "inspection", name, "-n", namespace);
    const gone = await until(
      "the Inspection gone from the cache",
      async () => a.prunable(Date.now(), 24 * 3600_000),
      (due) => due.some((v) => v.record.id === r.id),
    );
    expect(await a.prune(gone.find((v) => v.record.id === r.id)!)).toBe(true);
    expect((await k.kubectlResult(["get", "inspectionrecord", name, "-n", namespace])).code).not.toBe(0);
    expect(await store.getById(r.id)).toMatchObject({ id: r.id, status: "in_progress" });
    expect(await store.photos(r.id)).toHaveLength(1);
  });

  it("keeps an Inspection's size bounded however often its events are resent: old attempts move to the archive, all still listed (issue 31)", async () => {
    const { namespace, a } = await replicas();
    const inspections = new KubernetesInspectionStore(a);
    const events = new KubernetesEventStore(a);
    const r = sampleInspection({ notifyUrl: "https://example.com/hooks" });
    const eventId = newId("evt");
    await inspections.create(r, newId("insp"), () => ({ id: eventId, type: "inspection.created", data: "{}" }));
    // The store's record (InspectionRecord) holds the deliveries; the Inspection beside it only what kubectl shows.
    const sizeOf = async (kind = "inspectionrecord") =>
      (await k.kubectl("get", kind, r.id.replace("_", "-"), "-n", namespace, "-o", "json")).length;
    const attempt = (n: number) => ({
      eventId,
      n,
      attemptedAt: Date.now(),
      statusCode: 500,
      latencyMs: 12,
      error: `HTTP 500 on attempt ${n}`,
    });
    const sizes: number[] = [];
    for (let n = 1; n <= 60; n++) {
      await until(
        "the event in this replica's cache",
        () => events.get(scope, eventId),
        (e) => e !== null && e.attemptCount === n - 1,
        10_000,
      );
      await events.recordAttempt(attempt(n), { nextAttemptAt: Date.now() });
      if (n % 20 === 0) sizes.push(await sizeOf());
    }
    const listed = (await events.attempts([eventId])).get(eventId)!;
    expect(listed.map((x) => x.n)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(listed[0]!.error).toBe("HTTP 500 on attempt 1");
    // The resource holds the last ATTEMPTS_KEPT only: its size does not grow with the attempts.
    const resource = JSON.parse(await k.kubectl("get", "inspectionrecord", r.id.replace("_", "-"), "-n", namespace, "-o", "json"));
    expect(resource.status.store.deliveries[0].attempts).toHaveLength(ATTEMPTS_KEPT);
    console.log(
      `an InspectionRecord with one event's 20, 40 and 60 attempts: ${sizes.join(", ")} bytes; its Inspection: ${await sizeOf("inspection")} bytes`,
    );
    expect(sizes[2]! - sizes[0]!).toBeLessThan(600);
  }, 120_000);
});
