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
import { storeUnavailable } from "../../domain/errors.ts";

export type Nats = {
  nc: NatsConnection;
  js: JetStreamClient;
  kvm: Kvm;
  /** Whether the connection is up now: false from a disconnect until the client has reconnected. */
  connected(): boolean;
  /** Drains the connection (its subscriptions finish what they hold), or closes it where it cannot drain. */
  close(): Promise<void>;
};

/** The first wait between reconnection tries, and the longest (the client's own fixed wait is 2 s). */
export const RECONNECT_MIN_MS = 100;
export const RECONNECT_MAX_MS = 2_000;

/**
 * The wait before the next reconnection try, growing with the outage: a third of how long the
 * connection has been lost, at least RECONNECT_MIN_MS and at most RECONNECT_MAX_MS, times this
 * process's `jitter` (0.8 to 1.2, drawn afresh at each outage). The client asks again after each
 * wait and dials once the wait it gets has passed since its last try, so the gap between tries is
 * half the outage so far: tries at about 0.1, 0.2, 0.3, 0.45, 0.7, 1, 1.5, 2.3, 3.4 s… (×1.5 each),
 * then every 2 s. A restarted server (back in a second or two) is found within a fraction of its
 * outage, which an operator's lease needs (renewed within two thirds of OPERATOR_LEASE_MS), and a
 * long outage is not hammered by every process of the cluster at once.
 */
export function reconnectWaitMs(outageMs: number, jitter: number): number {
  return Math.round(Math.min(RECONNECT_MAX_MS, Math.max(RECONNECT_MIN_MS, outageMs / 3)) * jitter);
}

const drawJitter = () => 0.8 + Math.random() * 0.4;

/**
 * One connection to NATS (`NATS_URL`; several servers comma-separated). It reconnects forever, with
 * a growing, jittered wait between tries (reconnectWaitMs): a NATS restart or failover is an outage
 * the stores ride out (their calls fail as unavailable meanwhile), never a reason for the process
 * to stop. `connected()` says whether it is up now, for /readyz.
 */
export async function connectNats(options: {
  url: string;
  name: string;
  onStatus?: (status: Status) => void;
  /** Keep trying until the server answers, rather than failing at once (a workload started before NATS). */
  waitForServer?: boolean;
}): Promise<Nats> {
  /** When the connection was lost (or first tried), and this outage's jitter; lostAt 0 while connected. */
  const outage = { lostAt: Date.now(), jitter: drawJitter() };
  const nc = await connect({
    servers: options.url.split(","),
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectDelayHandler: () => reconnectWaitMs(outage.lostAt ? Date.now() - outage.lostAt : 0, outage.jitter),
    waitOnFirstConnect: options.waitForServer ?? false,
  });
  outage.lostAt = 0;
  const report = options.onStatus;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" && !outage.lostAt) Object.assign(outage, { lostAt: Date.now(), jitter: drawJitter() });
      if (status.type === "reconnect") outage.lostAt = 0;
      report?.(status);
    }
  })().catch(() => {});
  return {
    nc,
    js: jetstream(nc),
    kvm: new Kvm(nc),
    connected: () => !outage.lostAt && !nc.isClosed(),
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
