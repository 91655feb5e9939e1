import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryBus } from "../../core/adapters/memory/memory-bus.ts";
import { MemoryEventStore } from "../../core/adapters/memory/memory-event-store.ts";
import { MemoryInspectionStore } from "../../core/adapters/memory/memory-inspection-store.ts";
import { MemoryKeyStore } from "../../core/adapters/memory/memory-key-store.ts";
import { MemoryState } from "../../core/adapters/memory/memory-state.ts";
import { newId } from "../../core/domain/ids.ts";
import type { Bus } from "../../core/ports/bus.ts";
import { systemClock } from "../../core/runtime/time.ts";
import { BusWebhookDispatcher } from "../../operator/bus-webhook-dispatcher.ts";
import { WebhookRelay } from "../../operator/webhook-relay.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * Cluster mode's webhook delivery in one process: the outbox relayed to an in-memory bus and
 * delivered by its consumer group, over in-memory stores and a real HTTP receiver. Each
 * dispatcher stands for one operator process; the cluster test runs the same code over NATS.
 */
const SCHEDULE_MS = [300, 300, 300];

describe("webhook dispatch over the bus", () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  async function setup() {
    const state = new MemoryState();
    const events = new MemoryEventStore(state);
    const keys = new MemoryKeyStore(state);
    const inspections = new MemoryInspectionStore(state);
    const { accountId } = await keys.createKey("acme", "test", "hash-of-key", "abcd", newId("key"), Date.now());
    const scope = { accountId, livemode: false };
    const receiver = await new WebhookReceiver().start();
    const bus = new MemoryBus();
    closing.push(() => receiver.close());
    /** One operator: the relay and a member of the `dispatch` group, over its own connection to the bus. */
    const operator = async (over: Bus = bus, overrides: Partial<Parameters<typeof BusWebhookDispatcher.open>[1]> = {}) => {
      const dispatcher = await BusWebhookDispatcher.open(over, {
        events,
        keys,
        clock: systemClock,
        log: pino({ level: "silent" }),
        retryScheduleMs: SCHEDULE_MS,
        timeoutMs: 2_000,
        allowPrivateTargets: true,
        pollMs: 20,
        ...overrides,
      });
      dispatcher.start();
      closing.push(() => dispatcher.stop());
      return dispatcher;
    };
    const append = async () => {
      const eventId = newId("evt");
      const data = JSON.stringify({ id: eventId, object: "event", type: "inspection.created" });
      await inspections.create(sampleInspection({ accountId, notifyUrl: receiver.url }), newId("insp"), () => ({
        id: eventId,
        type: "inspection.created",
        data,
      }));
      return eventId;
    };
    const attempts = async (eventId: string) => (await events.attempts([eventId])).get(eventId)!;
    return { scope, state, events, receiver, bus, operator, append, attempts };
  }

  it("retries on the schedule by nak, every attempt recorded, once each though two operators consume", async () => {
    const { scope, events, receiver, bus, operator, append, attempts } = await setup();
    receiver.respond = (n) => (n < 2 ? 500 : 200);
    await operator();
    await operator(bus.another());
    const eventId = await append();
    await until(
      "delivered",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "succeeded",
    );
    const made = await attempts(eventId);
    expect(made.map((a) => [a.n, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([eventId, eventId, eventId]);
    // No attempt before its time: the schedule's wait less its 10% jitter.
    for (let i = 1; i < receiver.received.length; i++) {
      expect(receiver.received[i]!.at - receiver.received[i - 1]!.at).toBeGreaterThanOrEqual(SCHEDULE_MS[i - 1]! * 0.9 - 5);
    }
    expect(await bus.deadLetters("webhooks")).toEqual([]);
  });

  it("marks the delivery failed once the schedule's attempts are used up, and delivers a resend as a new message", async () => {
    const { scope, events, receiver, operator, append, attempts } = await setup();
    receiver.respond = () => 500;
    await operator();
    const eventId = await append();
    await until(
      "failed for good",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "failed",
    );
    expect((await attempts(eventId)).map((a) => a.n)).toEqual([1, 2, 3, 4]);
    receiver.respond = () => 200;
    await events.resend(scope, eventId, Date.now());
    await until(
      "the resend delivered",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "succeeded",
    );
    expect((await attempts(eventId)).map((a) => [a.n, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 500],
      [5, 200],
    ]);
  });

  it("stores an event published again once (the relay died before marking it published), and delivers it once", async () => {
    const { scope, state, events, receiver, bus, operator, append } = await setup();
    const relay = new WebhookRelay({ events, bus, log: pino({ level: "silent" }), clock: systemClock, pollMs: 20, stalledAfterMs: 60_000 });
    relay.start();
    closing.push(() => relay.stop());
    const eventId = await append();
    await until(
      "published",
      () => events.unpublished(10),
      (u) => u.length === 0,
    );
    state.publishedEvents.delete(eventId);
    await until(
      "published again",
      () => events.unpublished(10),
      (u) => u.length === 0,
    );
    await relay.stop();
    // Sixteen deliveries at once: two stored messages would be two POSTs.
    await operator();
    await until(
      "delivered",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "succeeded",
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(1);
  });

  it("publishes again an event whose message was dead-lettered while the store failed, and delivers it", async () => {
    const { scope, events, receiver, operator, append } = await setup();
    // A bus whose duplicate window is shorter than the wait before an overdue event is published again, as NATS's is.
    const bus = new MemoryBus({ duplicateWindowMs: 100 });
    let storeDown = true;
    // While down, the store fails the delivery's read and the relay's look for overdue events; the
    // event was published before it failed. Overdue events looked for during the outage would each
    // be one more message delivered at once when the store is back: at least once, not once.
    const failing = new Proxy(events, {
      get(target, prop) {
        if ((prop === "get" || prop === "stalled") && storeDown) {
          return async () => {
            throw new Error("the event store is unavailable");
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const eventId = await append();
    // Overdue after 2 s: the store is back long before a second look could publish it twice.
    await operator(bus, { events: failing, stalledAfterMs: 2_000 });
    // Every delivery fails on the store, the last one too: the bus dead-letters the message.
    await until(
      "dead-lettered",
      () => bus.deadLetters("webhooks"),
      (dead) => dead.length === 1,
      20_000,
    );
    expect((await events.get(scope, eventId))!.deliveryStatus).toBe("pending");
    expect(receiver.received).toHaveLength(0);
    storeDown = false;
    await until(
      "delivered after all",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "succeeded",
    );
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([eventId]);
  });

  it("hands the deliveries of an operator that stopped between attempts to the next one", async () => {
    const { scope, events, receiver, bus, operator, append, attempts } = await setup();
    receiver.respond = (n) => (n < 1 ? 500 : 200);
    const first = await operator();
    const eventId = await append();
    await until(
      "the first attempt",
      () => attempts(eventId),
      (a) => a.length === 1,
    );
    await first.stop();
    await operator(bus.another());
    await until(
      "delivered by the next operator",
      () => events.get(scope, eventId),
      (e) => e?.deliveryStatus === "succeeded",
    );
    expect((await attempts(eventId)).map((a) => a.statusCode)).toEqual([500, 200]);
    expect(receiver.received).toHaveLength(2);
  });
});
