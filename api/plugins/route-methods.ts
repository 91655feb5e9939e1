import { ApiError } from "../../core/domain/errors.ts";

/**
 * The methods each route pattern is served with, to tell "no such path" (404) from "no such method
 * on this path" (405 with Allow), whatever the method's name: one Fastify routes to its not-found
 * handler, and one Node's HTTP parser refuses before Fastify sees it (errorHandler and
 * clientErrorHandler, error-handler.ts, answer both from this table).
 */
export class RouteMethods {
  readonly #patterns: { regex: RegExp; methods: Set<string> }[] = [];

  /** From Fastify's onRoute: a route's pattern (`:name` matches one segment) and its methods. */
  record(url: string, method: string | string[]): void {
    if (url.includes("*")) return;
    const regex = new RegExp(`^${url.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+")}/?$`);
    let entry = this.#patterns.find((p) => p.regex.source === regex.source);
    if (!entry) {
      entry = { regex, methods: new Set() };
      this.#patterns.push(entry);
    }
    for (const m of [method].flat()) entry.methods.add(m);
  }

  /**
   * The methods a path is served with, HEAD aside (answered wherever GET is, as HTTP has it, and not
   * listed in the OpenAPI document); undefined for a path no route serves.
   */
  allowed(path: string): string[] | undefined {
    const entry = this.#patterns.find((p) => p.regex.test(path));
    return entry && [...entry.methods].filter((m) => m !== "HEAD");
  }

  /** The 405 for a method a known path is not served with, or null: no such path, or the method is served. */
  methodNotAllowed(method: string, path: string): ApiError | null {
    const methods = this.allowed(path);
    if (!methods || methods.includes(method) || (method === "HEAD" && methods.includes("GET"))) return null;
    const allow = methods.join(", ");
    return new ApiError("method_not_allowed", `${method} is not allowed on ${path}; use ${allow}.`, { headers: { allow } });
  }
}

/** RFC 9110's token: what a method name is made of. */
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\/[^ ?#]*)(?:\?[^ ]*)? HTTP\/1\.[01]\r?\n/;

/**
 * The method and path of a request Node's parser refused for its method (it knows a fixed list of
 * methods, and a name outside it is a parse error: HPE_INVALID_METHOD), read from the bytes it
 * received; null when the request line is not that of an HTTP/1 request to a path.
 */
export function requestLine(raw: Buffer | undefined): { method: string; path: string } | null {
  const match = raw && REQUEST_LINE.exec(raw.toString("latin1"));
  return match ? { method: match[1]!, path: match[2]! } : null;
}
