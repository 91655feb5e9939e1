import { webhookHeaders } from "../domain/webhook-signature.ts";
import { ApiError, notFound } from "../domain/errors.ts";
import { newId, newWebhookSecret } from "../domain/ids.ts";
import { WebhookClient } from "../net/webhook-client.ts";
import type { WebhookSecretRecord } from "../ports/key-store.ts";
import type { EventRecord, Scope } from "../ports/records.ts";
import {
  DEFAULT_OVERLAP_HOURS,
  MAX_OVERLAP_HOURS,
  OverlapHours,
  WEBHOOK_TEST_EVENT_TYPE,
  WebhookTestBody,
  type WebhookTest,
  type WebhookTestEvent,
} from "../schemas/webhook.ts";
import type { Services } from "../runtime/services.ts";
import { formatTimestamp } from "../runtime/time.ts";
import { checkNotifyUrl } from "../net/notify-url.ts";

/*
 * What the /v1 API and the dashboard do alike with webhooks; each throws ApiError on a client's
 * mistake. Each takes only the services it uses, so the CLI can rotate with just the key store.
 */

const HOUR_MS = 3_600_000;

/** The account and environment's signing secrets, made on first use. */
export function webhookSecretOf(s: Pick<Services, "keys" | "clock">, scope: Scope): Promise<WebhookSecretRecord> {
  return s.keys.webhookSecretFor(scope.accountId, scope.livemode, newWebhookSecret, s.clock.now());
}

/**
 * A new current secret; the one it replaces keeps signing beside it for `overlapHours`, so
 * receivers can move to the new one without refusing a delivery meanwhile.
 */
export async function rotateWebhookSecret(
  s: Pick<Services, "keys" | "clock">,
  scope: Scope,
  overlapHours: number = DEFAULT_OVERLAP_HOURS,
): Promise<WebhookSecretRecord> {
  if (!OverlapHours.safeParse(overlapHours).success) {
    throw new ApiError("parameter_invalid", `overlap_hours must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}.`, {
      param: "overlap_hours",
    });
  }
  const now = s.clock.now();
  return s.keys.rotateWebhookSecret(scope.accountId, scope.livemode, newWebhookSecret, now, overlapHours * HOUR_MS);
}

/** Delivers the event again, due now, with a fresh retry schedule; its attempts keep their numbers. */
export async function resendEvent(s: Pick<Services, "events" | "clock" | "signals">, scope: Scope, eventId: string): Promise<EventRecord> {
  const resent = await s.events.resend(scope, eventId, s.clock.now());
  if (resent) {
    s.signals.deliveryDue();
    return resent;
  }
  const found = await s.events.get(scope, eventId);
  if (!found) throw notFound("event", eventId);
  throw new ApiError(
    "event_not_deliverable",
    found.notifyUrl === null
      ? `The event ${eventId} cannot be sent: its inspection has no notify_url.`
      : // Only the cluster's store refuses one with a URL: its inspection's resource is pruned.
        `The event ${eventId} can no longer be sent: its inspection finished longer ago than the retention period and is archived.`,
  );
}

/**
 * Sends one `webhook.test` event to `url` now, signed as deliveries are, and reports how the
 * receiver answered. It is not stored and not retried: a receiver that fails is the result to
 * show, not an error.
 */
export async function sendTestWebhook(s: Pick<Services, "keys" | "clock" | "config">, scope: Scope, url: string): Promise<WebhookTest> {
  const valid = WebhookTestBody.shape.url.safeParse(url);
  if (!valid.success) throw new ApiError("parameter_invalid", "url must be an absolute http or https URL.", { param: "url" });
  const { webhooks } = s.config;
  checkNotifyUrl(url, scope.livemode, webhooks.allowPrivateTargets, "url");
  const now = s.clock.now();
  const event: WebhookTestEvent = {
    id: newId("evt"),
    object: "event",
    type: WEBHOOK_TEST_EVENT_TYPE,
    created_at: formatTimestamp(now)!,
    livemode: scope.livemode,
    data: { object: "webhook_test", message: "A test event: your endpoint received it; verify its signature as for any event." },
  };
  const body = JSON.stringify(event);
  const headers = webhookHeaders(await webhookSecretOf(s, scope), event.id, Math.floor(now / 1000), body);
  const client = new WebhookClient(webhooks);
  try {
    const outcome = await client.post(url, headers, body);
    return {
      object: "webhook_test",
      event_id: event.id,
      url,
      succeeded: outcome.error === null,
      status_code: outcome.statusCode,
      latency_ms: outcome.latencyMs,
      error: outcome.error,
    };
  } finally {
    await client.close();
  }
}
