import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { resendEvent, rotateWebhookSecret, sendTestWebhook, webhookSecretOf } from "../../core/operations/webhooks.ts";
import { ErrorBody, commonErrorResponses } from "../../core/schemas/common.ts";
import { Event } from "../../core/schemas/event.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import { RotateWebhookSecretBody, WebhookSecret, WebhookTest, WebhookTestBody } from "../../core/schemas/webhook.ts";
import type { Services } from "../../core/runtime/services.ts";
import { eventView } from "../../core/views/event-view.ts";
import { webhookSecretView } from "../../core/views/webhook-secret-view.ts";

/** What any /v1 POST with a JSON body may answer besides its own: idempotency conflicts and refused bodies. */
const postErrorResponses = { 409: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody, ...commonErrorResponses } as const;

/** The signing secret, resends and test deliveries: thin wrappers around core/operations/webhooks.ts. */
export const webhookRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/v1/webhook_secret",
      {
        schema: {
          operationId: "retrieveWebhookSecret",
          summary: "Retrieve the secret webhooks are signed with",
          response: { 200: WebhookSecret, ...commonErrorResponses },
        },
      },
      async (request) => webhookSecretView(await webhookSecretOf(s, request.scope)),
    );

    app.post(
      "/v1/webhook_secret/rotate",
      {
        schema: {
          operationId: "rotateWebhookSecret",
          summary: "Replace the signing secret; the old one keeps signing beside it for the overlap",
          body: RotateWebhookSecretBody,
          response: { 200: WebhookSecret, ...postErrorResponses },
        },
      },
      async (request) => webhookSecretView(await rotateWebhookSecret(s, request.scope, request.body?.overlap_hours)),
    );

    app.post(
      "/v1/events/:id/resend",
      {
        schema: {
          operationId: "resendEvent",
          summary: "Deliver an event again, with a fresh retry schedule",
          params: IdParams,
          body: z.strictObject({}).nullish(),
          response: { 202: Event, ...postErrorResponses },
        },
      },
      async (request, reply) => {
        const event = await resendEvent(s, request.scope, request.params.id);
        return reply.code(202).send(eventView(event, (await s.events.attempts([event.id])).get(event.id)!));
      },
    );

    app.post(
      "/v1/webhook_tests",
      {
        schema: {
          operationId: "createWebhookTest",
          summary: "Send one signed test event to a URL now, and report how it answered",
          body: WebhookTestBody,
          response: { 200: WebhookTest, ...postErrorResponses },
        },
      },
      async (request) => sendTestWebhook(s, request.scope, request.body.url),
    );
  };
