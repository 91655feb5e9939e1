import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { sha256 } from "../../core/domain/ids.ts";
import type { UserRecord } from "../../core/ports/user-store.ts";
import type { Clock } from "../../core/runtime/time.ts";
import type { Users } from "../plugins/accounts.ts";

/**
 * `__Host-`: the browser takes the cookie only if it is Secure, has Path=/ and no Domain, so no
 * sibling subdomain can plant one (cookie tossing). Browsers treat http://localhost as secure, so it
 * works on a laptop without TLS.
 */
export const SESSION_COOKIE = "__Host-vi_session";
/** A working day: a claims handler signs in each morning; a stolen cookie is worth a day at most. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export const COOKIE_OPTIONS = { path: "/", httpOnly: true, secure: true, sameSite: "lax" } as const;

/** What sessions are kept with: the app's `users` and `clock` decorators (dashboard/plugins/accounts.ts). */
type SessionStore = { users: Pick<Users, "createSession" | "deleteSession" | "sessionUser">; clock: Clock };

declare module "fastify" {
  interface FastifyRequest {
    /** The signed-in user of a dashboard request; set by requireUser. */
    user: UserRecord;
  }
}

/** A new session for `user`, always a new id: whatever session cookie came with the sign-in is dropped. */
export async function startSession(s: SessionStore, request: FastifyRequest, reply: FastifyReply, user: UserRecord): Promise<void> {
  await endSession(s, request, reply);
  const id = randomBytes(32).toString("base64url");
  const now = s.clock.now();
  await s.users.createSession(sha256(id), user.id, now, now + SESSION_TTL_MS);
  reply.setCookie(SESSION_COOKIE, id, { ...COOKIE_OPTIONS, maxAge: SESSION_TTL_MS / 1000 });
}

export async function endSession(s: SessionStore, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const id = request.cookies[SESSION_COOKIE];
  if (id) await s.users.deleteSession(sha256(id));
  reply.clearCookie(SESSION_COOKIE, COOKIE_OPTIONS);
}

export async function sessionUser(s: SessionStore, request: FastifyRequest): Promise<UserRecord | null> {
  const id = request.cookies[SESSION_COOKIE];
  return id ? await s.users.sessionUser(sha256(id), s.clock.now()) : null;
}
