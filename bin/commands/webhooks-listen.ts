import { setTimeout as sleep } from "node:timers/promises";
import { webhookHeaders } from "../../core/domain/webhook-signature.ts";
import { WebhookClient } from "../../core/net/webhook-client.ts";

/** What this client reads of the API's answers (core/schemas/event.ts has them whole). */
type Event = { id: string; type: string; created_at: string; data: { id: string }; delivery: unknown };
type EventList = { data: Event[]; has_more: boolean; next_cursor: string | null };
type WebhookSecret = { secret: string };

/** How long a receiver has to answer, as the service's deliveries give it (the contract: 15 s). */
const FORWARD_TIMEOUT_MS = 15_000;
/** The most events the API lists a page. */
const PAGE = 100;

export type ListenOptions = {
  /** The service's base URL (http://localhost:8080). */
  api: string;
  /** A test-mode API key: the events of its account's test mode are forwarded. */
  apiKey: string;
  /** Where to deliver them: a receiver on this machine, which the service itself may not reach. */
  forwardTo: string;
  pollMs?: number;
  /** Stops listening. */
  signal?: AbortSignal;
  /** Where each line goes (one per forwarded event). */
  print: (line: string) => void;
};

/** A usage problem `listen` refuses before it starts: said as it is to the developer. */
export class ListenError extends Error {}

/**
 * `webhooks listen --api-key sk_test_… --forward-to URL`, as `stripe listen --forward-to` does: the
 * test-mode events of the key's account, from the moment it starts, delivered to a URL on the
 * developer's machine, signed with the account's own secret as the service signs (Standard
 * Webhooks), so the receiver verifies them as it will verify real deliveries. It reads the events
 * over the API (GET /v1/events, a second apart), so the service needs neither a new setting
 * (WEBHOOKS_ALLOW_PRIVATE_TARGETS) nor a restart, nor inspections made with a notify_url. A
 * forward that fails is printed and not retried; the service's own deliveries are unaffected.
 */
export async function listen(o: ListenOptions): Promise<void> {
  if (!o.apiKey.startsWith("sk_test_")) throw new ListenError("webhooks listen forwards test-mode events only: give it an sk_test_ key");
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(new URL(path, o.api), { headers: { authorization: `Bearer ${o.apiKey}` }, signal: o.signal });
    const body = await res.json();
    if (!res.ok) throw new ListenError(`${path}: ${res.status} ${(body as { error?: { message?: string } }).error?.message ?? ""}`);
    return body as T;
  };
  const { secret } = await api<WebhookSecret>("/v1/webhook_secret");
  // What is there already is history: only events from now on are forwarded.
  const seen = new Set((await api<EventList>(`/v1/events?limit=${PAGE}`)).data.map((e) => e.id));
  o.print(`Forwarding the test-mode events of this key's account to ${o.forwardTo} (Ctrl-C to stop)`);
  // The receiver is on the developer's own machine: private addresses are the point here.
  const client = new WebhookClient({ timeoutMs: FORWARD_TIMEOUT_MS, allowPrivateTargets: true });
  try {
    while (!o.signal?.aborted) {
      try {
        for (const event of await newEvents(api, seen)) {
          seen.add(event.id);
          o.print(await forward(client, event, secret, o.forwardTo));
        }
      } catch (error) {
        if (o.signal?.aborted) return;
        // The service restarting, say: said once a poll, and tried again.
        o.print(`could not read the events (${(error as Error).message}); trying again`);
      }
      await sleep(o.pollMs ?? 1_000, undefined, { signal: o.signal }).catch(() => {});
    }
  } finally {
    await client.close();
  }
}

/** Events not seen yet, oldest first: the list is newest first, paged until a page holds a seen one. */
async function newEvents(api: <T>(path: string) => Promise<T>, seen: ReadonlySet<string>): Promise<Event[]> {
  const fresh: Event[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page: EventList = await api<EventList>(`/v1/events?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ""}`);
    fresh.push(...page.data.filter((e) => !seen.has(e.id)));
    if (!page.has_more || page.data.some((e) => seen.has(e.id))) return fresh.reverse();
    cursor = page.next_cursor;
  }
}

/** Delivers one event as the service would (its body without the delivery record); the line to print. */
async function forward(client: WebhookClient, event: Event, secret: string, url: string): Promise<string> {
  const { delivery: _, ...delivered } = event;
  const body = JSON.stringify(delivered);
  const headers = webhookHeaders({ secret, previousSecret: null }, event.id, Math.floor(Date.now() / 1000), body);
  const what = `${event.created_at}  ${event.type.padEnd(27)} ${event.id} (${event.data.id})`;
  const outcome = await client.post(url, headers, body);
  if (outcome.statusCode === null) return `${what}  -> failed: ${outcome.error}`;
  return `${what}  -> ${outcome.statusCode} in ${outcome.latencyMs} ms`;
}
