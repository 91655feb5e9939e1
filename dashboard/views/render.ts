import type { FastifyReply, FastifyRequest } from "fastify";
import { Eta } from "eta";
import type { Environment } from "../../core/domain/ids.ts";
import { formatTimestamp } from "../../core/runtime/time.ts";
import { ENGLISH, type Params, type ReportKey, type ReportWords } from "../../core/views/report-words.ts";

/** Server-rendered pages: Eta escapes every `<%= %>` by default; `<%~ %>` is kept for markup the server made. */
const eta = new Eta({ views: import.meta.dirname, cache: process.env.NODE_ENV !== "development" });
const escapeHtml = (value: unknown): string => eta.config.escapeFunction(value);

/** Where a value given as markup goes in a message while the rest of it is escaped: characters no message or value holds. */
const SLOT = (i: number) => `\u{F0000}${i}\u{F0001}`;

/**
 * A catalogue message as HTML: its words and every plain value escaped, and the values given as
 * `{ html }` (markup the template made, its own values escaped) put in as they are, wherever the
 * language's word order places them ("Inspection <span>…</span>, reference …").
 */
function html(w: ReportWords, key: ReportKey, params: Record<string, string | number | { html: string }>): string {
  const markup: string[] = [];
  const plain: Params = {};
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === "object") {
      plain[name] = SLOT(markup.length);
      markup.push(value.html);
    } else plain[name] = value;
  }
  return markup.reduce((out, piece, i) => out.replace(escapeHtml(SLOT(i)), piece), escapeHtml(w.t(key, plain)));
}

/** What every template may use besides its own data. */
const helpers = {
  /** "2026-11-23 14:05 UTC": staff compare times with webhook logs, which are in UTC. */
  when: (ms: number | null | undefined) =>
    ms === null || ms === undefined ? "—" : `${formatTimestamp(ms)!.replace("T", " ").slice(0, 16)} UTC`,
  percent: (x: number | null | undefined) => (x === null || x === undefined ? "—" : `${Math.round(x * 100)}%`),
  label: (value: string | null | undefined) => (value ? value.replaceAll("_", " ") : "—"),
  /** The report's words (report-partial.eta, new-since.eta): English on the dashboard; a shared link's page gives its reader's language. */
  words: ENGLISH,
  escapeHtml,
  html,
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
