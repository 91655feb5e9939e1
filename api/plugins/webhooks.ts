import fp from "fastify-plugin";
import { resendEvent, rotateWebhookSecret, sendTestWebhook, webhookSecretOf } from "../../core/operations/webhooks.ts";
import type { WebhookSecretRecord } from "../../core/ports/key-store.ts";
import type { EventRecord, Scope } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";
import type { WebhookTest } from "../../core/schemas/webhook.ts";

/** The webhook operations (core/operations/webhooks.ts) bound to this process's services. */
export type Webhooks = {
  /** The secret webhooks are signed with (made on first use). */
  secret(scope: Scope): Promise<WebhookSecretRecord>;
  /** A new current secret; the old one keeps signing beside it for the overlap. */
  rotateSecret(scope: Scope, overlapHours?: number): Promise<WebhookSecretRecord>;
  /** Delivers an event again, with a fresh retry schedule. */
  resend(scope: Scope, eventId: string): Promise<EventRecord>;
  /** One signed test event to a URL now, and how it answered. */
  test(scope: Scope, url: string): Promise<WebhookTest>;
};

declare module "fastify" {
  interface FastifyInstance {
    webhooks: Webhooks;
  }
}

/** The `webhooks` decorator, for the route plugins that declare it as a dependency. */
export const webhooksPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("webhooks", {
      secret: (scope) => webhookSecretOf(s, scope),
      rotateSecret: (scope, overlapHours) => rotateWebhookSecret(s, scope, overlapHours),
      resend: (scope, eventId) => resendEvent(s, scope, eventId),
      test: (scope, url) => sendTestWebhook(s, scope, url),
    } satisfies Webhooks);
  },
  { name: "webhooks" },
);
