import type { KV, Kvm } from "@nats-io/kv";
import type { LeaderLease } from "../../ports/leader-lease.ts";
import { firstWriter, isRevisionConflict } from "./nats-connection.ts";

const KEY = "leader";
/** After a failed renewal, the next try comes this soon (not a third of the lease later). */
const RETRY_MS = 500;
/** The longest a call on the lease may take. */
const CALL_TIMEOUT_MS = 1_000;
/** The holder renews every third of the TTL and gives up two thirds after its last renewal (Kubernetes' 15 s lease, 10 s deadline). */
const renewEvery = (ttlMs: number) => Math.max(100, Math.floor(ttlMs / 3));

/** Past the time a holder's lease is due to expire, a standby tries this often until the key is gone (the server's expiry runs a little late). */
const DUE_POLL_MS = 100;

/**
 * One active operator among its replicas, until Kubernetes' leader election takes over: a lease in
 * a KV bucket whose TTL is the lease. Timing as client-go's leader election names it: the lease
 * duration is the TTL (OPERATOR_LEASE_MS); the leader renews it by a revision-checked write every
 * third of it and gives up (renew deadline) two thirds after its last renewal, before any other
 * replica can take it; a failed renewal is retried after RETRY_MS (retry period). A replica that
 * is not leading watches the key, so it sees each write as it is made, and tries to create the key
 * when the holder's lease is due to expire: a TTL after the last write it saw, on its own clock (as
 * client-go's observedTime, never the holder's clock): it writes over the revision it saw (a
 * revision-checked update, as client-go replaces an expired record), which fails if the holder
 * renewed meanwhile; and at once when the key is deleted (released). So it leads within the TTL of
 * the holder's last renewal plus a round trip, not a third of a TTL later. Without the watch (NATS away) it tries every third of the TTL. A renewal that finds the
 * key changed or gone means another replica leads now: the holder is told, and must stop acting at
 * once, as controller-runtime exits when it loses its lease.
 */
export class NatsLeaderLease implements LeaderLease {
  readonly #kv: KV;
  readonly #identity: string;
  readonly #ttlMs: number;
  #revision = 0;
  /** When the lease was last written by this replica: past the TTL without a write, it may be another's. */
  #renewedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  private constructor(kv: KV, identity: string, ttlMs: number) {
    this.#kv = kv;
    this.#identity = identity;
    this.#ttlMs = ttlMs;
  }

  static async open(kvm: Kvm, options: { bucket?: string; identity: string; ttlMs: number }): Promise<NatsLeaderLease> {
    const kv = await kvm.create(options.bucket ?? "operator-leader", { history: 1, ttl: options.ttlMs });
    return new NatsLeaderLease(kv, options.identity, options.ttlMs);
  }

  /** Resolves once this replica leads; then renews until release(), and calls `lost` if it stops leading. */
  async acquire(lost: (why: string) => void): Promise<void> {
    const every = renewEvery(this.#ttlMs);
    const holder = await this.#watchHolder();
    try {
      while (!this.#stopped) {
        try {
          // The holder's write seen a lease ago and none since: its lease is over (it gave up two
          // thirds in), so take it over that revision, as client-go replaces an expired record,
          // rather than wait for the server to remove the key (a few hundred ms late).
          // The server may have removed the expired key first (its TTL, which no watch reports): then
          // there is no revision to write over, and the key is created.
          const expired = holder.expired();
          const take = expired
            ? this.#kv
                .update(KEY, this.#identity, expired)
                .catch((error) => (isRevisionConflict(error) ? this.#kv.create(KEY, this.#identity) : Promise.reject(error)))
            : this.#kv.create(KEY, this.#identity);
          if (await firstWriter(take.then((revision) => (this.#revision = revision)))) break;
        } catch {
          // NATS out of reach: no one can take the lease meanwhile without it either; try again.
        }
        await holder.turn(every);
      }
    } finally {
      holder.stop();
    }
    if (this.#stopped) return;
    const renew = async () => {
      let next = every;
      try {
        // Answered within a second (not JetStream's 5 s): a renewal sent while NATS restarts would
        // otherwise wait out its timeout past the point where the holder must give up, though NATS
        // was back seconds before; failing fast, it is tried again every RETRY_MS until it goes through.
        const timeout = Math.min(CALL_TIMEOUT_MS, every);
        const write = this.#kv.update(KEY, this.#identity, this.#revision, timeout).then((revision) => (this.#revision = revision));
        if (!(await firstWriter(write)) && !(await this.#stillMine())) return lost("another replica holds the lease");
        this.#renewedAt = Date.now();
      } catch (error) {
        // Unreachable for two thirds of the lease: given up before the key expires and another replica may take it.
        if (Date.now() - this.#renewedAt >= (2 * this.#ttlMs) / 3) {
          return lost(`the lease could not be renewed: ${(error as Error).message}`);
        }
        // Until then, tried again soon: a slow moment must not cost the lease.
        next = Math.min(every, RETRY_MS);
      }
      if (!this.#stopped) this.#timer = setTimeout(renew, next).unref();
    };
    this.#renewedAt = Date.now();
    this.#timer = setTimeout(renew, every).unref();
  }

  /**
   * Follows the key's writes while this replica waits to lead: `turn` resolves when the holder's
   * lease is due to expire (a TTL after the write last seen), at once when the key is deleted, and
   * after `every` at the latest (or DUE_POLL_MS past due, until `every` past due: the watch may have
   * missed a write).
   */
  async #watchHolder(): Promise<{ turn(every: number): Promise<void>; expired(): number | null; stop(): void }> {
    const seen = { at: 0, revision: 0, wake: () => {} };
    const watch = await this.#kv.watch({ key: KEY }).catch(() => null);
    if (watch) {
      void (async () => {
        for await (const e of watch) {
          if (e.operation === "PUT") Object.assign(seen, { at: Date.now(), revision: e.revision });
          else {
            Object.assign(seen, { at: 0, revision: 0 });
            seen.wake(); // released (or purged): try now
          }
        }
      })().catch(() => {});
    }
    return {
      turn: (every) => {
        const late = seen.at ? Date.now() - (seen.at + this.#ttlMs) : -every;
        const ms = late < 0 ? Math.min(-late, every) : late < every ? DUE_POLL_MS : every;
        return new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          seen.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      },
      expired: () => (seen.revision && Date.now() >= seen.at + this.#ttlMs ? seen.revision : null),
      stop: () => watch?.stop(),
    };
  }

  /**
   * After a renewal refused for its revision: whether the key still names this replica. It does when
   * an earlier renewal went through but its answer was lost (a timeout under load) and the revision
   * moved on with it; then that revision is this replica's to renew from. Seen in CI: an operator
   * under load took that refusal for another leader and exited.
   */
  async #stillMine(): Promise<boolean> {
    const entry = await this.#kv.get(KEY);
    if (entry?.operation !== "PUT" || entry.string() !== this.#identity) return false;
    this.#revision = entry.revision;
    return true;
  }

  /** Stops renewing and deletes the lease if this replica still holds it, so another takes over at once. */
  async release(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (this.#revision) await this.#kv.delete(KEY, { previousSeq: this.#revision }).catch(() => {});
  }
}
