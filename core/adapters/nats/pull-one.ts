import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";

/**
 * One message from a pull consumer, or null when the pull expired (or was stopped) without one.
 * The pull waits in `pulls` meanwhile, so that a close can stop it; `stopping` is asked once the
 * pull is made, because a close that came while it was being made has not stopped it.
 */
export async function pullOne(
  consumer: Consumer,
  pulls: Set<ConsumerMessages>,
  stopping: () => boolean,
  expiresMs: number,
): Promise<JsMsg | null> {
  const pull = await consumer.fetch({ max_messages: 1, expires: expiresMs });
  pulls.add(pull);
  if (stopping()) pull.stop();
  try {
    for await (const msg of pull) return msg;
    return null;
  } finally {
    pulls.delete(pull);
  }
}
