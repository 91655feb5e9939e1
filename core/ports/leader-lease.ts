/**
 * One active operator among its replicas: a lease that one holder renews while it acts. In a
 * cluster with NATS, a KV key (core/adapters/nats/nats-leader-lease.ts); on Kubernetes, a
 * coordination.k8s.io Lease (core/adapters/kubernetes/kubernetes-leader-lease.ts).
 */
export interface LeaderLease {
  /**
   * Resolves once this replica holds the lease; then renews it until release(), and calls `lost` if
   * it stops holding it: the replica must stop acting at once (controller-runtime exits).
   */
  acquire(lost: (why: string) => void): Promise<void>;
  /** Stops renewing and gives the lease up if this replica holds it, so another takes over at once. */
  release(): Promise<void>;
}
