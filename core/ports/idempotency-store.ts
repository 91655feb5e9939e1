import type { Scope } from "./records.ts";

export type StoredResponse = { statusCode: number; body: string; headers: Record<string, string> };

export type BeginResult = { kind: "started" } | { kind: "replay"; response: StoredResponse } | { kind: "in_flight" } | { kind: "mismatch" };

/**
 * How long a key may stay in flight: longer than any request may run (api/app.ts's requestTimeout,
 * 60 s). A mark older than this belongs to a process that died mid-request, and a client retrying
 * waits this long at most for its key (a create that did take effect is answered at once).
 */
export const STALE_IN_FLIGHT_MS = 75_000;

/**
 * Idempotency keys, scoped to an account and environment. `begin` is atomic: of many concurrent
 * requests with one key, exactly one gets `started`. A key is free again once `retentionMs` has
 * passed since it began, or STALE_IN_FLIGHT_MS while it is still in flight.
 */
export interface IdempotencyStore {
  begin(scope: Scope, key: string, fingerprint: string, now: number, retentionMs: number): Promise<BeginResult>;
  complete(scope: Scope, key: string, response: StoredResponse): Promise<void>;
  /** Forgets a key whose request did not finish with a storable response (a 5xx, a crash). */
  abandon(scope: Scope, key: string): Promise<void>;
  purge(olderThan: number): Promise<number>;
}
