import type { FastifyRequest } from "fastify";
import { ApiError } from "../../core/domain/errors.ts";
import { sha256 } from "../../core/domain/ids.ts";
import { type Awaitable, whenReady } from "../../core/ports/awaitable.ts";
import type { ApiKeyRecord, KeyStore } from "../../core/ports/key-store.ts";
import type { UserStore } from "../../core/ports/user-store.ts";
import type { Clock } from "../../core/runtime/time.ts";
import type { Scope } from "../../core/ports/records.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The account and environment of the request's API key; set by authenticate. */
    scope: Scope;
    /** The id of the request's API key (rate limits count per key); set by authenticate. */
    apiKeyId: string;
  }
}

const KEY_PATTERN = /^sk_(test|live)_[A-Za-z0-9]{32,}$/;

/** The bearer token of a request, or null. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header?.startsWith("Bearer ")) return null;
  return header.slice(7).trim();
}

/** The challenge of RFC 6750 §3: no error code when no credentials came, invalid_token when bad ones did. */
const CHALLENGE = {
  missing: { "www-authenticate": 'Bearer realm="api"' },
  invalid: { "www-authenticate": 'Bearer realm="api", error="invalid_token"' },
};

/** What authenticating a request gives: null once `request.scope` is set, else why it is refused. */
export type Authentication = ApiError | null;

/**
 * Authenticates a /v1 request: a missing, malformed, unknown or revoked key is refused (401). The
 * key's SHA-256 is made on every request (its cost: docs/benchmarks.md): a cache of it would keep
 * thousands of plain-text keys in the process's memory for its life, where the stores keep only hashes.
 * At once where the key store answers at once (core/ports/awaitable.ts).
 */
export function authenticate(keys: KeyStore, noteUse: (keyId: string) => void = () => {}) {
  const admit = (request: FastifyRequest, token: string, key: ApiKeyRecord | null): Authentication => {
    if (!key || key.revokedAt !== null) {
      return new ApiError("api_key_invalid", `Invalid API key provided: sk_${token.slice(3, 8)}…${token.slice(-4)}.`, {
        headers: CHALLENGE.invalid,
      });
    }
    request.scope = { accountId: key.accountId, livemode: key.livemode };
    request.apiKeyId = key.id;
    noteUse(key.id);
    return null;
  };
  return (request: FastifyRequest): Awaitable<Authentication> => {
    if (!request.headers.authorization) {
      return new ApiError("api_key_missing", "No API key provided: send it as 'Authorization: Bearer sk_test_…'.", {
        headers: CHALLENGE.missing,
      });
    }
    const token = bearerToken(request);
    if (!token || !KEY_PATTERN.test(token)) {
      return new ApiError("api_key_invalid", "The Authorization header must be 'Bearer ' followed by an sk_test_ or sk_live_ key.", {
        headers: CHALLENGE.invalid,
      });
    }
    return whenReady(keys.findByHash(sha256(token)), (key) => admit(request, token, key));
  };
}

/**
 * Notes a key's use at most once a minute per key: the dashboard shows when a key was last used, to
 * the minute, and a write on every request would cost the API its speed.
 */
export function keyUseNoter(users: UserStore, clock: Clock, everyMs = 60_000): (keyId: string) => void {
  const noted = new Map<string, number>();
  return (keyId) => {
    const now = clock.now();
    const last = noted.get(keyId);
    if (last !== undefined && now - last < everyMs) return;
    noted.set(keyId, now);
    // Not awaited: a request does not wait for this note, and a note that fails costs only the note.
    users.touchKey(keyId, now).catch(() => noted.delete(keyId));
  };
}

/** The codes of a failed authentication, counted per client address (failed-auth-limit.ts). */
export const FAILED_AUTH_CODES: ReadonlySet<string> = new Set(["api_key_missing", "api_key_invalid"]);
