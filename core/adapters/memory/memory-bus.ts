import {
  type Bus,
  type BusMessage,
  type ConsumeOptions,
  type DeadLetter,
  errorText,
  type Handler,
  type Subscription,
  THROWN_RETRY_MS,
  TOPICS,
  type Topic,
} from "../../ports/bus.ts";
import { systemClock, type Clock } from "../../runtime/time.ts";

/** As the NATS adapter's default: longer than a publisher takes to restart. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;

type Stored = {
  id: string;
  body: string;
  deliveries: number;
  /** Delivered and not settled yet, or waiting out a nak's delay: not to be delivered now. */
  held: boolean;
  /** Counts deliveries, so a settle or an ack wait of an earlier one is told from the current one's. */
  delivery: number;
  timer: NodeJS.Timeout | undefined;
};

type Member = { handler: Handler; slots: number; running: Set<Promise<void>>; closed: boolean };
type Group = { name: string; options: ConsumeOptions; members: Member[]; turn: number };
type TopicState = { messages: Stored[]; published: Map<string, number>; group: Group | null; dead: DeadLetter[] };

/** What the buses of one "server" share: `another()` connects a second bus to it, as another process would. */
type State = { topics: Map<Topic, TopicState>; clock: Clock; duplicateWindowMs: number };

/**
 * The bus in memory, held to the same contract as NATS JetStream (test/contract/bus.contract.test.ts).
 * Delays and ack waits run on timers (vitest's fake timers move them); the duplicate window and the
 * time a message died read the injected clock.
 */
export class MemoryBus implements Bus {
  readonly #state: State;
  readonly #subscriptions = new Set<Subscription>();

  constructor(options: { clock?: Clock; duplicateWindowMs?: number } = {}, state?: State) {
    this.#state = state ?? {
      topics: new Map(TOPICS.map((t) => [t, { messages: [], published: new Map(), group: null, dead: [] }])),
      clock: options.clock ?? systemClock,
      duplicateWindowMs: options.duplicateWindowMs ?? DUPLICATE_WINDOW_MS,
    };
  }

  /** A second bus over the same topics: what another process's connection would see. */
  another(): MemoryBus {
    return new MemoryBus({}, this.#state);
  }

  async publish(topic: Topic, id: string, body: string): Promise<void> {
    const t = this.#topic(topic);
    const now = this.#state.clock.now();
    for (const [seen, at] of t.published) if (now - at >= this.#state.duplicateWindowMs) t.published.delete(seen);
    if (t.published.has(id)) return;
    t.published.set(id, now);
    t.messages.push({ id, body, deliveries: 0, held: false, delivery: 0, timer: undefined });
    this.#pump(t);
  }

  async consume(topic: Topic, group: string, handler: Handler, options: ConsumeOptions): Promise<Subscription> {
    const t = this.#topic(topic);
    if (t.group && t.group.name !== group) throw new Error(`topic ${topic} is consumed by group ${t.group.name}; it takes one group`);
    t.group ??= { name: group, options, members: [], turn: 0 };
    t.group.options = options;
    const member: Member = { handler, slots: options.concurrency ?? 1, running: new Set(), closed: false };
    t.group.members.push(member);
    const members = t.group.members;
    const subscription: Subscription = {
      close: async () => {
        member.closed = true;
        members.splice(members.indexOf(member), 1);
        this.#subscriptions.delete(subscription);
        await Promise.all(member.running);
      },
    };
    this.#subscriptions.add(subscription);
    this.#pump(t);
    return subscription;
  }

  async deadLetters(topic: Topic, limit = 100): Promise<DeadLetter[]> {
    return this.#topic(topic).dead.slice(0, limit);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#subscriptions].map((s) => s.close()));
  }

  #topic(topic: Topic): TopicState {
    const t = this.#state.topics.get(topic);
    if (!t) throw new Error(`unknown topic ${topic}`);
    return t;
  }

  /** Hands every message that may be delivered now to a member with a free slot, taking members in turn. */
  #pump(t: TopicState): void {
    const group = t.group;
    if (!group) return;
    for (const m of t.messages) {
      if (m.held) continue;
      const free = group.members.filter((x) => !x.closed && x.running.size < x.slots);
      if (free.length === 0) return;
      const member = free[group.turn++ % free.length]!;
      this.#deliver(t, group, member, m);
    }
  }

  #deliver(t: TopicState, group: Group, member: Member, m: Stored): void {
    const { maxDeliver, ackWaitMs } = group.options;
    m.deliveries++;
    m.held = true;
    const delivery = ++m.delivery;
    const current = () => m.delivery === delivery && m.held && t.messages.includes(m);
    const settle = (then: () => void) => {
      if (!current()) return;
      clearTimeout(m.timer);
      then();
    };
    const nak = (delayMs = 0, error = "nakked on its last delivery") => {
      if (m.deliveries >= maxDeliver) return this.#dead(t, m, error);
      m.delivery++;
      m.timer = setTimeout(() => this.#release(t, m), delayMs).unref();
    };
    m.timer = setTimeout(() => settle(() => nak(0, "not settled within its ack wait on its last delivery")), ackWaitMs).unref();
    const msg: BusMessage = {
      id: m.id,
      body: m.body,
      deliveryCount: m.deliveries,
      ack: async () => settle(() => this.#remove(t, m)),
      nak: async (delayMs, error) => settle(() => nak(delayMs, error)),
      term: async (error) => settle(() => this.#dead(t, m, error)),
    };
    const run = (async () => {
      await null; // the handler runs after the pump that chose it
      try {
        await member.handler(msg);
      } catch (error) {
        await msg.nak(THROWN_RETRY_MS, errorText(error));
      }
    })().finally(() => {
      member.running.delete(run);
      this.#pump(t);
    });
    member.running.add(run);
  }

  /** A nak's delay has passed: the message may be delivered again. */
  #release(t: TopicState, m: Stored): void {
    m.held = false;
    this.#pump(t);
  }

  #remove(t: TopicState, m: Stored): void {
    t.messages.splice(t.messages.indexOf(m), 1);
    this.#pump(t);
  }

  #dead(t: TopicState, m: Stored, error: string): void {
    t.dead.push({ id: m.id, body: m.body, deliveries: m.deliveries, error, deadAt: this.#state.clock.now() });
    this.#remove(t, m);
  }
}
