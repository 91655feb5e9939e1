import type { FastifyReply, FastifyRequest } from "fastify";
import { Eta } from "eta";
import type { Environment } from "../../core/domain/ids.ts";
import { formatTimestamp } from "../../core/runtime/time.ts";

/** Server-rendered pages: Eta escapes every `<%= %>` by default; `<%~ %>` is kept for markup the server made. */
const eta = new Eta({ views: import.meta.dirname, cache: process.env.NODE_ENV !== "development" });

/** What every template may use besides its own data. */
const helpers = {
  /** "2026-11-23 14:05 UTC": staff compare times with webhook logs, which are in UTC. */
  when: (ms: number | null | undefined) =>
    ms === null || ms === undefined ? "—" : `${formatTimestamp(ms)!.replace("T", " ").slice(0, 16)} UTC`,
  percent: (x: number | null | undefined) => (x === null || x === undefined ? "—" : `${Math.round(x * 100)}%`),
  label: (value: string | null | undefined) => (value ? value.replaceAll("_", " ") : "—"),
  /** A column's name as a card shows it below a tablet's width (cards.css), hidden from screen readers, which read the column's header. Markup: `<%~ it.cellLabel("Created") %>`. */
  cellLabel: (words: string) => `<span class="cell-label" aria-hidden="true">${words}</span>`,
};

export type PageContext = {
  user: { email: string; accountName: string } | null;
  env: Environment | null;
  /** The section of the navigation this page belongs to, for the environment switch and the active link. */
  section: string | null;
  csrf: string;
  /** How many reports wait for review in the page's account and environment (the navigation's badge); null where not counted. */
  reviewsWaiting?: number | null;
};

export function renderPage(reply: FastifyReply, view: string, context: PageContext, data: Record<string, unknown> = {}): FastifyReply {
  const html = eta.render(`./${view}`, { ...helpers, ...context, ...data });
  return reply.type("text/html; charset=utf-8").send(html);
}

/** The context of a signed-in page: the user, the environment in the path, a CSRF token for its forms. */
export function signedIn(request: FastifyRequest, reply: FastifyReply, section: string): PageContext {
  return {
    user: request.user,
    env: (request.params as { env: Environment }).env,
    section,
    csrf: reply.generateCsrf(),
    reviewsWaiting: request.reviewQueue?.length ?? null,
  };
}

export function signedOut(reply: FastifyReply): PageContext {
  return { user: null, env: null, section: null, csrf: reply.generateCsrf() };
}
