import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Branding, NO_BRANDING } from "../../core/domain/branding.ts";
import { DEFAULT_CAPTURE_PLAN } from "../../core/domain/capture-plan.ts";
import { InspectionRecords } from "../../core/adapters/kubernetes/inspection-records.ts";
import { KubernetesEventStore } from "../../core/adapters/kubernetes/kubernetes-event-store.ts";
import { KubernetesInspectionStore } from "../../core/adapters/kubernetes/kubernetes-inspection-store.ts";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { MemoryBlobStore } from "../../core/adapters/memory/memory-blob-store.ts";
import { MemoryEventStore } from "../../core/adapters/memory/memory-event-store.ts";
import { MemoryIdempotencyStore } from "../../core/adapters/memory/memory-idempotency-store.ts";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryKeyStore } from "../../core/adapters/memory/memory-key-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { MemoryUserStore } from "../../core/adapters/memory/memory-user-store.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { NatsIdempotencyStore } from "../../core/adapters/nats/nats-idempotency-store.ts";
import { NatsKeyStore } from "../../core/adapters/nats/nats-key-store.ts";
import { NatsUserStore } from "../../core/adapters/nats/nats-user-store.ts";
import { S3BlobStore } from "../../core/adapters/s3/s3-blob-store.ts";
import { openDatabase } from "../../core/adapters/sqlite/database.ts";
import { SqliteEventStore } from "../../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteIdempotencyStore } from "../../core/adapters/sqlite/sqlite-idempotency-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { SqliteKeyStore } from "../../core/adapters/sqlite/sqlite-key-store.ts";
import { SqliteUserStore } from "../../core/adapters/sqlite/sqlite-user-store.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { EventStore } from "../../core/ports/event-store.ts";
import type { IdempotencyStore } from "../../core/ports/idempotency-store.ts";
import type { InspectionStore } from "../../core/ports/inspection-store.ts";
import type { KeyStore } from "../../core/ports/key-store.ts";
import type { UserStore } from "../../core/ports/user-store.ts";
import type { InspectionRecord, MediaRecord, PhotoRecord } from "../../core/ports/records.ts";
import { newId } from "../../core/domain/ids.ts";
import { MAX_REVIEWS } from "../../core/domain/review.ts";
import { sampleInspection } from "./fixtures.ts";
import { IDEMPOTENCY_RETENTION_MS } from "../../api/plugins/idempotency.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";

/**
 * One contract suite per port, run against every adapter of it: the cluster adapters beside the
 * embedded ones (S3's for blobs, NATS KV's for the ports it serves, the Kubernetes custom
 * resources' for inspections and events).
 */
type Stores = {
  inspections: InspectionStore;
  events: EventStore;
  keys: KeyStore;
  idempotency: IdempotencyStore;
  reopen: () => InspectionStore;
  reopenKeys: () => KeyStore;
  users: UserStore;
};
const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

const STORE_ADAPTERS: { name: string; make: () => Stores }[] = [
  {
    name: "sqlite",
    make: () => {
      const dir = tmp("vi-contract-");
      const db = openDatabase(dir);
      return {
        inspections: new SqliteInspectionStore(db),
        events: new SqliteEventStore(db),
        keys: new SqliteKeyStore(db),
        idempotency: new SqliteIdempotencyStore(db),
        // A second connection: what it reads, another process would.
        reopen: () => new SqliteInspectionStore(openDatabase(dir)),
        reopenKeys: () => new SqliteKeyStore(openDatabase(dir)),
        users: new SqliteUserStore(db),
      };
    },
  },
  {
    name: "memory",
    make: () => {
      const state = new MemoryState();
      return {
        inspections: new MemoryInspectionStore(state),
        events: new MemoryEventStore(state),
        keys: new MemoryKeyStore(state),
        idempotency: new MemoryIdempotencyStore(state),
        // Another adapter over the same state: what another connection would see (at once, here).
        reopen: () => new MemoryInspectionStore(state),
        reopenKeys: () => new MemoryKeyStore(state),
        users: new MemoryUserStore(state),
      };
    },
  },
];
/**
 * The inspection and event stores run against every store adapter and against the `Inspection`
 * custom resources of a real kube-apiserver (with etcd): one control plane for the file, the CRD
 * applied, a namespace for each test, and a second cache on it for what another process reads.
 */
let kube: Promise<{ plane: ControlPlane; kc: KubeConfig }> | undefined;
const opened: InspectionRecords[] = [];
let namespaces = 0;
const startKube = async () => {
  kube ??= (async () => {
    const plane = await startControlPlane();
    await plane.installCrds();
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfig);
    return { plane, kc };
  })();
  await kube;
};
afterAll(async () => {
  if (!kube) return;
  const { plane } = await kube;
  await Promise.all(opened.map((r) => r.close()));
  await plane.close();
});
const openRecords = async (kc: KubeConfig, namespace: string) => {
  const records = await InspectionRecords.open(kc, namespace);
  opened.push(records);
  return records;
};
const INSPECTION_ADAPTERS: {
  name: string;
  make: () => Maybe<{ inspections: InspectionStore; events: EventStore; reopen: () => Maybe<InspectionStore> }>;
  before?: () => Promise<void>;
}[] = [
  ...STORE_ADAPTERS,
  {
    name: "kubernetes",
    before: startKube,
    make: async () => {
      const { kc } = await kube!;
      const namespace = `contract-${++namespaces}`;
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
      const records = await openRecords(kc, namespace);
      return {
        inspections: new KubernetesInspectionStore(records),
        events: new KubernetesEventStore(records),
        reopen: async () => new KubernetesInspectionStore(await openRecords(kc, namespace)),
      };
    },
  },
];

/** An adapter of a network store runs against a real server, started for its suite (`before`). */
let s3: VersityGw;
const BLOB_ADAPTERS: { name: string; make: () => BlobStore; before?: () => Promise<void>; after?: () => Promise<void> }[] = [
  { name: "fs", make: () => new FsBlobStore(tmp("vi-blobs-")) },
  { name: "memory", make: () => new MemoryBlobStore() },
  {
    name: "s3 (versitygw)",
    before: async () => {
      s3 = await startVersityGw();
      // The SDK's standard credential chain reads these.
      process.env.AWS_ACCESS_KEY_ID = s3.accessKey;
      process.env.AWS_SECRET_ACCESS_KEY = s3.secretKey;
    },
    after: () => s3.close(),
    make: () => new S3BlobStore({ bucket: s3.bucket, endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true }),
  },
];

/**
 * The ports NATS JetStream KV serves in cluster mode run against every store adapter and against
 * NATS: one nats-server for the file, two connections to it (the second is what another process
 * reads and writes through), fresh buckets for each test.
 */
let nats: Promise<{ server: NatsServer; primary: Nats; other: Nats }> | undefined;
const startNats = async () => {
  nats ??= (async () => {
    const server = await startNatsServer();
    const [primary, other] = await Promise.all(
      ["contract", "contract-other-process"].map((name) => connectNats({ url: server.url, name })),
    );
    return { server, primary: primary!, other: other! };
  })();
  await nats;
};
afterAll(async () => {
  if (!nats) return;
  const { server, primary, other } = await nats;
  await Promise.all([primary.close(), other.close()]);
  await server.close();
});
let natsBuckets = 0;
type Maybe<T> = T | Promise<T>;
const IDEMPOTENCY_ADAPTERS: { name: string; make: () => Maybe<IdempotencyStore>; before?: () => Promise<void> }[] = [
  ...STORE_ADAPTERS.map((a) => ({ name: a.name, make: () => a.make().idempotency })),
  {
    name: "nats",
    before: startNats,
    make: async () =>
      NatsIdempotencyStore.open((await nats!).primary.kvm, {
        bucket: `idempotency-${++natsBuckets}`,
        retentionMs: IDEMPOTENCY_RETENTION_MS,
      }),
  },
];
const KEY_ADAPTERS: {
  name: string;
  make: () => Maybe<{ keys: KeyStore; reopenKeys: () => Maybe<KeyStore> }>;
  before?: () => Promise<void>;
}[] = [
  ...STORE_ADAPTERS.map((a) => ({ name: a.name, make: () => a.make() })),
  {
    name: "nats",
    before: startNats,
    make: async () => {
      const { primary, other } = await nats!;
      const prefix = `t${++natsBuckets}-`;
      return { keys: await NatsKeyStore.open(primary.kvm, { prefix }), reopenKeys: () => NatsKeyStore.open(other.kvm, { prefix }) };
    },
  },
];

