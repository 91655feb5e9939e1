import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../../core/domain/errors.ts";
import { sha256 } from "../../core/domain/ids.ts";
import type { IdempotencyStore, StoredResponse } from "../../core/ports/idempotency-store.ts";
import type { Scope } from "../../core/ports/records.ts";
import type { Clock } from "../../core/runtime/time.ts";

export const IDEMPOTENCY_RETENTION_MS = 24 * 3_600_000;
const KEY_PATTERN = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;
/** Response headers replayed with the stored body. */
const REPLAYED_HEADERS = ["location"];

declare module "fastify" {
  interface FastifyRequest {
    idempotency?: { scope: Scope; key: string };
    /** The request's Idempotency-Key and the fingerprint of what it asks, until the route runs. */
    idempotencyClaim?: { key: string; fingerprint: string };
  }
  interface FastifyContextConfig {
    /**
     * A route's way to tell that an earlier request under the key took effect though its key still
     * reads as in flight (its process died, or recording its answer failed): the response to give.
     * Called once the request is validated: its body is the route's.
     */
    idempotentEffect?: (request: FastifyRequest) => Promise<StoredResponse | null>;
  }
}

/**
 * Idempotency-Key on POST, per the contract: replay the first response, 422 for a different request
 * under the same key, 409 while the first is still running, 5xx not kept. As Stripe's, a key is
 * claimed only by a request that starts executing: one refused by authentication or a rate limit
 * (onRequest), by its body's parsing or by validation leaves the key as it was, so the same key
 * with the request corrected is a new request. Keys are scoped to the API key's account and
 * environment.
 */
export function idempotency(store: IdempotencyStore, clock: Clock) {
  /**
   * Before validation: the key's form, and the fingerprint of the body as sent (validation would
   * normalise it, and keys recorded by earlier versions were taken of the body as sent).
   */
  const preValidation = async (request: FastifyRequest) => {
    if (request.method !== "POST") return;
    const key = request.headers["idempotency-key"];
    if (key === undefined) return;
    if (typeof key !== "string" || !KEY_PATTERN.test(key)) {
      throw new ApiError("parameter_invalid", "Idempotency-Key must be 1 to 255 printable ASCII characters.", { param: "Idempotency-Key" });
    }
    const fingerprint = sha256(`${request.method} ${request.url}\n${request.body === undefined ? "" : JSON.stringify(request.body)}`);
    request.idempotencyClaim = { key, fingerprint };
  };

  /** After validation, where the route starts executing: the key is claimed, or answered from. */
  const preHandler = async (request: FastifyRequest, reply: FastifyReply) => {
    const claim = request.idempotencyClaim;
    if (!claim) return;
    request.idempotencyClaim = undefined;
    const { key } = claim;
    const result = await store.begin(request.scope, key, claim.fingerprint, clock.now(), IDEMPOTENCY_RETENTION_MS);
    switch (result.kind) {
      case "started":
        request.idempotency = { scope: request.scope, key };
        return;
      case "mismatch":
        throw new ApiError(
          "idempotency_key_reused",
          "This Idempotency-Key was used with a different request; use a new key for a new request.",
          { param: "Idempotency-Key" },
        );
      case "in_flight": {
        const effect = await request.routeOptions.config.idempotentEffect?.(request);
        if (effect) {
          reply
            .code(effect.statusCode)
            .headers(effect.headers)
            .header("idempotent-replayed", "true")
            .type("application/json; charset=utf-8");
          return reply.send(effect.body);
        }
        throw new ApiError(
          "idempotency_key_in_use",
          "A request with this Idempotency-Key is still being processed; retry after it finishes.",
          { param: "Idempotency-Key" },
        );
      }
      case "replay":
        reply
          .code(result.response.statusCode)
          .headers(result.response.headers)
          .header("idempotent-replayed", "true")
          .type("application/json; charset=utf-8");
        return reply.send(result.response.body);
    }
  };

  const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const owned = request.idempotency;
    if (!owned) return payload;
    request.idempotency = undefined;
    if (reply.statusCode >= 500 || typeof payload !== "string") {
      await store.abandon(owned.scope, owned.key);
    } else {
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      await store.complete(owned.scope, owned.key, { statusCode: reply.statusCode, body: payload, headers });
    }
    return payload;
  };

  /** A request that ends without a response (client gone, crash in a hook) must not hold its key. */
  const onResponse = async (request: FastifyRequest) => {
    if (request.idempotency) await store.abandon(request.idempotency.scope, request.idempotency.key);
  };

  return { preValidation, preHandler, onSend, onResponse };
}
