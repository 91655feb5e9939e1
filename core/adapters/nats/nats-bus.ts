import { setTimeout as sleep } from "node:timers/promises";
import {
  AckPolicy,
  type Consumer,
  type ConsumerMessages,
  type JetStreamManager,
  JetStreamApiError,
  type JsMsg,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  type Bus,
  type BusMessage,
  type ConsumeOptions,
  type DeadLetter,
  deadTopic,
  errorText,
  type Handler,
  type Subscription,
  THROWN_RETRY_MS,
  TOPICS,
  type Topic,
} from "../../ports/bus.ts";
import { type Nats, natsCall } from "./nats-connection.ts";
import { pullOne } from "./pull-one.ts";

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** Longer than a publisher takes to restart: a message it publishes again within this is stored once. */
const DUPLICATE_WINDOW_MS = 10 * MINUTE_MS;
/** How long one pull waits on the server before the next (the client's default is 30 s). */
const PULL_EXPIRES_MS = 10_000;
/**
 * Deliveries past `maxDeliver` the server still makes: one is the dead-letter delivery (the last
 * handler's member died unsettled), the rest retry it where NATS was away when it first tried.
 */
const DEAD_LETTER_DELIVERIES = 3;

/**
 * The streams of the bus, named once: one per topic (`WEBHOOKS` on subject `webhooks`, …) with
 * work-queue retention, so a message is stored until a member acks it; and `DEAD` (`dead.<topic>`),
 * kept 30 days for someone to look at.
 */
export const BUS_STREAMS = {
  topic: (topic: Topic) => ({ stream: topic.toUpperCase(), subject: topic }),
  dead: { stream: "DEAD", subject: deadTopic },
} as const;

const streamConfigs = (duplicateWindowMs: number): (Partial<StreamConfig> & { name: string })[] => [
  ...TOPICS.map((topic) => ({
    name: BUS_STREAMS.topic(topic).stream,
    subjects: [BUS_STREAMS.topic(topic).subject],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(duplicateWindowMs),
  })),
  {
    name: BUS_STREAMS.dead.stream,
    subjects: ["dead.*"],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(30 * DAY_MS),
    duplicate_window: nanos(duplicateWindowMs),
    // deadLetters() reads it by subject, message by message.
    allow_direct: true,
  },
];

/** A stream or consumer that exists with another configuration (an older release's): updated in place. */
const STREAM_NAME_IN_USE = 10058;
const CONSUMER_EXISTS = 10148;
const isCode = (error: unknown, code: number) => error instanceof JetStreamApiError && error.code === code;

/**
 * The bus over NATS JetStream: a stream per topic, a durable pull consumer per group (explicit
 * acks, `ack_wait`, `max_deliver`), message ids for deduplication, `nak(delay)` for retries, and
 * the adapter's own dead-lettering, since JetStream only stops delivering a message that ran out
 * of deliveries: the delivery that finds the count used up (or a nak or term on the last one)
 * publishes the message to `dead.<topic>` and then terms it.
 */
export class NatsBus implements Bus {
  readonly #nats: Nats;
  readonly #jsm: JetStreamManager;
  readonly #log: Logger | undefined;
  readonly #subscriptions = new Set<Subscription>();

  private constructor(nats: Nats, jsm: JetStreamManager, log: Logger | undefined) {
    this.#nats = nats;
    this.#jsm = jsm;
    this.#log = log;
  }

  /** Makes the streams where they are missing. The connection stays the caller's to close. */
  static async open(nats: Nats, options: { duplicateWindowMs?: number; log?: Logger } = {}): Promise<NatsBus> {
    const jsm = await nats.js.jetstreamManager();
    for (const config of streamConfigs(options.duplicateWindowMs ?? DUPLICATE_WINDOW_MS)) {
      try {
        await jsm.streams.add(config);
      } catch (error) {
        if (!isCode(error, STREAM_NAME_IN_USE)) throw error;
        await jsm.streams.update(config.name, config);
      }
    }
    return new NatsBus(nats, jsm, options.log);
  }

