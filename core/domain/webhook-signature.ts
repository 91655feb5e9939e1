import { createHmac } from "node:crypto";

/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed by the
 * base64 part of the `whsec_` secret. Receivers verify with any Standard Webhooks library.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

export function webhookHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "vehicle-inspection-webhooks/1",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signWebhook(secret, id, timestampSeconds, body),
  };
}
