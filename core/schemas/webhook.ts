import { z } from "zod";
import { Timestamp } from "./common.ts";
import { CreateInspectionBody } from "./inspection.ts";

/** How long a rotated-out secret keeps signing: a day unless told, at most a week. */
export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 168;

export const OverlapHours = z
  .number()
  .int()
  .min(0)
  .max(MAX_OVERLAP_HOURS)
  .meta({
    description: `Hours the secret being replaced keeps signing beside the new one (0: it stops at once). Default ${DEFAULT_OVERLAP_HOURS}.`,
    example: DEFAULT_OVERLAP_HOURS,
  });

export const WebhookSecret = z
  .object({
    object: z.literal("webhook_secret"),
    secret: z.string().meta({ description: "`whsec_<base64>`, the key of the Standard Webhooks signature.", example: "whsec_…" }),
    created_at: Timestamp,
    previous_secret_expires_at: Timestamp.nullable().meta({
      description: "While a rotation's overlap lasts, when the secret this one replaced stops signing; null otherwise.",
    }),
  })
  .meta({ id: "WebhookSecret" });
export type WebhookSecret = z.infer<typeof WebhookSecret>;

/** No body, or an empty one, rotates with the default overlap. */
export const RotateWebhookSecretBody = z.strictObject({ overlap_hours: OverlapHours.optional() }).nullish();

export const WebhookTestBody = z.strictObject({
  url: CreateInspectionBody.shape.notify_url.unwrap().meta({ description: "Where to send the test event; the rules of notify_url apply." }),
});

export const WEBHOOK_TEST_EVENT_TYPE = "webhook.test";

/** The body of a test delivery: shaped like every event, so a receiver's parsing and verifying are what it exercises. */
export const WebhookTestEvent = z
  .object({
    id: z.string(),
    object: z.literal("event"),
    type: z.literal(WEBHOOK_TEST_EVENT_TYPE),
    created_at: Timestamp,
    livemode: z.boolean(),
    data: z.object({ object: z.literal("webhook_test"), message: z.string() }),
  })
  .meta({ id: "WebhookTestEvent" });
export type WebhookTestEvent = z.infer<typeof WebhookTestEvent>;

export const WebhookTest = z
  .object({
    object: z.literal("webhook_test"),
    event_id: z.string(),
    url: z.string(),
    succeeded: z.boolean().meta({ description: "The receiver answered 2xx in time; the test is never retried." }),
    status_code: z.number().int().nullable(),
    latency_ms: z.number().int(),
    error: z.string().nullable(),
  })
  .meta({ id: "WebhookTest" });
export type WebhookTest = z.infer<typeof WebhookTest>;
