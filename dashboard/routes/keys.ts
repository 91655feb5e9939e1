import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { notFound } from "../../core/domain/errors.ts";
import { newApiKey, newId, sha256 } from "../../core/domain/ids.ts";
import { EnvParams, scopeOf } from "./scope.ts";
import { renderPage, signedIn } from "../views/render.ts";

const KeyParams = EnvParams.extend({ id: z.string().max(64) });

/** API keys of the account and environment: created (shown once), listed by their last four, revoked, rolled. */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { accounts, users, clock } = app;
  const page = async (request: FastifyRequest, reply: FastifyReply, created: string | null) => {
    const scope = scopeOf(request);
    const keys = await accounts.listIn(scope.accountId, scope.livemode);
    const lastUsed = await users.keysLastUsed(keys.map((k) => k.id));
    return renderPage(reply, "keys", signedIn(request, reply, "keys"), {
      title: "API keys",
      keys: keys.map((k) => ({ ...k, lastUsedAt: lastUsed.get(k.id) ?? null })),
      created,
    });
  };
  const create = async (request: FastifyRequest) => {
    const env = (request.params as { env: "test" | "live" }).env;
    const key = newApiKey(env);
    await accounts.createKey(request.user.accountName, env, sha256(key), key.slice(-4), newId("key"), clock.now());
    return key;
  };
  /** The key, if it is this account's and environment's; another's is no page at all. */
  const ownKey = async (request: FastifyRequest, id: string) => {
    const scope = scopeOf(request);
    const key = (await accounts.listIn(scope.accountId, scope.livemode)).find((k) => k.id === id && k.revokedAt === null);
    if (!key) throw notFound("key", id);
    return key;
  };

  app.get("/:env/keys", { schema: { params: EnvParams } }, async (request, reply) => page(request, reply, null));

  // The new key is shown in the answer to the POST itself, once: it is never stored in the clear,
  // so no later page could show it.
  app.post("/:env/keys", { schema: { params: EnvParams } }, async (request, reply) => page(request, reply, await create(request)));

  app.post("/:env/keys/:id/revoke", { schema: { params: KeyParams } }, async (request, reply) => {
    await accounts.revoke((await ownKey(request, request.params.id)).id, clock.now());
    return reply.redirect(`/dashboard/${request.params.env}/keys`, 303);
  });

  // Rolling: a new key at once and the old one revoked, for a key that leaked or a routine change.
  app.post("/:env/keys/:id/roll", { schema: { params: KeyParams } }, async (request, reply) => {
    const old = await ownKey(request, request.params.id);
    const key = await create(request);
    await accounts.revoke(old.id, clock.now());
    return page(request, reply, key);
  });
};

export const keyRoutes = fp(routes, { name: "dashboard-key-routes", dependencies: ["accounts", "config"], encapsulate: true });
