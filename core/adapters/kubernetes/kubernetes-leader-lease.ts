import { type CoordinationV1Api, type V1Lease, V1MicroTime, type Watch } from "@kubernetes/client-node";
import type { LeaderLease } from "../../ports/leader-lease.ts";
import { apiStatus, CONFLICT, NOT_FOUND } from "./api-status.ts";

export type KubernetesLeaderLeaseOptions = {
  api: CoordinationV1Api;
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease not renewed stays its holder's (leaseDurationSeconds). */
  ttlMs: number;
  /**
   * Watches the Lease while this replica waits to lead, so it sees each renewal as it is made and
   * tries when the holder's lease is due; without it, it reads the Lease every third of the duration.
   */
  watch?: Watch;
  /** A failed try to take the lease (the API server away, or this account not allowed): it is tried again. */
  onError?: (error: unknown) => void;
};

/** After a failed renewal, the next try comes this soon (not a third of the lease later). */
const RETRY_MS = 500;
/** Past the time a holder's lease is due, a standby tries this often (its watch may lag the record). */
const DUE_POLL_MS = 100;

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it (the
 * JavaScript client has no helper): every write is a replace carrying the resourceVersion read, so
 * of two replicas racing, the API server takes one and answers the other 409. A replica takes the
 * lease when there is none, when it is released (no holder), or when its record has not changed for
 * leaseDurationSeconds as this replica's own clock measures it since it last saw it change (never
 * the holder's renewTime against this clock: the two clocks may disagree). client-go's timing: the
 * lease duration is OPERATOR_LEASE_MS (whole seconds); the holder renews every third of it and calls
 * itself lost when a renewal finds another holder, or when it could not renew for two thirds of it
 * (renew deadline), before any other replica may take it; a failed renewal is retried after RETRY_MS
 * (retry period). Where client-go's standby polls every retry period, so it sees a renewal up to a
 * period late and tries up to a period after the lease is due, a standby here watches the Lease
 * (`watch`): it sees each renewal as it is made and tries when the holder's lease is due (its
 * duration after the change it saw), then every DUE_POLL_MS: it leads within the duration of the
 * holder's last renewal, plus a round trip or two.
 */
export class KubernetesLeaderLease implements LeaderLease {
  readonly #o: KubernetesLeaderLeaseOptions;
  readonly #seconds: number;
  /** The last record read, and when this replica saw it change. */
  #observed: { resourceVersion: string; spec: V1Lease["spec"] } | null = null;
  #observedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #holding = false;

  constructor(options: KubernetesLeaderLeaseOptions) {
    this.#o = options;
    this.#seconds = Math.max(1, Math.round(options.ttlMs / 1000));
  }

  async acquire(lost: (why: string) => void): Promise<void> {
    const every = Math.max(100, Math.floor(this.#o.ttlMs / 3));
    const failed = (error: unknown) => {
      this.#o.onError?.(error);
      return false;
    };
    const watching = await this.#watch();
    try {
      while (!this.#stopped && !(await this.#tryAcquireOrRenew().catch(failed))) {
        await new Promise((r) => setTimeout(r, this.#untilDue(every, watching !== null)));
      }
    } finally {
      watching?.abort();
    }
    if (this.#stopped) return;
    this.#holding = true;
    let renewedAt = Date.now();
    const renew = async () => {
      let held: boolean | null;
      try {
        held = await this.#tryAcquireOrRenew();
      } catch {
        held = null; // the API server out of reach: keep trying until the deadline
      }
      if (held === false) {
        this.#holding = false;
        return lost("another replica holds the lease");
      }
      if (held) renewedAt = Date.now();
      else if (Date.now() - renewedAt >= (2 * this.#o.ttlMs) / 3) {
        this.#holding = false;
        return lost("the lease could not be renewed in time");
      }
      // A failed renewal is tried again soon: a slow moment must not cost the lease.
      if (!this.#stopped) this.#timer = setTimeout(renew, held ? every : Math.min(every, RETRY_MS)).unref();
    };
    this.#timer = setTimeout(renew, every).unref();
  }

  /** How long a standby waits before its next try: until the holder's lease is due where it watches, else a third of the duration. */
  #untilDue(every: number, watching: boolean): number {
    const seconds = this.#observed?.spec?.leaseDurationSeconds;
    if (!watching || !this.#observed?.spec?.holderIdentity || !seconds) return every;
    const late = Date.now() - (this.#observedAt + seconds * 1000);
    return late < 0 ? Math.min(-late, every) : late < every ? DUE_POLL_MS : every;
  }

  /** Follows the Lease's changes (each noted as #see notes a read); null where there is no watch or it cannot start. */
  async #watch(): Promise<AbortController | null> {
    const { watch, namespace, name } = this.#o;
    if (!watch) return null;
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    return watch
      .watch(
        path,
        { fieldSelector: `metadata.name=${name}` },
        (phase, lease: V1Lease) => {
          if (phase === "ADDED" || phase === "MODIFIED") this.#see(lease);
        },
        () => {},
      )
      .catch(() => null);
  }

  async release(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (!this.#holding || !this.#observed) return;
    this.#holding = false;
    // Given up as client-go gives it up: no holder, so the next replica need not wait out the duration.
    const spec = { ...this.#observed.spec, holderIdentity: undefined, leaseDurationSeconds: 1, renewTime: new V1MicroTime() };
    await this.#replace(spec, this.#observed.resourceVersion).catch(() => {});
  }

  /** True when this replica holds the lease after the call; false when another does. Throws when the API server cannot be reached. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const { api, namespace, name, identity } = this.#o;
    const now = new V1MicroTime();
    let current: V1Lease;
    try {
      current = await api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (apiStatus(error) !== NOT_FOUND) throw error;
      const spec = { holderIdentity: identity, leaseDurationSeconds: this.#seconds, acquireTime: now, renewTime: now, leaseTransitions: 0 };
      try {
        const made = await api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } });
        this.#see(made);
        return true;
      } catch (createError) {
        if (apiStatus(createError) === CONFLICT) return false; // another replica made it first
        throw createError;
      }
    }
    this.#see(current);
    const spec = current.spec ?? {};
    const mine = spec.holderIdentity === identity;
    const expired = Date.now() - this.#observedAt >= (spec.leaseDurationSeconds ?? this.#seconds) * 1000;
    if (!mine && spec.holderIdentity && !expired) return false;
    const next = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: this.#seconds,
      renewTime: now,
      ...(mine ? {} : { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
    };
    try {
      this.#see(await this.#replace(next, current.metadata?.resourceVersion ?? ""));
      return true;
    } catch (error) {
      if (apiStatus(error) === CONFLICT) return false; // changed since it was read: another replica wrote first
      throw error;
    }
  }

  #replace(spec: V1Lease["spec"], resourceVersion: string): Promise<V1Lease> {
    const { api, namespace, name } = this.#o;
    return api.replaceNamespacedLease({ name, namespace, body: { metadata: { name, namespace, resourceVersion }, spec } });
  }

  /** Notes the record; a change (another resourceVersion) restarts this replica's count of its duration. */
  #see(lease: V1Lease): void {
    const resourceVersion = lease.metadata?.resourceVersion ?? "";
    if (this.#observed?.resourceVersion !== resourceVersion) this.#observedAt = Date.now();
    this.#observed = { resourceVersion, spec: lease.spec };
  }
}