/** Dashboard users live beside API keys: each adapter gives both, over the same accounts. */
const USER_ADAPTERS: { name: string; make: () => Maybe<{ users: UserStore; keys: KeyStore }>; before?: () => Promise<void> }[] = [
  ...STORE_ADAPTERS.map((a) => ({ name: a.name, make: () => a.make() })),
  {
    name: "nats",
    before: startNats,
    make: async () => {
      const { primary } = await nats!;
      const prefix = `u${++natsBuckets}-`;
      const [users, keys] = await Promise.all([NatsUserStore.open(primary.kvm, { prefix }), NatsKeyStore.open(primary.kvm, { prefix })]);
      return { users, keys };
    },
  },
];

const event =
  (type = "inspection.created") =>
  () => ({ id: newId("evt"), type, data: "{}" });
/** How long another process's write may take to show in reads (the SQLite adapter's read caches: 1 ms). */
const OTHER_PROCESS_WRITES_SHOW_WITHIN_MS = 50;
const afterOtherProcessWrites = () => new Promise((resolve) => setTimeout(resolve, OTHER_PROCESS_WRITES_SHOW_WITHIN_MS));
const scope = { accountId: "acct_a", livemode: false };

/**
 * A photo of `angle` for `r`, with its media, put at `at` (the inspection's creation unless told);
 * `closeup`: a close-up's slot and part.
 */
function photoOf(
  r: InspectionRecord,
  angle: string,
  at = r.createdAt + 1,
  closeup: { slot: number | null; part: string | null } = { slot: null, part: null },
): [PhotoRecord, MediaRecord] {
  const mediaId = newId("med");
  const quality = { brightness: 0.5, sharpness: 100, glare: 0, passed: true, problems: [] };
  const { slot, part } = closeup;
  return [
    { inspectionId: r.id, angle, slot, part, mediaId, width: 640, height: 480, quality, tries: 1, capturedAt: at },
    {
      id: mediaId,
      accountId: r.accountId,
      livemode: r.livemode,
      inspectionId: r.id,
      kind: "photo",
      blobKey: `photos/${r.id}/${mediaId}.jpg`,
      bytes: 1,
      etag: "e",
      width: 640,
      height: 480,
      createdAt: at,
    },
  ];
}

/** An inspection created and moved to completed by `inspections` with `summary` (one needing a review unless told). */
async function completedInspection(
  inspections: InspectionStore,
  summary: InspectionRecord["summary"] = { findings: 1, grade: "minor", needs_review: true, new_findings: null },
): Promise<InspectionRecord> {
  const r = sampleInspection({ status: "processing" });
  await inspections.create(r, "h", event());
  await inspections.transition(
    r.id,
    "processing",
    "completed",
    r.createdAt + 1,
    { completedAt: r.createdAt + 1, summary },
    event("inspection.completed"),
  );
  return r;
}

/** A review by `by` at `at` that changes no finding, only the grade; its note says who. */
const plainReview = (by: string, at: number, grade: "minor" | "severe") => ({
  by,
  at,
  note: by,
  decisions: [],
  added: [],
  summary: { findings: 1, grade, needs_review: false as const, new_findings: null },
});

