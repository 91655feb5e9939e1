import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { MemoryBus } from "../../core/adapters/memory/memory-bus.ts";
import { BUS_STREAMS, NatsBus } from "../../core/adapters/nats/nats-bus.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { type Bus, type BusMessage, type ConsumeOptions, TOPICS } from "../../core/ports/bus.ts";
import { startNatsServer, type NatsServer } from "../helpers/go-servers.ts";

/**
 * The Bus contract, run against every adapter: in memory, and NATS JetStream against a real
 * nats-server (one for the file; the bus's streams are made afresh for each test). `another` is a
 * second bus over the same topics, as another process would connect.
 */
type Buses = { bus: Bus; another: () => Promise<Bus> };

let nats: Promise<{ server: NatsServer; primary: Nats; other: Nats }> | undefined;
const natsServer = () =>
  (nats ??= (async () => {
    const server = await startNatsServer();
    const [primary, other] = await Promise.all(
      ["bus-contract", "bus-contract-other"].map((name) => connectNats({ url: server.url, name })),
    );
    return { server, primary: primary!, other: other! };
  })());
afterAll(async () => {
  if (!nats) return;
  const { server, primary, other } = await nats;
  await Promise.all([primary.close(), other.close()]);
  await server.close();
});

const ADAPTERS: { name: string; make: () => Promise<Buses> }[] = [
  {
    name: "memory",
    make: async () => {
      const bus = new MemoryBus();
      return { bus, another: async () => bus.another() };
    },
  },
  {
    name: "nats",
    make: async () => {
      const { primary, other } = await natsServer();
      const jsm = await primary.js.jetstreamManager();
      const streams = [...TOPICS.map((t) => BUS_STREAMS.topic(t).stream), BUS_STREAMS.dead.stream];
      for (const stream of streams) await jsm.streams.delete(stream).catch(() => {});
      return { bus: await NatsBus.open(primary), another: () => NatsBus.open(other) };
    },
  },
];

const OPTIONS: ConsumeOptions = { maxDeliver: 5, ackWaitMs: 5_000 };
/** A message is settled by one delivery at most once it has been acked: time enough to see a wrong redelivery. */
const QUIET_MS = 300;

/** Records every delivery a handler was given, when, and by which member. */
function recorder(settle: (msg: BusMessage) => Promise<void> = (msg) => msg.ack()) {
  const deliveries: { id: string; body: string; count: number; at: number; member: string }[] = [];
  const handler = (member: string) => async (msg: BusMessage) => {
    deliveries.push({ id: msg.id, body: msg.body, count: msg.deliveryCount, at: performance.now(), member });
    await settle(msg);
  };
  const until = (done: () => boolean, timeout = 10_000) =>
    vi.waitFor(() => expect(done(), JSON.stringify(deliveries)).toBe(true), { timeout, interval: 20 });
  return { deliveries, handler, until };
}

