import { createServer, connect, type Server, type Socket } from "node:net";
import { readFileSync, writeFileSync } from "node:fs";
import { CustomObjectsApi, KubeConfig, Watch } from "@kubernetes/client-node";
import { inspectionCache } from "../../core/adapters/kubernetes/inspection-cache.ts";
import { INSPECTION_RESOURCE } from "../../core/schemas/inspection-resource.ts";
import type { InspectionResource } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResourceCache } from "../../core/adapters/kubernetes/resource-cache.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { freePort } from "../helpers/free-port.ts";

/**
 * A TCP hop between the cache and the API server that the test controls, as a network would fail:
 * `cut` drops every connection mid-stream and refuses new ones until `heal`.
 */
class Hop {
  readonly #sockets = new Set<Socket>();
  #refusing = false;
  server!: Server;
  port = 0;

  async start(target: number): Promise<this> {
    this.port = await freePort();
    this.server = createServer((client) => {
      if (this.#refusing) return client.destroy();
      const upstream = connect(target, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => this.server.listen(this.port, "127.0.0.1", r));
    return this;
  }

  cut(): void {
    this.#refusing = true;
    for (const s of this.#sockets) s.destroy();
  }

  heal(): void {
    this.#refusing = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const inspection = (name: string, reference = `ref-${name}`) =>
  JSON.stringify({
    apiVersion: "inspection.dev/v1",
    kind: "Inspection",
    metadata: { name },
    spec: { reference, vehicle: { vin: "1HGCM82633A004352" }, accountId: "acct_cache", livemode: false },
  });

/**
 * The list-watch cache the Kubernetes inspection store reads through, against a real kube-apiserver
 * (its watch cache off, so a compacted version is a 410 from etcd itself), its connection running
 * through a hop the test cuts mid-stream.
 */
describe("ResourceCache over a real API server", () => {
  let k: ControlPlane;
  let hop: Hop;
  let cache: ResourceCache<InspectionResource>;
  const errors: unknown[] = [];

  beforeAll(async () => {
    k = await startControlPlane({ apiServerArgs: ["--watch-cache=false"] });
    await k.installCrds();
    for (const name of ["insp-a", "insp-b", "insp-c"]) await k.kubectlResult(["create", "-f", "-"], inspection(name));
    // The cache's kubeconfig: the same credentials, through the hop.
    const apiPort = Number(new URL(k.server).port);
    hop = await new Hop().start(apiPort);
    const config = JSON.parse(readFileSync(k.kubeconfig, "utf8"));
    config.clusters[0].cluster.server = `https://127.0.0.1:${hop.port}`;
    const hopConfig = `${k.kubeconfig}.hop`;
    writeFileSync(hopConfig, JSON.stringify(config));
    const kc = new KubeConfig();
    kc.loadFromFile(hopConfig);
    cache = inspectionCache(kc, "default", {
      relistMs: 3_600_000,
      minBackoffMs: 50,
      maxBackoffMs: 200,
      onError: (error) => errors.push(error),
    });
    await cache.start();
  }, 240_000);
  afterAll(async () => {
    await cache?.stop();
    await hop?.close();
    await k?.close();
  });

  const names = () =>
    cache
      .list()
      .map((o) => o.metadata!.name)
      .sort();
  const serverNames = async () =>
    (await k.kubectl("get", "insp", "-o", "jsonpath={.items[*].metadata.name}")).split(" ").filter(Boolean).sort();
  const settle = async () => {
    const want = await serverNames();
    await expect.poll(names, { timeout: 15_000 }).toEqual(want);
  };

  it("lists, then follows creates, changes and deletes as they happen", async () => {
    expect(names()).toEqual(["insp-a", "insp-b", "insp-c"]);
    await k.kubectlResult(["create", "-f", "-"], inspection("insp-d"));
    await k.kubectl("patch", "insp", "insp-a", "--type=merge", "--subresource=status", "-p", '{"status":{"phase":"in_progress"}}');
    await k.kubectl("delete", "insp", "insp-c");
    await settle();
    await expect.poll(() => (cache.get("default", "insp-a") as { status?: { phase?: string } }).status?.phase).toBe("in_progress");
    expect(cache.stats.lists).toBe(1);
    expect(cache.staleMs()).toBeLessThan(5_000);
  });

  it("a watch cut mid-stream is started again from where it was, and misses nothing", async () => {
    const { lists, watches } = cache.stats;
    hop.cut();
    await k.kubectlResult(["create", "-f", "-"], inspection("insp-e"));
    await k.kubectl("delete", "insp", "insp-d");
    await new Promise((r) => setTimeout(r, 500));
    expect(errors.length).toBeGreaterThan(0); // it tried, and backed off
    hop.heal();
    await settle();
    expect(cache.stats.watches).toBeGreaterThan(watches);
    // Resumed from its resourceVersion: no relist was needed.
    expect(cache.stats.lists).toBe(lists);
  });

  it("a version compacted away while it was cut off (410) is met by a relist", async () => {
    const { lists, gone } = cache.stats;
    hop.cut();
    await k.kubectlResult(["create", "-f", "-"], inspection("insp-f"));
    await k.kubectl("delete", "insp", "insp-a");
    // Compact etcd up to its current revision: the cache's resourceVersion is gone.
    const range = await fetch(`${k.etcdUrl}/v3/kv/range`, {
      method: "POST",
      body: JSON.stringify({ key: Buffer.from("/").toString("base64") }),
    });
    const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
    const compacted = await fetch(`${k.etcdUrl}/v3/kv/compaction`, { method: "POST", body: JSON.stringify({ revision, physical: true }) });
    expect(compacted.status).toBe(200);
    hop.heal();
    await settle();
    expect(cache.stats.gone).toBeGreaterThan(gone);
    expect(cache.stats.lists).toBeGreaterThan(lists);
  });

  it("reads its own create made while a relist's list was in flight, though the list lacks it", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const { group, version, plural } = INSPECTION_RESOURCE;
    const at = { group, version, plural, namespace: "default" };
    // The list answers, then waits for the test, once `holding`: the create lands between the two.
    let holding = false;
    const listed = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const own = new ResourceCache<InspectionResource>({
      list: async () => {
        const { items, metadata } = (await api.listNamespacedCustomObject(at)) as {
          items: InspectionResource[];
          metadata: { resourceVersion: string };
        };
        if (holding) {
          listed.resolve();
          await release.promise;
        }
        return { items, resourceVersion: metadata.resourceVersion };
      },
      watch: new Watch(kc),
      path: `/apis/${group}/${version}/namespaces/default/${plural}`,
      relistMs: 500,
    });
    try {
      await own.start();
      holding = true;
      await listed.promise;
      const created = (await api.createNamespacedCustomObject({
        ...at,
        body: JSON.parse(inspection("insp-mid-list")),
      })) as InspectionResource;
      own.wrote(created);
      const lists = own.stats.lists;
      holding = false;
      release.resolve();
      // The relist has held its list (the continuation runs before this), and its watch, started
      // only after it, cannot have delivered the create yet.
      await new Promise((r) => setImmediate(r));
      expect(own.stats.lists).toBe(lists + 1);
      expect(own.get("default", "insp-mid-list")?.metadata?.resourceVersion).toBe(created.metadata!.resourceVersion);
      expect(own.list().map((o) => o.metadata?.name)).toContain("insp-mid-list");
    } finally {
      await own.stop();
      await k.kubectl("delete", "insp", "insp-mid-list", "--ignore-not-found");
    }
  });

  it("rides out the client's 30 s inactivity timeout on a quiet watch, as no failure, and follows what comes after", async () => {
    const { watches, lists } = cache.stats;
    const failures = errors.length;
    await new Promise((r) => setTimeout(r, 33_000));
    await k.kubectlResult(["create", "-f", "-"], inspection("insp-quiet"));
    await settle();
    expect(cache.stats.watches).toBeGreaterThan(watches);
    expect(errors.length).toBe(failures);
    expect(cache.stats.lists).toBe(lists);
  }, 60_000);
});
