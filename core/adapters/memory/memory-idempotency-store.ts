import { STALE_IN_FLIGHT_MS, type BeginResult, type IdempotencyStore, type StoredResponse } from "../../ports/idempotency-store.ts";
import type { Scope } from "../../ports/records.ts";
import { pairKey, snapshot, type MemoryState } from "./memory-state.ts";

const keyOf = (scope: Scope, key: string) => pairKey(pairKey(scope.accountId, scope.livemode), key);

/** Idempotency keys in memory; `begin` checks and marks in one synchronous step, so one caller starts. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #state: MemoryState;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  async begin(scope: Scope, key: string, fingerprint: string, now: number, retentionMs: number): Promise<BeginResult> {
    const k = keyOf(scope, key);
    const held = this.#state.idempotencyKeys.get(k);
    // Past retention, or in flight longer than any request runs, the key is free again.
    const free = !held || held.createdAt <= now - retentionMs || (held.response === null && held.createdAt <= now - STALE_IN_FLIGHT_MS);
    if (free) {
      this.#state.idempotencyKeys.set(k, snapshot({ fingerprint, createdAt: now, response: null }));
      return { kind: "started" };
    }
    if (held.fingerprint !== fingerprint) return { kind: "mismatch" };
    if (held.response === null) return { kind: "in_flight" };
    return { kind: "replay", response: held.response };
  }

  async complete(scope: Scope, key: string, response: StoredResponse): Promise<void> {
    const k = keyOf(scope, key);
    const held = this.#state.idempotencyKeys.get(k);
    if (held) this.#state.idempotencyKeys.set(k, snapshot({ ...held, response }));
  }

  async abandon(scope: Scope, key: string): Promise<void> {
    const k = keyOf(scope, key);
    if (this.#state.idempotencyKeys.get(k)?.response === null) this.#state.idempotencyKeys.delete(k);
  }

  async purge(olderThan: number): Promise<number> {
    let purged = 0;
    for (const [k, held] of this.#state.idempotencyKeys) {
      if (held.createdAt > olderThan) continue;
      this.#state.idempotencyKeys.delete(k);
      purged++;
    }
    return purged;
  }
}