  async publish(topic: Topic, id: string, body: string): Promise<void> {
    await natsCall("the bus", () => this.#nats.js.publish(BUS_STREAMS.topic(topic).subject, body, { msgID: id }));
  }

  async consume(topic: Topic, group: string, handler: Handler, options: ConsumeOptions): Promise<Subscription> {
    const stream = BUS_STREAMS.topic(topic).stream;
    const config = { ack_wait: nanos(options.ackWaitMs), max_deliver: options.maxDeliver + DEAD_LETTER_DELIVERIES };
    try {
      await this.#jsm.consumers.add(stream, { durable_name: group, ack_policy: AckPolicy.Explicit, ...config });
    } catch (error) {
      if (!isCode(error, CONSUMER_EXISTS)) throw error;
      await this.#jsm.consumers.update(stream, group, config);
    }
    const consumer = await this.#nats.js.consumers.get(stream, group);
    const member = new Member(consumer, (msg) => this.#handle(topic, msg, handler, options), this.#log);
    const subscription: Subscription = {
      close: async () => {
        this.#subscriptions.delete(subscription);
        await member.close();
      },
    };
    this.#subscriptions.add(subscription);
    member.start(options.concurrency ?? 1);
    return subscription;
  }

  async deadLetters(topic: Topic, limit = 100): Promise<DeadLetter[]> {
    const out: DeadLetter[] = [];
    let seq = 1;
    while (out.length < limit) {
      const query = { seq, next_by_subj: BUS_STREAMS.dead.subject(topic) };
      const stored = await natsCall("the bus", () => this.#jsm.direct.getMessage(BUS_STREAMS.dead.stream, query));
      if (!stored) break;
      out.push(stored.json<DeadLetter>());
      seq = stored.seq + 1;
    }
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#subscriptions].map((s) => s.close()));
  }

  /** One delivery: the port's message over the JetStream one, settled once; a throw is a short nak. */
  async #handle(topic: Topic, js: JsMsg, handler: Handler, options: ConsumeOptions): Promise<void> {
    const id = js.headers?.get("Nats-Msg-Id") || String(js.seq);
    const body = js.string();
    const deliveryCount = js.info.deliveryCount;
    const dead = (error: string) =>
      this.#deadLetter(topic, js, { id, body, deliveries: Math.min(deliveryCount, options.maxDeliver), error });
    if (deliveryCount > options.maxDeliver) {
      await dead("not settled within its ack wait on its last delivery").catch((err) => this.#deadLetterFailed(topic, id, err));
      return;
    }
    let settled = false;
    const settle = async (run: () => Promise<unknown>) => {
      if (settled) return;
      await natsCall("the bus", run);
      settled = true;
    };
    const nak = (delayMs = 0, error = "nakked on its last delivery") =>
      settle(async () => (deliveryCount >= options.maxDeliver ? dead(error) : js.nak(delayMs)));
    const msg: BusMessage = {
      id,
      body,
      deliveryCount,
      ack: () => settle(() => js.ackAck()),
      nak,
      term: (error) => settle(() => dead(error)),
    };
    try {
      await handler(msg);
    } catch (error) {
      // Unsettled where even this fails (NATS away): delivered again after the ack wait.
      await nak(THROWN_RETRY_MS, errorText(error)).catch((err) => this.#log?.warn({ err, topic, id }, "nak failed"));
    }
  }

  /** Stored in DEAD first (its id the message's, so a repeat is stored once), then ended in its topic. */
  async #deadLetter(topic: Topic, js: JsMsg, letter: Omit<DeadLetter, "deadAt">): Promise<void> {
    const dead: DeadLetter = { ...letter, deadAt: Date.now() };
    await this.#nats.js.publish(BUS_STREAMS.dead.subject(topic), JSON.stringify(dead), { msgID: `${topic}.${letter.id}` });
    js.term(letter.error);
    this.#log?.error({ topic, id: letter.id, deliveries: letter.deliveries, error: letter.error }, "bus message dead-lettered");
  }

  #deadLetterFailed(topic: Topic, id: string, err: unknown): void {
    // Not settled: the server delivers it again after the ack wait, up to DEAD_LETTER_DELIVERIES times.
    this.#log?.warn({ err, topic, id }, "dead-lettering a bus message failed; it comes back after the ack wait");
  }
}

/** One member of a group: `slots` pull loops, each handling one message at a time. */
class Member {
  readonly #consumer: Consumer;
  readonly #handle: (msg: JsMsg) => Promise<void>;
  readonly #log: Logger | undefined;
  readonly #pulls = new Set<ConsumerMessages>();
  #loops: Promise<void>[] = [];
  #stopping = false;

  constructor(consumer: Consumer, handle: (msg: JsMsg) => Promise<void>, log: Logger | undefined) {
    this.#consumer = consumer;
    this.#handle = handle;
    this.#log = log;
  }

  start(slots: number): void {
    this.#loops = Array.from({ length: slots }, () => this.#loop());
  }

  /** Stops the pulls waiting on the server and waits for the handlers running. */
  async close(): Promise<void> {
    this.#stopping = true;
    for (const pull of this.#pulls) pull.stop();
    await Promise.all(this.#loops);
  }

  async #loop(): Promise<void> {
    while (!this.#stopping) {
      try {
        const msg = await this.#next();
        if (!msg) continue;
        // Taken as the member stopped: handed back at once rather than after the ack wait.
        if (this.#stopping) msg.nak();
        else await this.#handle(msg);
      } catch (error) {
        if (this.#stopping) break;
        this.#log?.warn({ err: error }, "pulling from the bus failed; trying again");
        await sleep(1_000);
      }
    }
  }

  /** One message, or null when the pull expired (or was stopped) without one. */
  #next(): Promise<JsMsg | null> {
    return pullOne(this.#consumer, this.#pulls, () => this.#stopping, PULL_EXPIRES_MS);
  }
}
