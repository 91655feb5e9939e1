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

/** The secrets that sign now: the current one, and while a rotation's overlap lasts the one it replaced. */
export type SigningSecrets = { secret: string; previousSecret: string | null };

/**
 * During an overlap the header carries both signatures, space-separated, as Standard Webhooks
 * allows: a receiver still holding the old secret verifies as well as one holding the new.
 */
export function webhookHeaders(secrets: SigningSecrets, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const signing = secrets.previousSecret === null ? [secrets.secret] : [secrets.secret, secrets.previousSecret];
  return {
    "content-type": "application/json",
    "user-agent": "vehicle-inspection-webhooks/1",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signing.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(" "),
  };
}
