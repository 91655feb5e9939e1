import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ErrorBody, commonErrorResponses } from "../../core/schemas/common.ts";
import { Event } from "../../core/schemas/event.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import { RotateWebhookSecretBody, WebhookSecret, WebhookTest, WebhookTestBody } from "../../core/schemas/webhook.ts";
import { eventView } from "../../core/views/event-view.ts";
import { webhookSecretView } from "../../core/views/webhook-secret-view.ts";
import type {} from "../plugins/events.ts";
import type {} from "../plugins/webhooks.ts";

/** What any /v1 POST with a JSON body may answer besides its own: idempotency conflicts and refused bodies. */
const postErrorResponses = { 409: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody, ...commonErrorResponses } as const;

/** The signing secret, resends and test deliveries: thin wrappers around the `webhooks` decorator (api/plugins/webhooks.ts). */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { events, webhooks } = app;
  app.get(
    "/v1/webhook_secret",
    {
      schema: {
        operationId: "retrieveWebhookSecret",
        summary: "Retrieve the secret webhooks are signed with",
        response: { 200: WebhookSecret, ...commonErrorResponses },
      },
    },
    async (request) => webhookSecretView(await webhooks.secret(request.scope)),
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
    async (request) => webhookSecretView(await webhooks.rotateSecret(request.scope, request.body?.overlap_hours)),
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
      const event = await webhooks.resend(request.scope, request.params.id);
      return reply.code(202).send(eventView(event, (await events.attempts([event.id])).get(event.id)!));
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
    async (request) => webhooks.test(request.scope, request.body.url),
  );
};

export const webhookRoutes = fp(routes, { name: "webhook-routes", dependencies: ["events", "webhooks"], encapsulate: true });
