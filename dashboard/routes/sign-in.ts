import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { signInRateLimit } from "../../api/plugins/rate-limit.ts";
import { newId, sha256 } from "../../core/domain/ids.ts";
import type { RateLimitStore } from "../../core/ports/rate-limit-store.ts";
import { normalizeEmail } from "../auth/email.ts";
import { hashPassword, NOBODY_HASH, passwordMatches, passwordProblem } from "../auth/passwords.ts";
import { endSession, sessionUser, startSession } from "../auth/sessions.ts";
import { renderPage, signedOut } from "../views/render.ts";

const SignInForm = z.object({
  email: z.string().max(320).default(""),
  password: z.string().max(1024).default(""),
  _csrf: z.string().optional(),
});
const NextQuery = z.object({ next: z.string().max(2048).optional() });
const InviteParams = z.object({ token: z.string().max(128) });
const InviteForm = z.object({ password: z.string().max(1024).default(""), _csrf: z.string().optional() });

/** Only a dashboard path may follow a sign-in: `next` must not send the user to another site. */
const safeNext = (next: string | undefined) => (next && /^\/dashboard(\/[^/\\]|$)/.test(next) ? next : "/dashboard");

const routes: FastifyPluginAsyncZod<{ rateLimits: RateLimitStore }> = async (app, { rateLimits }) => {
  const { users, clock, config } = app;
  app.get("/sign-in", { schema: { querystring: NextQuery } }, async (request, reply) => {
    if (await sessionUser(app, request)) return reply.redirect(safeNext(request.query.next), 303);
    return renderPage(reply, "sign-in", signedOut(reply), { title: "Sign in", next: request.query.next ?? "", email: "", error: null });
  });

  app.post(
    "/sign-in",
    {
      schema: { querystring: NextQuery, body: SignInForm },
      // Per client address: each try costs an argon2 verification, and passwords must not be guessed at speed.
      preHandler: signInRateLimit(config.rateLimit.signInPerMinute, rateLimits, clock),
    },
    async (request, reply) => {
      const email = normalizeEmail(request.body.email);
      const user = await users.findByEmail(email);
      const matches = await passwordMatches(user?.passwordHash ?? NOBODY_HASH, request.body.password);
      if (!user || !matches) {
        return renderPage(reply.code(401), "sign-in", signedOut(reply), {
          title: "Sign in",
          next: request.query.next ?? "",
          email,
          error: "That email and password do not match a user.",
        });
      }
      await startSession(app, request, reply, user);
      return reply.redirect(safeNext(request.query.next), 303);
    },
  );

  app.post("/sign-out", async (request, reply) => {
    await endSession(app, request, reply);
    return reply.redirect("/dashboard/sign-in", 303);
  });

  app.get("/invite/:token", { schema: { params: InviteParams } }, async (request, reply) => {
    const invite = await users.openInvite(sha256(request.params.token), clock.now());
    return renderPage(reply.code(invite ? 200 : 410), "invite", signedOut(reply), { title: "Join your team", invite, error: null });
  });

  app.post("/invite/:token", { schema: { params: InviteParams, body: InviteForm } }, async (request, reply) => {
    const tokenHash = sha256(request.params.token);
    const invite = await users.openInvite(tokenHash, clock.now());
    const problem = passwordProblem(request.body.password);
    if (!invite || problem) {
      return renderPage(reply.code(invite ? 400 : 410), "invite", signedOut(reply), { title: "Join your team", invite, error: problem });
    }
    const user = await users.acceptInvite(
      tokenHash,
      { id: newId("user"), passwordHash: await hashPassword(request.body.password) },
      clock.now(),
    );
    if (!user) {
      return renderPage(reply.code(410), "invite", signedOut(reply), { title: "Join your team", invite: null, error: null });
    }
    await startSession(app, request, reply, user);
    return reply.redirect("/dashboard", 303);
  });
};

export const signInRoutes = fp(routes, { name: "dashboard-sign-in-routes", dependencies: ["accounts", "config"], encapsulate: true });
