import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../../core/domain/errors.ts";

/**
 * What every request's input must be, per the contract ("Added on 2026-11-23"): JSON in UTF-8,
 * nested at most JSON_MAX_DEPTH deep, and strings free of control characters, lone surrogates and
 * bidirectional overrides, in the body and in the query alike.
 */

/** No request of the API nests past 2; the bound keeps every walk over a body (validation, fingerprints) shallow. */
export const JSON_MAX_DEPTH = 32;

/**
 * C0 and C1 controls and DEL, and the bidirectional embeddings, overrides and isolates (which make a
 * reference display differently from what it is), as the source of a character class. Lone
 * surrogates are caught by isWellFormed.
 */
const FORBIDDEN_CLASS = "\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069";
const FORBIDDEN_CHARACTERS = new RegExp(`[${FORBIDDEN_CLASS}]`);

/**
 * The same characters as a JSON Schema pattern, which the OpenAPI document gives every string of a
 * query or a JSON body (api/openapi/complete-document.ts). Lone surrogates are left to the document's
 * words: a pattern over code points cannot name them (Rust's and Python's regex engines, which
 * schemathesis uses, refuse a surrogate range), and JSON can only write one as an escape.
 */
export const PLAIN_TEXT_PATTERN = `^[^${FORBIDDEN_CLASS}]*$`;

/** Why a string is refused, or null. */
export function stringProblem(value: string): string | null {
  if (!value.isWellFormed()) return "must not contain lone surrogates (invalid UTF-16)";
  const bad = FORBIDDEN_CHARACTERS.exec(value);
  if (bad)
    return `must not contain control or bidirectional-override characters (found U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")})`;
  return null;
}

/**
 * The depth of the deepest array or object in JSON text, counted without parsing, so that a body
 * nested thousands deep is refused before anything recursive touches it.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** The first string (key or value) in a parsed value that breaks the rules, with its path; iterative. */
export function findBadString(root: unknown, rootPath: string[] = []): { path: string[]; problem: string } | null {
  const stack: { value: unknown; path: string[] }[] = [{ value: root, path: rootPath }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (ArrayBuffer.isView(value)) continue; // a photo's bytes, not JSON
    if (typeof value === "string") {
      const problem = stringProblem(value);
      if (problem) return { path, problem };
    } else if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) stack.push({ value: item, path: [...path, String(i)] });
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        const problem = stringProblem(key);
        if (problem) return { path, problem: `has a key that ${problem}` };
        stack.push({ value: item, path: [...path, key] });
      }
    }
  }
  return null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * The JSON body as text: the declared charset must be UTF-8 (415 otherwise), the bytes must be
 * UTF-8 (no silent replacement of what is not), and the nesting bounded.
 */
export function jsonBodyText(contentType: string | undefined, bytes: Buffer): string {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new ApiError("unsupported_media_type", `JSON bodies must be UTF-8; this one declares charset=${charset}.`);
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError("body_invalid_json", "The request body is not valid UTF-8.");
  }
  if (jsonDepth(text) > JSON_MAX_DEPTH) {
    throw new ApiError(
      "parameter_invalid",
      `The request body is nested too deeply: at most ${JSON_MAX_DEPTH} levels of objects and arrays.`,
    );
  }
  return text;
}

/**
 * A preValidation hook: no string in the query or the body breaks the rules. Runs before the
 * route's own validation, so the param named is the one with the bad character.
 */
export async function refuseBadStrings(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const bad = findBadString(request.query) ?? findBadString(request.body);
  if (bad) {
    const param = bad.path.join(".") || null;
    throw new ApiError("parameter_invalid", `Invalid '${param ?? "body"}': ${bad.problem}.`, { param });
  }
}