for (const adapter of INSPECTION_ADAPTERS) {
  describe(`InspectionStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    it("creates with its event, and scopes reads by account and environment", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection();
      await inspections.create(r, "tok-hash", event());
      expect(await inspections.get(scope, r.id)).toEqual(r);
      expect(await inspections.get({ ...scope, livemode: true }, r.id)).toBeNull();
      expect(await inspections.get({ ...scope, accountId: "acct_b" }, r.id)).toBeNull();
      expect((await inspections.getByCaptureTokenHash("tok-hash"))?.id).toBe(r.id);
      expect((await events.list(scope, 10))!.map((e) => e.inspectionId)).toEqual([r.id]);
    });

    it("records a vehicle decoded after the create where none is recorded, and never over one", async () => {
      const { inspections, reopen } = await adapter.make();
      const accord = { make: "Honda", model: "Accord", year: 2003 };
      const late = sampleInspection();
      await inspections.create(late, newId("insp"), event());
      await inspections.recordVehicle(late.id, accord);
      expect(await (await reopen()).get(scope, late.id)).toEqual({ ...late, ...accord });
      const decoded = sampleInspection(accord);
      await inspections.create(decoded, newId("insp"), event());
      await inspections.recordVehicle(decoded.id, { make: "Tesla", model: "Model 3", year: 2019 });
      expect(await (await reopen()).get(scope, decoded.id)).toEqual(decoded);
    });

    it("keeps the capture asked for at creation: its steps in order, close-ups and locale", async () => {
      const { inspections, reopen } = await adapter.make();
      const capture = {
        steps: [
          { angle: "rear" as const, required: true },
          { angle: "wheel_rear_left" as const, required: false },
          { angle: "dashboard" as const, required: true },
        ],
        closeups: "off" as const,
        locale: "pt-BR",
      };
      const r = sampleInspection({ capture });
      await inspections.create(r, "h", event());
      expect((await (await reopen()).get(scope, r.id))!.capture).toEqual(capture);
      const plain = sampleInspection();
      await inspections.create(plain, "h2", event());
      expect((await (await reopen()).get(scope, plain.id))!.capture).toEqual(DEFAULT_CAPTURE_PLAN);
    });

    it("create resolves once the inspection is durable, also for many at once, and a failing one fails alone", async () => {
      const { inspections, reopen } = await adapter.make();
      const rows = Array.from({ length: 20 }, () => sampleInspection());
      const broken = sampleInspection();
      const results = await Promise.allSettled([
        ...rows.map((r, i) => inspections.create(r, `h${i}`, event())),
        inspections.create(broken, "h-broken", () => {
          throw new Error("no event");
        }),
      ]);
      expect(results.map((r) => r.status)).toEqual([...rows.map(() => "fulfilled"), "rejected"]);
      const other = await reopen();
      for (const r of rows) expect(await other.get(scope, r.id)).toEqual(r);
      expect(await other.get(scope, broken.id)).toBeNull();
      expect(await inspections.get(scope, broken.id)).toBeNull();
    });

    it("a transition while creates are pending keeps both", async () => {
      const { inspections, reopen } = await adapter.make();
      const first = sampleInspection();
      await inspections.create(first, "h1", event());
      const pending = sampleInspection();
      const created = await inspections.create(pending, "h2", event());
      expect(
        (await inspections.transition(first.id, "created", "in_progress", first.createdAt + 1, {}, event("inspection.in_progress")))
          ?.status,
      ).toBe("in_progress");
      await created;
      const other = await reopen();
      expect((await other.get(scope, first.id))?.status).toBe("in_progress");
      expect((await other.get(scope, pending.id))?.status).toBe("created");
    });

    it("transition is a compare-and-set that appends exactly one event", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection();
      await inspections.create(r, "h", event());
      const moved = await inspections.transition(r.id, "created", "in_progress", r.createdAt + 1000, {}, event("inspection.in_progress"));
      expect(moved?.status).toBe("in_progress");
      expect(
        await inspections.transition(r.id, "created", "canceled", r.createdAt + 2000, { canceledAt: 1 }, event("inspection.canceled")),
      ).toBeNull();
      expect((await events.list(scope, 10))!.map((e) => e.type)).toEqual(["inspection.in_progress", "inspection.created"]);
      expect((await inspections.get(scope, r.id))!.canceledAt).toBeNull();
    });

    it("counts inspections by status, every account's", async () => {
      const { inspections } = await adapter.make();
      expect(await inspections.countByStatus()).toEqual(new Map());
      for (const status of ["created", "created", "processing"] as const) {
        await inspections.create(sampleInspection({ status, accountId: newId("acct") }), newId("insp"), event());
      }
      expect(await inspections.countByStatus()).toEqual(
        new Map([
          ["created", 2],
          ["processing", 1],
        ]),
      );
      const r = sampleInspection();
      await inspections.create(r, "h-moved", event());
      await inspections.transition(r.id, "created", "canceled", r.createdAt, { canceledAt: r.createdAt }, event());
      expect(await inspections.countByStatus()).toEqual(
        new Map([
          ["created", 2],
          ["processing", 1],
          ["canceled", 1],
        ]),
      );
    });

    it("feeds every account's inspections created or moved, in (updatedAt, id) order, from any position", async () => {
      const { inspections } = await adapter.make();
      expect(await inspections.changedSince(null, 10)).toEqual([]);
      const base = Date.now();
      const a = sampleInspection({ accountId: "acct_x", createdAt: base, updatedAt: base });
      const b = sampleInspection({ accountId: "acct_y", livemode: true, createdAt: base + 10, updatedAt: base + 10 });
      const c = sampleInspection({ createdAt: base + 20, updatedAt: base + 20 });
      for (const r of [c, a, b]) await inspections.create(r, newId("insp"), event());
      const ids = (rs: InspectionRecord[]) => rs.map((r) => r.id);
      expect(ids(await inspections.changedSince(null, 10))).toEqual([a.id, b.id, c.id]);
      expect(ids(await inspections.changedSince(null, 2))).toEqual([a.id, b.id]);
      expect(ids(await inspections.changedSince({ updatedAt: b.updatedAt, id: b.id }, 10))).toEqual([c.id]);
      // A move puts the inspection after everything before it, with the status it moved to.
      await inspections.transition(a.id, "created", "canceled", base + 30, { canceledAt: base + 30 }, event());
      const moved = await inspections.changedSince({ updatedAt: c.updatedAt, id: c.id }, 10);
      expect(moved.map((r) => [r.id, r.status])).toEqual([[a.id, "canceled"]]);
      // Ties on updatedAt are ordered by id, and a position between them splits them.
      const [d, e] = [newId("insp"), newId("insp")].sort();
      for (const id of [e!, d!])
        await inspections.create(sampleInspection({ id, createdAt: base + 40, updatedAt: base + 40 }), newId("insp"), event());
      expect(ids(await inspections.changedSince({ updatedAt: base + 40, id: d! }, 10))).toEqual([e]);
    });

    it("stores the summary with the completing move", async () => {
      const { inspections } = await adapter.make();
      const r = await completedInspection(inspections, { findings: 2, grade: "none", needs_review: true, new_findings: 1 });
      expect((await inspections.get(scope, r.id))!.summary).toEqual({ findings: 2, grade: "none", needs_review: true, new_findings: 1 });
    });

    it("appends every event a move makes, in their order", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection({ status: "processing", notifyUrl: "https://example.com/hooks" });
      await inspections.create(r, "h", event());
      const completed = {
        completedAt: r.createdAt + 1,
        summary: { findings: 0, grade: "none" as const, needs_review: true, new_findings: null },
      };
      await inspections.transition(r.id, "processing", "completed", r.createdAt + 1, completed, () => [
        { id: newId("evt"), type: "inspection.completed", data: "{}" },
        { id: newId("evt"), type: "inspection.review_required", data: "{}" },
      ]);
      expect((await events.forInspection(scope, r.id)).map((e) => e.type)).toEqual([
        "inspection.created",
        "inspection.completed",
        "inspection.review_required",
      ]);
    });

    it("records a review of a completed inspection only, with its event; a later review replaces it, both events kept", async () => {
      const { inspections, events, reopen } = await adapter.make();
      const r = sampleInspection({ status: "processing", reviewPolicy: "always", baselineInspectionId: "insp_baseline" });
      await inspections.create(r, "h", event());
      const review = (at: number, grade: "minor" | "severe") => ({
        by: "key_1",
        at,
        note: null,
        decisions: [{ finding: "fnd_1", action: "reject" as const }],
        added: [
          { id: "fnd_2", media_id: "med_1", type: "dent" as const, part: "hood" as const, severity: grade, bbox: [0.1, 0.1, 0.2, 0.2] },
        ],
        summary: { findings: 1, grade, needs_review: false as const, new_findings: 1 },
      });
      expect(await inspections.recordReview(r.id, review(r.createdAt + 1, "minor"), event("inspection.reviewed"))).toBeNull();
      await inspections.transition(
        r.id,
        "processing",
        "completed",
        r.createdAt + 2,
        { completedAt: r.createdAt + 2, summary: { findings: 3, grade: "moderate", needs_review: true, new_findings: 2 } },
        event("inspection.completed"),
      );
      const first = await inspections.recordReview(r.id, review(r.createdAt + 3, "minor"), event("inspection.reviewed"));
      expect(first).toMatchObject({
        status: "completed",
        summary: { findings: 1, grade: "minor", needs_review: false, new_findings: 1 },
        reviewPolicy: "always",
        baselineInspectionId: "insp_baseline",
      });
      expect((first as InspectionRecord).review).toEqual(review(r.createdAt + 3, "minor"));
      await inspections.recordReview(r.id, review(r.createdAt + 4, "severe"), event("inspection.reviewed"));
      const stored = (await (await reopen()).get(scope, r.id))!;
      expect(stored.review).toEqual(review(r.createdAt + 4, "severe"));
      expect(stored.summary).toEqual({ findings: 1, grade: "severe", needs_review: false, new_findings: 1 });
      expect(stored.updatedAt).toBe(r.createdAt + 4);
      expect((await events.forInspection(scope, r.id)).map((e) => e.type)).toEqual([
        "inspection.created",
        "inspection.completed",
        "inspection.reviewed",
        "inspection.reviewed",
      ]);
      expect(await inspections.recordReview(newId("insp"), review(r.createdAt + 5, "minor"), event("inspection.reviewed"))).toBeNull();
    });

    it("of two writers' reviews at once (two api replicas), both are stored with their events, and one stands whole", async () => {
      const { inspections, events, reopen } = await adapter.make();
      const other = await reopen();
      const r = await completedInspection(inspections);
      const review = (by: string, grade: "minor" | "severe") => plainReview(by, r.createdAt + 2, grade);
      const written = await Promise.all([
        inspections.recordReview(r.id, review("key_a", "minor"), event("inspection.reviewed")),
        other.recordReview(r.id, review("key_b", "severe"), event("inspection.reviewed")),
      ]);
      expect(written.map((w) => (w as InspectionRecord).review?.by)).toEqual(["key_a", "key_b"]);
      const types = async () => (await events.forInspection(scope, r.id)).map((e) => e.type);
      await expect.poll(types).toEqual(["inspection.created", "inspection.completed", "inspection.reviewed", "inspection.reviewed"]);
      const stands = (await (await reopen()).get(scope, r.id))!;
      expect([review("key_a", "minor"), review("key_b", "severe")]).toContainEqual(stands.review);
      expect(stands.summary).toEqual(stands.review!.summary);
    });

    it(`keeps at most ${MAX_REVIEWS} reviews of an inspection, written at once by two writers past the bound: the rest refused, nothing of them stored`, async () => {
      const { inspections, events, reopen } = await adapter.make();
      const other = await reopen();
      const r = await completedInspection(inspections);
      const review = (n: number) => plainReview(`key_${n}`, r.createdAt + 2 + n, "minor");
      // All but `room` one after the other, then three times the room left at once, from both writers.
      const room = 4;
      for (let n = 0; n < MAX_REVIEWS - room; n++) await inspections.recordReview(r.id, review(n), event("inspection.reviewed"));
      const racing = Array.from({ length: 3 * room }, (_, i) => MAX_REVIEWS - room + i);
      const written = await Promise.all(
        racing.map((n) => (n % 2 === 0 ? inspections : other).recordReview(r.id, review(n), event("inspection.reviewed"))),
      );
      const stored = written.flatMap((w) => (w && !("refused" in w) ? [w.review!.by] : []));
      expect(stored).toHaveLength(room);
      expect(written.filter((w) => w && "refused" in w)).toEqual(
        Array(2 * room).fill({ refused: "too_many_reviews", reviews: MAX_REVIEWS }),
      );
      const reviewed = async () => (await events.forInspection(scope, r.id)).filter((e) => e.type === "inspection.reviewed").length;
      await expect.poll(reviewed).toBe(MAX_REVIEWS);
      await afterOtherProcessWrites();
      expect(await reviewed()).toBe(MAX_REVIEWS);
      // The review that stands is one of those stored.
      expect(stored).toContain((await (await reopen()).get(scope, r.id))!.review!.by);
      // One more, one at a time, is refused as well.
      expect(await inspections.recordReview(r.id, review(MAX_REVIEWS + 2 * room), event("inspection.reviewed"))).toEqual({
        refused: "too_many_reviews",
        reviews: MAX_REVIEWS,
      });
    }, 120_000);

    it("stores an evidence row written again (a resumed detection) once, and refuses another row under its id", async () => {
      const { inspections, reopen } = await adapter.make();
      const r = sampleInspection({ status: "processing" });
      await inspections.create(r, "h", event());
      const [, photo] = photoOf(r, "front");
      const evidence = { ...photo, kind: "evidence" as const, blobKey: `evidence/${r.id}/${photo.id}.jpg` };
      await inspections.putMedia(evidence);
      await (await reopen()).putMedia({ ...evidence });
      expect(await inspections.getMedia(scope, evidence.id)).toEqual(evidence);
      await expect(inspections.putMedia({ ...evidence, blobKey: "evidence/other.jpg" })).rejects.toThrow(/media.id/i);
      expect(await inspections.getMedia(scope, evidence.id)).toEqual(evidence);
    });

    it("keyset pages by (created_at seconds, id) descending, and filters", async () => {
      const { inspections } = await adapter.make();
      const t = Date.now();
      const rows = Array.from({ length: 7 }, (_, i) =>
        sampleInspection({ createdAt: t + Math.floor(i / 3) * 1000, reference: i % 2 ? "odd" : "even" }),
      );
      await Promise.all(rows.map((r, i) => inspections.create(r, `h${i}`, event())));
      const expected = [...rows]
        .sort((a, b) => Math.floor(b.createdAt / 1000) - Math.floor(a.createdAt / 1000) || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      const page1 = await inspections.list(scope, { limit: 4 });
      const last = page1.at(-1)!;
      const page2 = await inspections.list(scope, { limit: 4, after: { createdAt: last.createdAt, id: last.id } });
      expect([...page1, ...page2].map((r) => r.id)).toEqual(expected);
      expect(await inspections.list(scope, { limit: 10, reference: "odd" })).toHaveLength(3);
    });

    it("filters by creation dates, from inclusive and before exclusive, with the other filters", async () => {
      const { inspections } = await adapter.make();
      const day = 86_400_000;
      const t = Date.UTC(2026, 10, 20);
      const rows = [0, 1, 1, 2, 3].map((d, i) => sampleInspection({ createdAt: t + d * day + 5_000, reference: i % 2 ? "odd" : "even" }));
      await Promise.all(rows.map((r, i) => inspections.create(r, `d${i}`, event())));
      const ids = async (f: Parameters<InspectionStore["list"]>[1]) => new Set((await inspections.list(scope, f)).map((r) => r.id));
      expect(await ids({ limit: 10, createdFrom: t + day, createdBefore: t + 2 * day })).toEqual(new Set([rows[1]!.id, rows[2]!.id]));
      expect(await ids({ limit: 10, createdFrom: t + 2 * day })).toEqual(new Set([rows[3]!.id, rows[4]!.id]));
      expect(await ids({ limit: 10, createdBefore: t + day })).toEqual(new Set([rows[0]!.id]));
      expect(await ids({ limit: 10, createdFrom: t + day, reference: "odd" })).toEqual(new Set([rows[1]!.id, rows[3]!.id]));
    });

    it("pages each filter in the same order, ties within a second by id, from any cursor", async () => {
      const { inspections } = await adapter.make();
      const t = Math.floor(Date.now() / 1000) * 1000;
      // Many inspections in each of three seconds, so that every page boundary falls among ties.
      const rows = Array.from({ length: 30 }, (_, i) =>
        sampleInspection({
          createdAt: t + Math.floor(i / 10) * 1000 + (i % 10),
          reference: i % 2 ? "odd" : "even",
          vin: i % 3 ? "1HGCM82633A004352" : "WVWZZZ1JZXW000001",
        }),
      );
      await Promise.all(rows.map((r, i) => inspections.create(r, `h${i}`, event())));
      rows[4] = (await inspections.transition(rows[4]!.id, "created", "in_progress", t + 5000, {}, event("inspection.in_progress")))!;
      const order = (a: InspectionRecord, b: InspectionRecord) =>
        Math.floor(b.createdAt / 1000) - Math.floor(a.createdAt / 1000) || (a.id < b.id ? 1 : -1);
      const filters = [
        { reference: "odd" },
        { vin: "WVWZZZ1JZXW000001" },
        { status: "created" as const },
        { reference: "odd", vin: "1HGCM82633A004352" },
        { status: "created" as const, reference: "even" },
      ];
      for (const filter of filters) {
        const expected = rows
          .filter((r) => Object.entries(filter).every(([k, v]) => r[k as keyof InspectionRecord] === v))
          .sort(order)
          .map((r) => r.id);
        const seen: string[] = [];
        for (let after: { createdAt: number; id: string } | undefined, page: InspectionRecord[]; ; ) {
          page = await inspections.list(scope, { limit: 3, after, ...filter });
          seen.push(...page.map((r) => r.id));
          if (page.length < 3) break;
          after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
        }
        expect(seen, JSON.stringify(filter)).toEqual(expected);
      }
    });

    it("a read repeated between writes sees each write at once, and another process's soon after", async () => {
      const { inspections, reopen } = await adapter.make();
      const r = sampleInspection();
      expect(await inspections.get(scope, r.id)).toBeNull();
      await inspections.create(r, "h", event());
      expect((await inspections.get(scope, r.id))!.status).toBe("created");
      expect((await inspections.get(scope, r.id))!.status).toBe("created");
      await inspections.recordCancelRequested(r.id, r.createdAt + 1);
      expect((await inspections.get(scope, r.id))!.cancelRequestedAt).toBe(r.createdAt + 1);
      await inspections.transition(r.id, "created", "in_progress", r.createdAt + 2, {}, event("inspection.in_progress"));
      expect((await inspections.get(scope, r.id))!.status).toBe("in_progress");
      expect(await inspections.get({ ...scope, accountId: "acct_b" }, r.id)).toBeNull();
      await (await reopen()).transition(
        r.id,
        "in_progress",
        "canceled",
        r.createdAt + 3,
        { canceledAt: r.createdAt + 3 },
        event("inspection.canceled"),
      );
      await afterOtherProcessWrites();
      expect((await inspections.get(scope, r.id))!.status).toBe("canceled");
      expect((await inspections.getById(r.id))!.canceledAt).toBe(r.createdAt + 3);
    });

    it("records handed out stay as they were through later writes, and nothing keeps the caller's objects", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection({ notifyUrl: "https://example.com/h" });
      await inspections.create(r, "h", event());
      // The caller's own object, edited after create: the store must not have kept it.
      r.status = "failed";
      const held = (await inspections.get(scope, r.id))!;
      expect(held.status).toBe("created");
      const [heldEvent] = (await events.list(scope, 1))!;
      await inspections.recordOpened(r.id, held.createdAt + 1);
      await inspections.transition(r.id, "created", "in_progress", held.createdAt + 2, {}, event("inspection.in_progress"));
      await events.recordAttempt(
        { eventId: heldEvent!.id, n: 1, attemptedAt: 1, statusCode: 200, latencyMs: 1, error: null },
        { status: "succeeded" },
      );
      expect(held).toMatchObject({ status: "created", openedAt: null, reconcileGeneration: 0 });
      expect(heldEvent).toMatchObject({ deliveryStatus: "pending", attemptCount: 0 });
      expect(await inspections.get(scope, r.id)).toMatchObject({ status: "in_progress", reconcileGeneration: 1 });
    });

    it("intents mark an inspection for reconcile until the controller clears that generation", async () => {
      const { inspections } = await adapter.make();
      const r = sampleInspection();
      await inspections.create(r, "h", event());
      expect(await inspections.needingReconcile(Date.now(), 10)).toHaveLength(0);
      await inspections.recordOpened(r.id, Date.now());
      const [due] = await inspections.needingReconcile(Date.now(), 10);
      expect(due!.openedAt).not.toBeNull();
      await inspections.recordCancelRequested(r.id, Date.now());
      await inspections.clearReconcile(r.id, due!.reconcileGeneration);
      // The cancel arrived after the read: it must still be due.
      expect((await inspections.needingReconcile(Date.now(), 10)).map((x) => x.id)).toEqual([r.id]);
      const again = (await inspections.needingReconcile(Date.now(), 10))[0]!;
      await inspections.clearReconcile(r.id, again.reconcileGeneration);
      expect(await inspections.needingReconcile(Date.now(), 10)).toHaveLength(0);
      // Past expires_at it is due again, without any intent.
      expect((await inspections.needingReconcile(r.expiresAt + 1, 10)).map((x) => x.id)).toEqual([r.id]);
    });

    it("watch tells the controller of each create and intent by the inspection's id; another's writes where it reaches the cluster", async () => {
      const { inspections, reopen } = await adapter.make();
      const heard: string[] = [];
      const kept: string[] = [];
      const stop = inspections.watch((id) => heard.push(id));
      const stopKept = inspections.watch((id) => kept.push(id));
      // Told at once in-process, or as the watch delivers it (the Kubernetes caches): waited for either way.
      const hears = (list: string[], id: string) => vi.waitFor(() => expect(list).toContain(id), { timeout: 10_000, interval: 10 });
      const r = sampleInspection();
      await inspections.create(r, "h", event());
      await hears(heard, r.id);
      for (const intent of [
        () => inspections.recordOpened(r.id, Date.now()),
        () => inspections.recordSubmitRequested(r.id, Date.now()),
        () => inspections.recordCancelRequested(r.id, Date.now()),
      ]) {
        heard.length = 0;
        await intent();
        await hears(heard, r.id);
      }
      if (inspections.watchReach === "cluster") {
        // Another process's (replica's) writes, through its own store: a watch of the cluster hears them.
        const other = await reopen();
        const theirs = sampleInspection();
        await other.create(theirs, "h2", event());
        await hears(heard, theirs.id);
        heard.length = 0;
        await other.recordSubmitRequested(theirs.id, Date.now());
        await hears(heard, theirs.id);
      }
      // Stopped, a listener hears no more: the write that the other listener hears is not told to it.
      stop();
      heard.length = 0;
      const later = sampleInspection();
      await inspections.create(later, "h3", event());
      await hears(kept, later.id);
      expect(heard).toEqual([]);
      stopKept();
    });
  });

  describe(`InspectionStore contract, putPhoto: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    it("stores while the capture is open; a retake replaces the photo and deletes its media row", async () => {
      const { inspections } = await adapter.make();
      const r = sampleInspection();
      await inspections.create(r, "h", event());
      const [photo, media] = photoOf(r, "front");
      expect(await inspections.putPhoto(photo, media)).toEqual({ accepted: true, replaced: null });
      await inspections.transition(r.id, "created", "in_progress", r.createdAt + 2, {}, event("inspection.in_progress"));
      // The last moment before expires_at still counts.
      const [retake, retakeMedia] = photoOf(r, "front", r.expiresAt - 1);
      expect(await inspections.putPhoto(retake, retakeMedia)).toEqual({ accepted: true, replaced: media });
      expect(await inspections.photos(r.id)).toEqual([{ ...retake, tries: 2 }]);
      expect(await inspections.getMedia(scope, media.id)).toBeNull();
      expect(await inspections.getMedia(scope, retakeMedia.id)).toEqual(retakeMedia);
    });

    it("keeps a photo per close-up slot, with its part, beside the angle's; a retake replaces only its slot", async () => {
      const { inspections, reopen } = await adapter.make();
      const r = sampleInspection({ status: "in_progress" });
      await inspections.create(r, "h", event());
      const [front, frontMedia] = photoOf(r, "front", r.createdAt + 1);
      const [one, oneMedia] = photoOf(r, "closeup", r.createdAt + 2, { slot: 1, part: "hood" });
      const [two, twoMedia] = photoOf(r, "closeup", r.createdAt + 3, { slot: 2, part: null });
      for (const [photo, media] of [
        [front, frontMedia],
        [one, oneMedia],
        [two, twoMedia],
      ] as const)
        expect(await inspections.putPhoto(photo, media)).toEqual({ accepted: true, replaced: null });
      expect(await inspections.photos(r.id)).toEqual([front, one, two]);
      expect(front).toMatchObject({ slot: null, part: null });

      // Slot 1 again, now of another part: it replaces slot 1 alone.
      const [retake, retakeMedia] = photoOf(r, "closeup", r.createdAt + 4, { slot: 1, part: "front_bumper" });
      expect(await inspections.putPhoto(retake, retakeMedia)).toEqual({ accepted: true, replaced: oneMedia });
      const expected = [front, two, { ...retake, tries: 2 }];
      expect(await inspections.photos(r.id)).toEqual(expected);
      expect(await (await reopen()).photos(r.id)).toEqual(expected);
      expect(await inspections.getMedia(scope, oneMedia.id)).toBeNull();
      expect(await inspections.getMedia(scope, twoMedia.id)).toEqual(twoMedia);
    });

    const closings: [string, (store: InspectionStore, r: InspectionRecord) => Promise<void>][] = [
      ["a submit is requested", (store, r) => store.recordSubmitRequested(r.id, r.createdAt + 2)],
      ["a cancel is requested", (store, r) => store.recordCancelRequested(r.id, r.createdAt + 2)],
    ];
    for (const [what, close] of closings) {
      it(`refuses, storing and deleting nothing, once ${what}, before the controller has moved it`, async () => {
        const { inspections, reopen } = await adapter.make();
        const r = sampleInspection({ status: "in_progress" });
        await inspections.create(r, "h", event());
        const [first, firstMedia] = photoOf(r, "front");
        await inspections.putPhoto(first, firstMedia);
        await close(inspections, r);
        for (const [photo, media] of [photoOf(r, "front", r.createdAt + 3), photoOf(r, "odometer", r.createdAt + 3)]) {
          expect(await inspections.putPhoto(photo, media)).toEqual({ accepted: false });
          expect(await inspections.getMedia(scope, media.id)).toBeNull();
        }
        expect(await inspections.photos(r.id)).toEqual([first]);
        expect(await (await reopen()).photos(r.id)).toEqual([first]);
        expect(await inspections.getMedia(scope, firstMedia.id)).toEqual(firstMedia);
      });
    }

    it("refuses at and after expires_at, even before the controller has moved it", async () => {
      const { inspections } = await adapter.make();
      const r = sampleInspection({ status: "in_progress" });
      await inspections.create(r, "h", event());
      for (const at of [r.expiresAt, r.expiresAt + 1]) {
        const [photo, media] = photoOf(r, "front", at);
        expect(await inspections.putPhoto(photo, media)).toEqual({ accepted: false });
      }
      expect(await inspections.photos(r.id)).toEqual([]);
    });

    it("refuses in every status but created and in_progress, and for an unknown inspection", async () => {
      const { inspections } = await adapter.make();
      for (const status of ["processing", "completed", "canceled", "expired", "failed"] as const) {
        const r = sampleInspection({ status });
        await inspections.create(r, `h-${status}`, event());
        const [photo, media] = photoOf(r, "front");
        expect(await inspections.putPhoto(photo, media), status).toEqual({ accepted: false });
        expect(await inspections.photos(r.id)).toEqual([]);
        expect(await inspections.getMedia(scope, media.id)).toBeNull();
      }
      const [photo, media] = photoOf(sampleInspection(), "front");
      expect(await inspections.putPhoto(photo, media)).toEqual({ accepted: false });
    });
  });

  describe(`EventStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    it("lists newest first with a cursor, and settles deliveries by attempts", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection({ notifyUrl: "https://example.com/h" });
      await inspections.create(r, "h", event());
      await inspections.transition(r.id, "created", "in_progress", Date.now(), {}, event("inspection.in_progress"));
      const [newest, oldest] = (await events.list(scope, 10))!;
      expect((await events.list(scope, 10, newest!.id))!.map((e) => e.id)).toEqual([oldest!.id]);
      expect(await events.list(scope, 10, "evt_unknown")).toBeNull();
      expect(await events.list({ ...scope, livemode: true }, 10)).toEqual([]);
      expect(await events.due(Date.now(), 10)).toHaveLength(2);
      await events.recordAttempt(
        { eventId: oldest!.id, n: 1, attemptedAt: 1, statusCode: 500, latencyMs: 3, error: "HTTP 500" },
        { nextAttemptAt: Date.now() + 60_000 },
      );
      await events.recordAttempt(
        { eventId: newest!.id, n: 1, attemptedAt: 2, statusCode: 200, latencyMs: 4, error: null },
        { status: "succeeded" },
      );
      expect(await events.due(Date.now(), 10)).toHaveLength(0);
      expect((await events.due(Date.now() + 61_000, 10)).map((e) => e.id)).toEqual([oldest!.id]);
      expect((await events.get(scope, newest!.id))!.deliveryStatus).toBe("succeeded");
      expect((await events.attempts([oldest!.id])).get(oldest!.id)!.map((a) => a.statusCode)).toEqual([500]);
    });

    it("gives an inspection's events oldest first, in its scope only", async () => {
      const { inspections, events } = await adapter.make();
      const r = sampleInspection();
      const other = sampleInspection();
      await inspections.create(r, "h1", event());
      await inspections.create(other, "h2", event());
      await inspections.transition(r.id, "created", "in_progress", Date.now(), {}, event("inspection.in_progress"));
      await inspections.transition(r.id, "in_progress", "canceled", Date.now(), {}, event("inspection.canceled"));
      const history = await events.forInspection(scope, r.id);
      expect(history.map((e) => e.type)).toEqual(["inspection.created", "inspection.in_progress", "inspection.canceled"]);
      expect(history.every((e) => e.inspectionId === r.id)).toBe(true);
      expect(await events.forInspection({ ...scope, livemode: true }, r.id)).toEqual([]);
      expect(await events.forInspection({ ...scope, accountId: "acct_b" }, r.id)).toEqual([]);
      expect(await events.forInspection(scope, "insp_unknown")).toEqual([]);
    });

    it("an inspection without notify_url has events with delivery none", async () => {
      const { inspections, events } = await adapter.make();
      await inspections.create(sampleInspection(), "h", event());
      expect((await events.list(scope, 1))![0]!.deliveryStatus).toBe("none");
      expect(await events.due(Date.now(), 10)).toHaveLength(0);
    });

    it("resends: pending again, due now, the schedule counted from the attempts made; never an event with delivery none", async () => {
      const { inspections, events } = await adapter.make();
      await inspections.create(sampleInspection({ notifyUrl: "https://example.com/h" }), "h", event());
      const [e] = (await events.list(scope, 1))!;
      expect(e!.scheduleFrom).toBe(0);
      await events.recordAttempt(
        { eventId: e!.id, n: 1, attemptedAt: 1, statusCode: 200, latencyMs: 1, error: null },
        { status: "succeeded" },
      );
      expect(await events.resend(scope, e!.id, 5_000)).toMatchObject({
        id: e!.id,
        deliveryStatus: "pending",
        nextAttemptAt: 5_000,
        attemptCount: 1,
        scheduleFrom: 1,
      });
      expect((await events.due(5_000, 10)).map((x) => x.id)).toEqual([e!.id]);
      expect((await events.get(scope, e!.id))!.scheduleFrom).toBe(1);
      for (const other of [
        { ...scope, livemode: true },
        { accountId: "acct_b", livemode: false },
      ]) {
        expect(await events.resend(other, e!.id, 6_000)).toBeNull();
      }
      expect(await events.resend(scope, "evt_unknown", 6_000)).toBeNull();
      expect((await events.get(scope, e!.id))!.nextAttemptAt).toBe(5_000);

      await inspections.create(sampleInspection(), "h2", event());
      const [silent] = (await events.list(scope, 1))!;
      expect(silent!.deliveryStatus).toBe("none");
      expect(await events.resend(scope, silent!.id, 6_000)).toBeNull();
      expect(await events.get(scope, silent!.id)).toMatchObject({ deliveryStatus: "none", nextAttemptAt: null });
    });

    it("keeps pending events unpublished until marked at their schedule start; a resend unpublishes again", async () => {
      const { inspections, events } = await adapter.make();
      const withUrl = () => sampleInspection({ notifyUrl: "https://example.com/h" });
      await inspections.create(withUrl(), "h1", event());
      await inspections.create(sampleInspection(), "h2", event());
      await inspections.create(withUrl(), "h3", event());
      const [third, , first] = (await events.list(scope, 10))!;
      // Oldest first, and never an event with delivery none.
      expect((await events.unpublished(10)).map((e) => e.id)).toEqual([first!.id, third!.id]);
      expect((await events.unpublished(1)).map((e) => e.id)).toEqual([first!.id]);
      await events.markPublished(first!.id, 0);
      expect((await events.unpublished(10)).map((e) => e.id)).toEqual([third!.id]);
      // Published and delivered; resent: unpublished again, and marking the old schedule start changes nothing.
      await events.recordAttempt(
        { eventId: first!.id, n: 1, attemptedAt: 1, statusCode: 200, latencyMs: 1, error: null },
        { status: "succeeded" },
      );
      await events.resend(scope, first!.id, 5_000);
      await events.markPublished(first!.id, 0);
      expect((await events.unpublished(10)).map((e) => e.id)).toEqual([first!.id, third!.id]);
      await events.markPublished(first!.id, 1);
      // Settled events are not pending, published or not.
      await events.recordAttempt(
        { eventId: third!.id, n: 1, attemptedAt: 1, statusCode: 500, latencyMs: 1, error: "HTTP 500" },
        { status: "failed" },
      );
      expect(await events.unpublished(10)).toEqual([]);
    });

    it("finds published pending events whose next attempt is overdue, most overdue first", async () => {
      const { inspections, events } = await adapter.make();
      const withUrl = () => sampleInspection({ notifyUrl: "https://example.com/h" });
      for (const h of ["a", "b", "c"]) await inspections.create(withUrl(), h, event());
      const [c, b, a] = (await events.list(scope, 10))!;
      // Not published: the relay's first pass takes those, not this.
      expect(await events.stalled(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
      for (const e of [a!, b!, c!]) await events.markPublished(e.id, 0);
      const failed = (e: { id: string }, at: number) =>
        events.recordAttempt(
          { eventId: e.id, n: 1, attemptedAt: 1, statusCode: 500, latencyMs: 1, error: "HTTP 500" },
          { nextAttemptAt: at },
        );
      await failed(a!, 3_000);
      await failed(b!, 1_000);
      await failed(c!, 9_000);
      expect((await events.stalled(5_000, 10)).map((e) => e.id)).toEqual([b!.id, a!.id]);
      expect((await events.stalled(5_000, 1)).map((e) => e.id)).toEqual([b!.id]);
      // Settled: not stalled, however late.
      await events.recordAttempt(
        { eventId: b!.id, n: 2, attemptedAt: 2, statusCode: 200, latencyMs: 1, error: null },
        { status: "succeeded" },
      );
      expect((await events.stalled(5_000, 10)).map((e) => e.id)).toEqual([a!.id]);
    });
  });
}

for (const adapter of IDEMPOTENCY_ADAPTERS) {
  describe(`IdempotencyStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    it("started → in_flight → replay; mismatch; abandon frees the key; retention expires it", async () => {
      const idempotency = await adapter.make();
      const now = Date.now();
      expect((await idempotency.begin(scope, "k", "f1", now, 1000)).kind).toBe("started");
      expect((await idempotency.begin(scope, "k", "f1", now, 1000)).kind).toBe("in_flight");
      expect((await idempotency.begin(scope, "k", "f2", now, 1000)).kind).toBe("mismatch");
      await idempotency.complete(scope, "k", { statusCode: 201, body: "{}", headers: { location: "/x" } });
      expect(await idempotency.begin(scope, "k", "f1", now, 1000)).toEqual({
        kind: "replay",
        response: { statusCode: 201, body: "{}", headers: { location: "/x" } },
      });
      expect((await idempotency.begin({ ...scope, livemode: true }, "k", "f2", now, 1000)).kind).toBe("started");
      expect((await idempotency.begin(scope, "k", "f2", now + 1000, 1000)).kind).toBe("started");
      expect((await idempotency.begin(scope, "j", "f", now, 1000)).kind).toBe("started");
      await idempotency.abandon(scope, "j");
      expect((await idempotency.begin(scope, "j", "other", now, 1000)).kind).toBe("started");
      expect(await idempotency.purge(now + 10_000)).toBeGreaterThan(0);
    });

    it("of concurrent begins of one key exactly one is started, also when they replace an expired key", async () => {
      const idempotency = await adapter.make();
      const now = Date.now();
      const race = (at: number) => Promise.all(Array.from({ length: 12 }, () => idempotency.begin(scope, "race", "f", at, 1000)));
      const started = (results: { kind: string }[]) => results.filter((r) => r.kind === "started").length;
      expect(started(await race(now))).toBe(1);
      expect(started(await race(now + 1000))).toBe(1);
    });
  });
}

