import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { sha256 } from "../../core/domain/ids.ts";
import { EnvParams } from "./scope.ts";
import { renderPage, signedIn } from "../views/render.ts";
import { normalizeEmail } from "../auth/email.ts";

/** A week, as the capture links: time enough for a colleague back from leave. */
const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const InviteForm = z.object({ email: z.string().max(320).default(""), _csrf: z.string().optional() });

/** The account's users, and one-time invitation links for colleagues. */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { users, clock, config } = app;
  const page = async (request: FastifyRequest, reply: FastifyReply, extra: { link?: string; email?: string; error?: string }) =>
    renderPage(reply, "team", signedIn(request, reply, "team"), {
      title: "Team",
      users: await users.listUsers(request.user.accountId),
      link: null,
      email: "",
      error: null,
      ...extra,
    });

  app.get("/:env/team", { schema: { params: EnvParams } }, async (request, reply) => page(request, reply, {}));

  app.post("/:env/team/invites", { schema: { params: EnvParams, body: InviteForm } }, async (request, reply) => {
    const email = normalizeEmail(request.body.email);
    if (!z.email().safeParse(email).success)
      return page(request, reply.code(400), { email, error: "Enter the colleague's email address." });
    if (await users.findByEmail(email)) return page(request, reply.code(400), { email, error: "That address already has a user." });
    // The link is the credential: shown once here, kept only as a hash, good for one sign-up.
    const token = randomBytes(32).toString("base64url");
    const now = clock.now();
    await users.createInvite(sha256(token), {
      accountId: request.user.accountId,
      email,
      invitedBy: request.user.id,
      createdAt: now,
      expiresAt: now + INVITE_TTL_MS,
    });
    return page(request, reply, { link: `${config.publicUrl}/dashboard/invite/${token}`, email });
  });
};

export const teamRoutes = fp(routes, { name: "dashboard-team-routes", dependencies: ["accounts", "config"], encapsulate: true });
