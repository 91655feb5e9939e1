import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { isApiError } from "../../core/domain/errors.ts";
import type { WebhookTest } from "../../core/schemas/webhook.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { EnvParams, scopeOf } from "./scope.ts";

/** The overlaps offered: none (the old secret leaked), an hour, a day (the default), three days, a week. */
const OVERLAP_CHOICES = [0, 1, 24, 72, 168] as const;

const RotateForm = z.object({ overlap_hours: z.coerce.number().int().default(24), _csrf: z.string().optional() });
const TestForm = z.object({ url: z.string().max(4096).default(""), _csrf: z.string().optional() });

/** The signing secret (revealed on request, rotated with an overlap) and test events. */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { webhooks, clock } = app;
  type Extra = { revealed?: boolean; rotated?: boolean; test?: WebhookTest; testUrl?: string; error?: string };
  const page = async (request: FastifyRequest, reply: FastifyReply, extra: Extra) => {
    const secret = await webhooks.secret(scopeOf(request));
    const stillSigning = secret.previousExpiresAt !== null && secret.previousExpiresAt > clock.now();
    return renderPage(reply, "webhooks", signedIn(request, reply, "webhooks"), {
      title: "Webhooks",
      // The secret is in the page only after a deliberate click (a POST), never on a plain visit.
      secret: extra.revealed || extra.rotated ? secret.secret : null,
      createdAt: secret.createdAt,
      previousExpiresAt: stillSigning ? secret.previousExpiresAt : null,
      overlaps: OVERLAP_CHOICES,
      rotated: extra.rotated ?? false,
      test: extra.test ?? null,
      testUrl: extra.testUrl ?? "",
      error: extra.error ?? null,
    });
  };

  app.get("/:env/webhooks", { schema: { params: EnvParams } }, async (request, reply) => page(request, reply, {}));

  app.post("/:env/webhooks/reveal", { schema: { params: EnvParams } }, async (request, reply) => page(request, reply, { revealed: true }));

  app.post("/:env/webhooks/rotate", { schema: { params: EnvParams, body: RotateForm } }, async (request, reply) => {
    try {
      await webhooks.rotateSecret(scopeOf(request), request.body.overlap_hours);
    } catch (error) {
      if (isApiError(error) && error.statusCode < 500) return page(request, reply.code(400), { error: error.message });
      throw error;
    }
    return page(request, reply, { rotated: true });
  });

  app.post("/:env/webhooks/test", { schema: { params: EnvParams, body: TestForm } }, async (request, reply) => {
    const url = request.body.url.trim();
    try {
      return page(request, reply, { test: await webhooks.test(scopeOf(request), url), testUrl: url });
    } catch (error) {
      if (isApiError(error) && error.statusCode < 500) return page(request, reply.code(400), { error: error.message, testUrl: url });
      throw error;
    }
  });
};

export const webhookRoutes = fp(routes, { name: "dashboard-webhook-routes", dependencies: ["webhooks", "config"], encapsulate: true });