for (const adapter of ADAPTERS) {
  describe(`Bus contract: ${adapter.name}`, () => {
    const open: Bus[] = [];
    const make = async () => {
      const made = await adapter.make();
      open.push(made.bus);
      return {
        bus: made.bus,
        another: async () => {
          const bus = await made.another();
          open.push(bus);
          return bus;
        },
      };
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((b) => b.close()));
    });

    it("delivers each published message to the group once it is acked, with its id and body", async () => {
      const { bus } = await make();
      const r = recorder();
      await bus.publish("webhooks", "m1", "one");
      await bus.consume("webhooks", "dispatch", r.handler("a"), OPTIONS);
      await bus.publish("webhooks", "m2", "two");
      await r.until(() => r.deliveries.length === 2);
      await sleep(QUIET_MS);
      expect(r.deliveries.map(({ id, body, count }) => ({ id, body, count }))).toEqual([
        { id: "m1", body: "one", count: 1 },
        { id: "m2", body: "two", count: 1 },
      ]);
      // Topics are apart: nothing published on one reaches another's group.
      const intents = recorder();
      await bus.consume("intents", "controller", intents.handler("a"), OPTIONS);
      await sleep(QUIET_MS);
      expect(intents.deliveries).toEqual([]);
    });

    it("stores a message published twice under one id once, also after it was acked", async () => {
      const { bus } = await make();
      const r = recorder();
      await bus.publish("webhooks", "same", "first");
      await bus.publish("webhooks", "same", "second");
      await bus.consume("webhooks", "dispatch", r.handler("a"), OPTIONS);
      await r.until(() => r.deliveries.length === 1);
      await bus.publish("webhooks", "same", "third");
      await sleep(QUIET_MS);
      expect(r.deliveries.map((d) => d.body)).toEqual(["first"]);
    });

    it("delivers a nakked message again no earlier than its delay", async () => {
      const { bus } = await make();
      const delayMs = 600;
      const nakked: number[] = [];
      const r = recorder(async (msg) => {
        if (msg.deliveryCount > 1) return msg.ack();
        nakked.push(performance.now());
        await msg.nak(delayMs);
      });
      await bus.consume("webhooks", "dispatch", r.handler("a"), OPTIONS);
      await bus.publish("webhooks", "m", "x");
      await r.until(() => r.deliveries.length === 2);
      // 1 ms for the timers' rounding to whole milliseconds.
      expect(r.deliveries[1]!.at - nakked[0]!).toBeGreaterThanOrEqual(delayMs - 1);
      expect(r.deliveries.map((d) => d.count)).toEqual([1, 2]);
    });

    it("delivers a message nobody settled again once the ack wait has passed", async () => {
      const { bus } = await make();
      const ackWaitMs = 1_000;
      const r = recorder(async (msg) => {
        if (msg.deliveryCount > 1) await msg.ack();
      });
      await bus.consume("webhooks", "dispatch", r.handler("a"), { ...OPTIONS, ackWaitMs });
      // Measured from the publish, which the first delivery follows: the times the handler sees its
      // deliveries carry this process's own delays, so two of them may be closer than the ack wait.
      const publishedAt = performance.now();
      await bus.publish("webhooks", "m", "x");
      await r.until(() => r.deliveries.length === 2);
      expect(r.deliveries[1]!.at - publishedAt).toBeGreaterThanOrEqual(ackWaitMs - 1);
      await sleep(QUIET_MS);
      expect(r.deliveries.map((d) => d.count)).toEqual([1, 2]);
    });

    it("shares a group's messages between its members, each handled once", async () => {
      const { bus, another } = await make();
      const r = recorder(async (msg) => {
        await sleep(20);
        await msg.ack();
      });
      await bus.consume("webhooks", "dispatch", r.handler("a"), OPTIONS);
      await (await another()).consume("webhooks", "dispatch", r.handler("b"), OPTIONS);
      const ids = Array.from({ length: 30 }, (_, i) => `m${i}`);
      for (const id of ids) await bus.publish("webhooks", id, id);
      await r.until(() => r.deliveries.length >= ids.length);
      await sleep(QUIET_MS);
      expect(r.deliveries.map((d) => d.id).sort()).toEqual([...ids].sort());
      expect(new Set(r.deliveries.map((d) => d.member))).toEqual(new Set(["a", "b"]));
    });

    it("refuses a second group on a topic: a topic is one group's work queue", async () => {
      const { bus } = await make();
      await bus.consume("webhooks", "dispatch", recorder().handler("a"), OPTIONS);
      await expect(bus.consume("webhooks", "audit", recorder().handler("b"), OPTIONS)).rejects.toThrow();
    });

    it("dead-letters a message whose deliveries ran out, with its last error, and keeps it there", async () => {
      const { bus } = await make();
      const r = recorder(async (msg) => {
        throw new Error(`boom ${msg.deliveryCount}`);
      });
      await bus.consume("webhooks", "dispatch", r.handler("a"), { ...OPTIONS, maxDeliver: 3 });
      await bus.publish("webhooks", "doomed", "body");
      await vi.waitFor(async () => expect(await bus.deadLetters("webhooks")).toHaveLength(1), { timeout: 10_000, interval: 50 });
      await sleep(QUIET_MS);
      expect(r.deliveries.map((d) => d.count)).toEqual([1, 2, 3]);
      const [dead] = await bus.deadLetters("webhooks");
      expect(dead).toMatchObject({ id: "doomed", body: "body", deliveries: 3, error: "boom 3" });
      expect(await bus.deadLetters("intents")).toEqual([]);
      // Reading them takes nothing away.
      expect(await bus.deadLetters("webhooks")).toHaveLength(1);
    });

    it("dead-letters a termed message at once, and one whose last delivery was never settled", async () => {
      const { bus } = await make();
      const r = recorder(async (msg) => {
        if (msg.id === "unreadable") await msg.term("cannot parse it");
        // "silent" is never settled: its member is taken to have died.
      });
      await bus.consume("webhooks", "dispatch", r.handler("a"), { maxDeliver: 1, ackWaitMs: 400 });
      await bus.publish("webhooks", "unreadable", "?");
      await bus.publish("webhooks", "silent", "!");
      await vi.waitFor(async () => expect(await bus.deadLetters("webhooks")).toHaveLength(2), { timeout: 10_000, interval: 50 });
      const dead = await bus.deadLetters("webhooks");
      expect(dead.find((d) => d.id === "unreadable")).toMatchObject({ deliveries: 1, error: "cannot parse it" });
      expect(dead.find((d) => d.id === "silent")).toMatchObject({ deliveries: 1, error: expect.stringContaining("ack wait") });
      expect(r.deliveries.filter((d) => d.id === "silent")).toHaveLength(1);
    });

    it("keeps a group's messages while it has no member: one that comes back (another process) gets them", async () => {
      const { bus, another } = await make();
      const first = recorder();
      const sub = await bus.consume("webhooks", "dispatch", first.handler("a"), OPTIONS);
      await bus.publish("webhooks", "before", "1");
      await first.until(() => first.deliveries.length === 1);
      await sub.close();
      await bus.publish("webhooks", "meanwhile-1", "2");
      await bus.publish("webhooks", "meanwhile-2", "3");
      const back = recorder();
      await (await another()).consume("webhooks", "dispatch", back.handler("b"), OPTIONS);
      await back.until(() => back.deliveries.length === 2);
      await sleep(QUIET_MS);
      expect(back.deliveries.map((d) => d.id)).toEqual(["meanwhile-1", "meanwhile-2"]);
      expect(first.deliveries.map((d) => d.id)).toEqual(["before"]);
    });
  });
}
