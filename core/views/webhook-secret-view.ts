import type { WebhookSecretRecord } from "../ports/key-store.ts";
import type { WebhookSecret } from "../schemas/webhook.ts";
import { formatTimestamp } from "../runtime/time.ts";

/** The public signing secret; the rotated-out one is not shown again, only when it stops signing. */
export function webhookSecretView(r: WebhookSecretRecord): WebhookSecret {
  return {
    object: "webhook_secret",
    secret: r.secret,
    created_at: formatTimestamp(r.createdAt)!,
    previous_secret_expires_at: formatTimestamp(r.previousExpiresAt),
  };
}