for (const adapter of KEY_ADAPTERS) {
  describe(`KeyStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    it("finds keys by hash, revokes, and keeps one webhook secret per account and environment", async () => {
      const { keys } = await adapter.make();
      const k = await keys.createKey("acme", "live", "hash1", "wxyz", "key_1", 1);
      expect(await keys.findByHash("hash1")).toMatchObject({ id: "key_1", accountName: "acme", livemode: true, revokedAt: null });
      expect(await keys.findByHash("nope")).toBeNull();
      expect(await keys.revoke("key_1", 5)).toBe(true);
      expect((await keys.findByHash("hash1"))!.revokedAt).toBe(5);
      expect(await keys.revoke("key_missing", 5)).toBe(false);
      let n = 0;
      const make = () => `whsec_${++n}`;
      const s1 = await keys.webhookSecret("acme", "live", make, 1);
      expect(await keys.webhookSecret("acme", "live", make, 2)).toBe(s1);
      expect((await keys.webhookSecretFor(k.accountId, true, make, 3)).secret).toBe(s1);
      expect(await keys.webhookSecret("acme", "test", make, 1)).not.toBe(s1);
      expect((await keys.list()).map((x) => x.id)).toEqual(["key_1"]);
    });

    it("lists accounts and key hashes, and adopts an account under the id another store gave it", async () => {
      const { keys, reopenKeys } = await adapter.make();
      const made = await keys.createKey("acme", "test", "hash-a", "abcd", "key_a", 10);
      await keys.createKey("acme", "live", "hash-b", "efgh", "key_b", 11);
      await keys.revoke("key_b", 12);
      expect(await keys.adoptAccount({ id: "acct_moved", name: "globex", createdAt: 5 })).toBe("acct_moved");
      // Adopted again: the same id, nothing written twice. A name taken: its own id, not the one offered.
      expect(await keys.adoptAccount({ id: "acct_moved", name: "globex", createdAt: 5 })).toBe("acct_moved");
      expect(await keys.adoptAccount({ id: "acct_other", name: "acme", createdAt: 1 })).toBe(made.accountId);
      const other = await reopenKeys();
      expect(await other.accounts()).toEqual([
        { id: "acct_moved", name: "globex", createdAt: 5 },
        { id: made.accountId, name: "acme", createdAt: 10 },
      ]);
      expect(await other.keyHashes()).toEqual(
        new Map([
          ["key_a", "hash-a"],
          ["key_b", "hash-b"],
        ]),
      );
      // The adopted account is the one keys made by its name go to.
      expect((await other.createKey("globex", "test", "hash-c", "ijkl", "key_c", 13)).accountId).toBe("acct_moved");
      expect(await other.accountId("globex", 14)).toBe("acct_moved");
    });

    it("keeps a review policy per account and environment, when_unsure until set", async () => {
      const { keys, reopenKeys } = await adapter.make();
      const accountId = await keys.accountId(`acme-${newId("acct")}`, 1);
      expect(await keys.reviewPolicy(accountId, false)).toBe("when_unsure");
      await keys.setReviewPolicy(accountId, false, "always");
      await keys.setReviewPolicy(accountId, true, "off");
      const other = await reopenKeys();
      expect(await other.reviewPolicy(accountId, false)).toBe("always");
      expect(await other.reviewPolicy(accountId, true)).toBe("off");
      await other.setReviewPolicy(accountId, false, "when_unsure");
      expect(await keys.reviewPolicy(accountId, false)).toBe("when_unsure");
      expect(await keys.reviewPolicy("acct_nobody", false)).toBe("when_unsure");
    });

    it("keeps one branding per account, for test and live alike, none until set, replaced whole", async () => {
      const { keys, reopenKeys } = await adapter.make();
      const accountId = await keys.accountId(`acme-${newId("acct")}`, 1);
      const otherAccount = await keys.accountId(`globex-${newId("acct")}`, 1);
      expect(await keys.branding(accountId)).toEqual(NO_BRANDING);
      const branded: Branding = {
        displayName: "Acme Insurance — Ünfall & Co",
        accentColor: "#1d4ed8",
        logo: { id: "logo_abcdefghijklmnopqrstuvwx", width: 480, height: 120, bytes: 5120 },
        updatedAt: 10,
      };
      await keys.setBranding(accountId, branded);
      const other = await reopenKeys();
      expect(await other.branding(accountId)).toEqual(branded);
      expect(await other.branding(otherAccount)).toEqual(NO_BRANDING);
      // Replaced whole: a field left out is gone.
      await other.setBranding(accountId, { displayName: "Acme", accentColor: null, logo: null, updatedAt: 20 });
      expect(await keys.branding(accountId)).toEqual({ displayName: "Acme", accentColor: null, logo: null, updatedAt: 20 });
      // Setting it leaves the review policies as they were.
      expect(await keys.reviewPolicy(accountId, false)).toBe("when_unsure");
      expect(await keys.branding("acct_nobody")).toEqual(NO_BRANDING);
    });

    it("rotates the webhook secret, the one it replaces signing beside it until the overlap ends", async () => {
      const { keys, reopenKeys } = await adapter.make();
      let n = 0;
      const make = () => `whsec_${++n}`;
      const accountId = await keys.accountId("acme", 1);
      expect(await keys.accountId("acme", 2)).toBe(accountId);
      expect(await keys.webhookSecretFor(accountId, false, make, 10)).toEqual({
        secret: "whsec_1",
        createdAt: 10,
        previousSecret: null,
        previousExpiresAt: null,
      });
      expect(await keys.rotateWebhookSecret(accountId, false, make, 20, 100)).toEqual({
        secret: "whsec_2",
        createdAt: 20,
        previousSecret: "whsec_1",
        previousExpiresAt: 120,
      });
      expect(await keys.webhookSecretFor(accountId, false, make, 119)).toMatchObject({ secret: "whsec_2", previousSecret: "whsec_1" });
      expect(await (await reopenKeys()).webhookSecretFor(accountId, false, make, 119)).toMatchObject({
        secret: "whsec_2",
        previousSecret: "whsec_1",
      });
      expect(await keys.webhookSecretFor(accountId, false, make, 120)).toEqual({
        secret: "whsec_2",
        createdAt: 20,
        previousSecret: null,
        previousExpiresAt: null,
      });
      // Rotating again during an overlap: the secret rotated out takes the earlier one's place.
      await keys.rotateWebhookSecret(accountId, false, make, 130, 100);
      expect(await keys.rotateWebhookSecret(accountId, false, make, 140, 100)).toMatchObject({
        secret: "whsec_4",
        previousSecret: "whsec_3",
        previousExpiresAt: 240,
      });
      // No overlap: the old secret stops at once.
      expect(await keys.rotateWebhookSecret(accountId, false, make, 150, 0)).toMatchObject({ secret: "whsec_5", previousSecret: null });
      expect(await keys.webhookSecret("acme", "test", make, 160)).toBe("whsec_5");
      // The other environment has no secret yet: rotating makes its first, with nothing to overlap.
      expect(await keys.rotateWebhookSecret(accountId, true, make, 170, 100)).toEqual({
        secret: "whsec_6",
        createdAt: 170,
        previousSecret: null,
        previousExpiresAt: null,
      });
    });

    it("two processes making one account on first use make it once", async () => {
      const { keys, reopenKeys } = await adapter.make();
      const other = await reopenKeys();
      const ids = await Promise.all([keys.accountId("race", 1), other.accountId("race", 1), keys.accountId("race", 1)]);
      expect(new Set(ids).size).toBe(1);
      expect(await other.accountId("race", 2)).toBe(ids[0]);
    });

    it("a key revoked by another process (the CLI) is seen revoked soon after", async () => {
      const { keys, reopenKeys } = await adapter.make();
      await keys.createKey("acme", "test", "hash2", "abcd", "key_2", 1);
      expect((await keys.findByHash("hash2"))!.revokedAt).toBeNull();
      expect((await keys.findByHash("hash2"))!.revokedAt).toBeNull();
      expect(await (await reopenKeys()).revoke("key_2", 7)).toBe(true);
      await afterOtherProcessWrites();
      expect((await keys.findByHash("hash2"))!.revokedAt).toBe(7);
    });
  });
}

for (const adapter of USER_ADAPTERS) {
  describe(`UserStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    const user = (email: string) => ({ id: newId("user"), email, passwordHash: "$argon2id$x" });

    it("creates users in an account made on first use; an email has one user", async () => {
      const { users, keys } = await adapter.make();
      const ann = (await users.createUser("acme", user("ann@example.com"), 1))!;
      expect(ann).toMatchObject({ email: "ann@example.com", accountName: "acme", passwordHash: "$argon2id$x", createdAt: 1 });
      expect(await users.createUser("other", user("ann@example.com"), 2)).toBeNull();
      const bob = (await users.createUser("acme", user("bob@example.com"), 3))!;
      expect(bob.accountId).toBe(ann.accountId);
      // The account is the one API keys name too.
      expect((await keys.createKey("acme", "test", "h-acme", "wxyz", "key_acme", 4)).accountId).toBe(ann.accountId);
      expect((await users.listUsers(ann.accountId)).map((u) => u.email)).toEqual(["ann@example.com", "bob@example.com"]);
      expect(await users.findByEmail("nobody@example.com")).toBeNull();
    });

    it("finds a session's user until it expires or is deleted", async () => {
      const { users } = await adapter.make();
      const ann = (await users.createUser("acme", user("ann@example.com"), 1))!;
      await users.createSession("s1", ann.id, 10, 100);
      await users.createSession("s2", ann.id, 10, 100);
      expect((await users.sessionUser("s1", 99))!.id).toBe(ann.id);
      expect(await users.sessionUser("s1", 100)).toBeNull();
      await users.deleteSession("s2");
      expect(await users.sessionUser("s2", 50)).toBeNull();
      expect(await users.sessionUser("unknown", 50)).toBeNull();
    });

    it("accepts an invite once, before it expires, into the inviter's account", async () => {
      const { users } = await adapter.make();
      const lead = (await users.createUser("team", user("lead@example.com"), 1))!;
      const invite = { accountId: lead.accountId, email: "new@example.com", invitedBy: lead.id, createdAt: 2, expiresAt: 100 };
      await users.createInvite("t1", invite);
      await users.createInvite("t2", { ...invite, email: "late@example.com" });
      expect(await users.openInvite("t1", 50)).toMatchObject({ email: "new@example.com", acceptedAt: null });
      const joined = (await users.acceptInvite("t1", { id: newId("user"), passwordHash: "h" }, 50))!;
      expect(joined).toMatchObject({ email: "new@example.com", accountId: lead.accountId });
      expect(await users.openInvite("t1", 51)).toBeNull();
      expect(await users.acceptInvite("t1", { id: newId("user"), passwordHash: "h" }, 51)).toBeNull();
      expect(await users.acceptInvite("t2", { id: newId("user"), passwordHash: "h" }, 100)).toBeNull();
      expect(await users.findByEmail("late@example.com")).toBeNull();
    });

    it("of concurrent accepts of one invite, or creates of one email, one makes a user", async () => {
      const { users } = await adapter.make();
      const lead = (await users.createUser("race", user("lead@example.com"), 1))!;
      await users.createInvite("t", {
        accountId: lead.accountId,
        email: "one@example.com",
        invitedBy: lead.id,
        createdAt: 2,
        expiresAt: 100,
      });
      const accepted = await Promise.all(
        Array.from({ length: 4 }, () => users.acceptInvite("t", { id: newId("user"), passwordHash: "h" }, 50)),
      );
      expect(accepted.filter((u) => u !== null)).toHaveLength(1);
      const made = await Promise.all(Array.from({ length: 4 }, () => users.createUser("race", user("two@example.com"), 3)));
      expect(made.filter((u) => u !== null)).toHaveLength(1);
      expect((await users.listUsers(lead.accountId)).map((u) => u.email).sort()).toEqual([
        "lead@example.com",
        "one@example.com",
        "two@example.com",
      ]);
    });

    it("keeps when each key was last used", async () => {
      const { users } = await adapter.make();
      await users.touchKey("key_a", 5);
      await users.touchKey("key_a", 9);
      await users.touchKey("key_b", 7);
      expect(await users.keysLastUsed(["key_a", "key_b", "key_c"])).toEqual(
        new Map([
          ["key_a", 9],
          ["key_b", 7],
        ]),
      );
      expect(await users.keysLastUsed([])).toEqual(new Map());
    });
  });
}

