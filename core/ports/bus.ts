/**
 * The topics of the bus, named once: `webhooks` carries outbox events to their delivery
 * (operator/webhook-relay.ts, operator/bus-webhook-dispatcher.ts); `intents` wakes the controller for
 * the capture intents an api workload recorded (core/operations/intents-over-bus.ts).
 */
export const TOPICS = ["webhooks", "intents"] as const;
export type Topic = (typeof TOPICS)[number];

/** Where a topic's messages go once they will never be handled: termed, or out of deliveries. */
export const deadTopic = (topic: Topic) => `dead.${topic}` as const;

/** One delivery of a message to one member of a consumer group. */
export type BusMessage = {
  /** The id it was published with. */
  id: string;
  body: string;
  /** 1 on the first delivery, counting every redelivery (after a nak, an ack wait or a crash). */
  deliveryCount: number;
  /** Done with it: it is removed from the topic. */
  ack(): Promise<void>;
  /** Not now: delivered again (to any member) once `delayMs` has passed; `error` says why, kept if it dies. */
  nak(delayMs?: number, error?: string): Promise<void>;
  /** Never: it goes to the dead-letter topic at once with `error`. */
  term(error: string): Promise<void>;
};

export type ConsumeOptions = {
  /**
   * Deliveries a message is given: one that is nakked (or throws, or is not settled within the ack
   * wait) on its last goes to `dead.<topic>` with its last error instead of being delivered again.
   */
  maxDeliver: number;
  /** A delivery not settled within this is given again (its member is taken to have died). */
  ackWaitMs: number;
  /** Messages this member handles at once (default 1). */
  concurrency?: number;
};

/** A message that will not be handled, as `dead.<topic>` keeps it. */
export type DeadLetter = { id: string; body: string; deliveries: number; error: string; deadAt: number };

export type Subscription = {
  /** Stops taking messages and waits for the handlers running; what they leave unsettled is delivered again after the ack wait. */
  close(): Promise<void>;
};

/** A handler settles each message with ack, nak or term; one that throws is a nak after a short delay, its error kept. */
export type Handler = (msg: BusMessage) => Promise<void>;

/**
 * Durable topics with at-least-once delivery to consumer groups, the cluster's work queues.
 *
 * - `publish` stores a message under `id`: the same id published again within the adapter's
 *   duplicate window is stored once, so a publisher that crashed after publishing may publish again.
 * - `consume` joins `group` on `topic`: the members of a group share its messages, each delivered
 *   to one member at a time. The group is durable: messages published while it has no member wait
 *   for the next. A topic is a work queue with one group; a second group on it is refused.
 * - A member that dies with a message unsettled loses it to another after `ackWaitMs`; a handler
 *   must therefore tolerate a message it has already handled (delivery is at least once).
 */
export interface Bus {
  publish(topic: Topic, id: string, body: string): Promise<void>;
  consume(topic: Topic, group: string, handler: Handler, options: ConsumeOptions): Promise<Subscription>;
  /** The messages of `dead.<topic>`, oldest first; they stay there (nothing consumes them away). */
  deadLetters(topic: Topic, limit?: number): Promise<DeadLetter[]>;
  /** Closes every subscription of this bus (as their close does). The connection, if any, stays its owner's. */
  close(): Promise<void>;
}

/** How long a message whose handler threw waits before it is delivered again. */
export const THROWN_RETRY_MS = 500;

/** What a thrown handler error is kept as. */
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
