import { type JetStreamClient, JetStreamApiError, jetstream } from "@nats-io/jetstream";
import { type KvEntry, Kvm } from "@nats-io/kv";
import {
  ClosedConnectionError,
  ConnectionError,
  connect,
  DrainingConnectionError,
  type NatsConnection,
  NoRespondersError,
  RequestError,
  type Status,
  TimeoutError,
} from "@nats-io/transport-node";
import { storeUnavailable } from "../../errors.ts";

export type Nats = {
  nc: NatsConnection;
  js: JetStreamClient;
  kvm: Kvm;
  /** Drains the connection (its subscriptions finish what they hold), or closes it where it cannot drain. */
  close(): Promise<void>;
};

/**
 * One connection to NATS (`NATS_URL`; several servers comma-separated). It reconnects forever: a
 * NATS restart or failover is an outage the stores ride out (their calls fail as unavailable
 * meanwhile), never a reason for the process to stop.
 */
export async function connectNats(options: {
  url: string;
  name: string;
  onStatus?: (status: Status) => void;
  /** Keep trying until the server answers, rather than failing at once (a workload started before NATS). */
  waitForServer?: boolean;
}): Promise<Nats> {
  // Half a second between tries rather than the client's 2 s: a restarted server is back in about
  // that, and an operator's lease (OPERATOR_LEASE_MS) must be renewed within its TTL.
  const nc = await connect({
    servers: options.url.split(","),
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: options.waitForServer ?? false,
  });
  if (options.onStatus) {
    const report = options.onStatus;
    void (async () => {
      for await (const status of nc.status()) report(status);
    })().catch(() => {});
  }
  return {
    nc,
    js: jetstream(nc),
    kvm: new Kvm(nc),
    close: async () => {
      if (nc.isClosed()) return;
      await nc.drain().catch(() => nc.close());
    },
  };
}

/** The expected-revision check failed: another writer changed the key first (or it exists, for `create`). */
export function isRevisionConflict(error: unknown): boolean {
  // 10071: wrong last sequence; 10164: the same, where the server cannot tell the last sequence.
  return error instanceof JetStreamApiError && (error.code === 10071 || error.code === 10164);
}

/** The JSON value a KV read holds; null where the key is absent or deleted (a delete or purge marker). */
export const storedValue = <T>(e: KvEntry | null): T | null => (e && e.operation === "PUT" ? e.json<T>() : null);

/** Whether a revision-checked write went through; false where another writer got there first. */
export async function firstWriter(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isRevisionConflict(error)) return false;
    throw error;
  }
}

/** NATS was out of reach (down, restarting, no JetStream answering) rather than refusing the request. */
function unreachable(error: unknown): boolean {
  if (error instanceof RequestError) return unreachable(error.cause) || error.isNoResponders();
  return (
    error instanceof TimeoutError ||
    error instanceof NoRespondersError ||
    error instanceof ClosedConnectionError ||
    error instanceof DrainingConnectionError ||
    error instanceof ConnectionError
  );
}

/** Runs a store call, its NATS outages turned into the contract's 503 (the driver's error kept as the cause). */
export async function natsCall<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw unreachable(error) ? storeUnavailable(what, error) : error;
  }
}
