import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryRateLimitStore } from "../../core/adapters/memory/memory-rate-limit-store.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { NatsRateLimitStore } from "../../core/adapters/nats/nats-rate-limit-store.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import { startNatsServer, type NatsServer } from "../helpers/go-servers.ts";

/**
 * The RateLimitStore contract, run against every adapter. `replicas` are two stores over the same
 * counters as two API processes hold them: for memory, one store (its counters are the process's);
 * for NATS, one store per connection, as each replica has its own.
 */
let nats: { server: NatsServer; a: Nats; b: Nats } | undefined;
let buckets = 0;
const natsReplicas = async (watch: boolean): Promise<[RateLimitStore, RateLimitStore]> => {
  nats ??= await (async () => {
    const server = await startNatsServer();
    const [a, b] = await Promise.all(["replica-a", "replica-b"].map((name) => connectNats({ url: server.url, name })));
    return { server, a: a!, b: b! };
  })();
  const bucket = `rate-limits-${++buckets}`;
  const open = (n: Nats) => NatsRateLimitStore.open(n.kvm, { bucket, ttlMs: 60_000, watch });
  return [await open(nats.a), await open(nats.b)];
};
afterAll(async () => {
  if (!nats) return;
  await Promise.all([nats.a.close(), nats.b.close()]);
  await nats.server.close();
});

const ADAPTERS: { name: string; replicas: () => Promise<[RateLimitStore, RateLimitStore]> }[] = [
  {
    name: "memory",
    replicas: async () => {
      const store = new MemoryRateLimitStore();
      return [store, store];
    },
  },
  { name: "nats (peek reads the bucket)", replicas: () => natsReplicas(false) },
  { name: "nats (peek from a watch)", replicas: () => natsReplicas(true) },
];

/** How long another replica's count may take to reach a watching one. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

for (const adapter of ADAPTERS) {
  describe(`RateLimitStore contract: ${adapter.name}`, () => {
    beforeAll(async () => {
      await adapter.replicas();
    });

    it("allows `limit` at once, then refuses until one interval has passed; a refusal is not counted", async () => {
      const [store] = await adapter.replicas();
      const now = 1_000_000;
      const taken = [];
      for (let i = 0; i < 5; i++) taken.push(await store.take("k", 5, 1000, now));
      expect(taken.map((a) => [a.allowed, a.used])).toEqual([
        [true, 1],
        [true, 2],
        [true, 3],
        [true, 4],
        [true, 5],
      ]);
      expect(taken.at(-1)!.resetMs).toBe(1000);
      const refused = await store.take("k", 5, 1000, now + 10);
      expect(refused).toMatchObject({ allowed: false, used: 6, resetMs: 190 });
      // Refused again and again: none of them is counted, so the next is allowed after 200 ms.
      for (let i = 0; i < 3; i++) expect((await store.take("k", 5, 1000, now + 100)).allowed).toBe(false);
      expect(await store.take("k", 5, 1000, now + 200)).toMatchObject({ allowed: true, used: 5 });
      expect((await store.take("k", 5, 1000, now + 200)).allowed).toBe(false);
      // A window after the last, the bucket is full again.
      expect(await store.take("k", 5, 1000, now + 1200)).toMatchObject({ allowed: true, used: 1 });
      // Another key has its own allowance.
      expect(await store.take("other", 5, 1000, now)).toMatchObject({ allowed: true, used: 1 });
    });

    it("peek counts nothing and says what the next take would", async () => {
      const [store] = await adapter.replicas();
      const now = 2_000_000;
      expect(await store.peek("p", 2, 60_000, now)).toMatchObject({ allowed: true, used: 0 });
      await store.take("p", 2, 60_000, now);
      expect(await store.peek("p", 2, 60_000, now)).toMatchObject({ allowed: true, used: 1 });
      await store.take("p", 2, 60_000, now);
      expect(await store.peek("p", 2, 60_000, now)).toMatchObject({ allowed: false, used: 2, resetMs: 30_000 });
      expect(await store.peek("p", 2, 60_000, now)).toMatchObject({ allowed: false, used: 2 });
      expect(await store.peek("p", 2, 60_000, now + 30_000)).toMatchObject({ allowed: true, used: 1 });
    });

    it("counts one allowance across replicas, also when they take at once", async () => {
      const [a, b] = await adapter.replicas();
      const now = 3_000_000;
      expect((await a.take("shared", 4, 1000, now)).allowed).toBe(true);
      expect((await b.take("shared", 4, 1000, now)).used).toBe(2);
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).take("shared", 4, 1000, now)));
      expect(burst.filter((x) => x.allowed)).toHaveLength(2);
      // What one replica counted, the other's peek sees.
      await settle();
      expect(await a.peek("shared", 4, 1000, now)).toMatchObject({ allowed: false, used: 4 });
      expect(await b.peek("shared", 4, 1000, now)).toMatchObject({ allowed: false, used: 4 });
    });

    it("counts a burst of one key at once exactly, each request its own place in it", async () => {
      const [store] = await adapter.replicas();
      const now = 5_000_000;
      const burst = await Promise.all(Array.from({ length: 50 }, () => store.take("burst", 20, 1000, now)));
      const allowed = burst.filter((a) => a.allowed);
      expect(allowed.map((a) => a.used).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(burst.filter((a) => !a.allowed).every((a) => a.used === 21 && a.resetMs === 50)).toBe(true);
    });

    it("many keys at once, each counted on its own", async () => {
      const [a, b] = await adapter.replicas();
      const now = 4_000_000;
      const keys = Array.from({ length: 50 }, (_, i) => `addr-${i}`);
      const taken = await Promise.all(keys.flatMap((k) => [a.take(k, 1, 1000, now), b.take(k, 1, 1000, now)]));
      expect(taken.filter((x) => x.allowed)).toHaveLength(50);
    });
  });
}
