import { maxAttempts } from "../core/domain/delivery-schedule.ts";
import { WebhookClient } from "../core/net/webhook-client.ts";
import type { Bus, BusMessage, Subscription } from "../core/ports/bus.ts";
import type { DispatcherOptions } from "./webhook-dispatcher.ts";
import { attemptDelivery, type DeliveryParts } from "./webhook-delivery.ts";
import { type WebhookMessage, WebhookRelay } from "./webhook-relay.ts";

/** The consumer group of the `webhooks` topic; the leading operator is its member (bin/commands/operator.ts). */
export const WEBHOOK_GROUP = "dispatch";
/**
 * Deliveries of a message beyond its schedule's attempts: redeliveries after a member died, and
 * deliveries that came before the event's next attempt was due and only wait it out.
 */
const SPARE_DELIVERIES = 5;
/**
 * A POST may take the timeout to connect, to answer its headers and to send its body; the signing
 * secret and the attempt's record are store calls besides. A member silent for longer has died.
 */
const ackWaitFor = (timeoutMs: number) => 3 * timeoutMs + 30_000;
/** Beyond the ack wait, how late an overdue event's message may be before the relay publishes it again: past the bus's duplicate window (10 minutes). */
const STALLED_BEYOND_ACK_WAIT_MS = 15 * 60_000;

/**
 * Webhook delivery in cluster mode (with NATS_URL): the relay (webhook-relay.ts) publishes the
 * outbox's pending events to the `webhooks` topic, and this consumer group delivers them: one
 * attempt per delivery of a message, recorded in the EventStore as the embedded dispatcher records
 * it; a failed attempt naks the message until the schedule's next attempt (core/domain/
 * delivery-schedule.ts), success or the last attempt acks it. An operator that dies mid-delivery
 * loses the message to another member after the ack wait: delivery is at least once, as the
 * contract says, and the store's attempt count keeps the schedule wherever it resumes.
 */
export class BusWebhookDispatcher {
  readonly #relay: WebhookRelay;
  readonly #client: WebhookClient;
  readonly #subscription: Subscription;
  #stopping: Promise<void> | undefined;

  private constructor(relay: WebhookRelay, client: WebhookClient, subscription: Subscription) {
    this.#relay = relay;
    this.#client = client;
    this.#subscription = subscription;
  }

  /** Joins the group (deliveries start); start() then starts the relay. */
  static async open(bus: Bus, options: DispatcherOptions & { stalledAfterMs?: number }): Promise<BusWebhookDispatcher> {
    const client = new WebhookClient(options);
    const parts: DeliveryParts = { ...options, client };
    const maxDeliver = maxAttempts(options.retryScheduleMs) + SPARE_DELIVERIES;
    const handle = (msg: BusMessage) =>
      deliver(parts, msg, maxDeliver).catch((err) => {
        options.log.warn({ err, message_id: msg.id }, "webhook delivery bookkeeping failed; the bus delivers it again");
        throw err;
      });
    const subscription = await bus.consume("webhooks", WEBHOOK_GROUP, handle, {
      maxDeliver,
      ackWaitMs: ackWaitFor(options.timeoutMs),
      concurrency: options.concurrency ?? 16,
    });
    const relay = new WebhookRelay({
      events: options.events,
      bus,
      log: options.log,
      clock: options.clock,
      pollMs: options.pollMs,
      stalledAfterMs: options.stalledAfterMs ?? ackWaitFor(options.timeoutMs) + STALLED_BEYOND_ACK_WAIT_MS,
    });
    return new BusWebhookDispatcher(relay, client, subscription);
  }

  start(): void {
    this.#relay.start();
  }

  /** An event was resent: relay it now. */
  nudge(): void {
    this.#relay.nudge();
  }

  /** Stops relaying and taking messages, and waits for the deliveries under way. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#relay.stop();
      await this.#subscription.close();
      await this.#client.close();
    })();
    return this.#stopping;
  }
}

/** One delivery of a `webhooks` message: the event's next attempt, where one is due. */
async function deliver(parts: DeliveryParts, msg: BusMessage, maxDeliver: number): Promise<void> {
  let m: WebhookMessage;
  try {
    m = JSON.parse(msg.body);
  } catch {
    return msg.term("not a webhook message");
  }
  const event = await parts.events.get({ accountId: m.accountId, livemode: m.livemode }, m.eventId);
  // Settled already, or resent since (the resend is a message of its own): nothing left for this one.
  if (event?.deliveryStatus !== "pending" || event.scheduleFrom !== m.scheduleFrom) return msg.ack();
  // Back before the attempt is due (its member died after recording an attempt): wait it out.
  const early = (event.nextAttemptAt ?? 0) - parts.clock.now();
  if (early > 0) return msg.nak(early);
  const next = await attemptDelivery(parts, event, msg.deliveryCount >= maxDeliver);
  if (next === null) await msg.ack();
  else await msg.nak(Math.max(0, next - parts.clock.now()));
}