for (const adapter of BLOB_ADAPTERS) {
  describe(`BlobStore contract: ${adapter.name}`, () => {
    if (adapter.before) beforeAll(adapter.before);
    if (adapter.after) afterAll(adapter.after);
    it("puts, gets, overwrites and deletes; a missing blob is null", async () => {
      const blobs = adapter.make();
      await blobs.put("photos/a/b.jpg", Buffer.from("one"), "image/jpeg");
      expect((await blobs.get("photos/a/b.jpg"))!.toString()).toBe("one");
      await blobs.put("photos/a/b.jpg", Buffer.from("two"), "image/jpeg");
      expect((await blobs.get("photos/a/b.jpg"))!.toString()).toBe("two");
      await blobs.delete("photos/a/b.jpg");
      expect(await blobs.get("photos/a/b.jpg")).toBeNull();
      await blobs.delete("photos/a/b.jpg");
      await expect(blobs.get("../../etc/passwd")).rejects.toThrow();
      await expect(blobs.put("photos/../../x.jpg", Buffer.from("x"), "image/jpeg")).rejects.toThrow();
    });

    it("lists the names directly in a folder in byte order, after a name, at most a limit", async () => {
      const blobs = adapter.make();
      const folder = `index/${newId("acct")}/`;
      const names = ["b~2", "a~1", "B~0", "c~3", "a~10"];
      for (const n of names) await blobs.put(folder + n, Buffer.from(n), "text/plain");
      await blobs.put(`${folder}deeper/x`, Buffer.from("x"), "text/plain");
      await blobs.put(`index/${newId("acct")}/other`, Buffer.from("o"), "text/plain");
      expect(await blobs.list(folder, null, 10)).toEqual(["B~0", "a~1", "a~10", "b~2", "c~3"]);
      expect(await blobs.list(folder, "a~1", 2)).toEqual(["a~10", "b~2"]);
      expect(await blobs.list(folder, "c~3", 10)).toEqual([]);
      expect(await blobs.list(`index/${newId("acct")}/`, null, 10)).toEqual([]);
    });

    it("gives back exactly the bytes it was given", async () => {
      const blobs = adapter.make();
      // Binary and larger than one network chunk: framing or re-encoding on the way would show.
      const bytes = randomBytes(300_000);
      await blobs.put("model-inputs/a/b-384.rgb", bytes, "application/octet-stream");
      expect((await blobs.get("model-inputs/a/b-384.rgb"))!.equals(bytes)).toBe(true);
      expect(await blobs.get("model-inputs/a/other-384.rgb")).toBeNull();
    });

    it("streams a blob with its length; a missing one is null", async () => {
      const blobs = adapter.make();
      const bytes = randomBytes(300_000);
      await blobs.put("evidence/a/b.jpg", bytes, "image/jpeg");
      const opened = (await blobs.open("evidence/a/b.jpg"))!;
      expect(opened.bytes).toBe(bytes.length);
      expect(Buffer.concat(await opened.stream.toArray()).equals(bytes)).toBe(true);
      expect(await blobs.open("evidence/a/none.jpg")).toBeNull();
      await expect(blobs.open("../x")).rejects.toThrow();
    });

    it("creates a blob once: of racing creates exactly one stores, and its bytes stay", async () => {
      const blobs = adapter.make();
      const key = `reports/insp_${randomBytes(6).toString("hex")}.json`;
      const bodies = Array.from({ length: 6 }, (_, i) => Buffer.from(`{"writer":${i}}`));
      const created = await Promise.all(bodies.map((b) => blobs.create(key, b, "application/json")));
      expect(created.filter(Boolean)).toHaveLength(1);
      const winner = bodies[created.indexOf(true)]!;
      expect((await blobs.get(key))!.equals(winner)).toBe(true);
      expect(await blobs.create(key, Buffer.from("later"), "application/json")).toBe(false);
      expect((await blobs.get(key))!.equals(winner)).toBe(true);
      await blobs.delete(key);
      expect(await blobs.create(key, Buffer.from("again"), "application/json")).toBe(true);
      expect((await blobs.get(key))!.toString()).toBe("again");
    });
  });
}
