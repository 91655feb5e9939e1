import type { Logger } from "pino";
import { IDEMPOTENCY_RETENTION_MS } from "../api/plugins/idempotency.ts";
import { connectNats, firstWriter, natsCall, type Nats } from "../core/adapters/nats/nats-connection.ts";
import { NatsIdempotencyStore } from "../core/adapters/nats/nats-idempotency-store.ts";
import { NatsRateLimitStore } from "../core/adapters/nats/nats-rate-limit-store.ts";
import type { Config } from "../core/runtime/config.ts";
import type { Metrics } from "../core/runtime/metrics.ts";
import { systemClock } from "../core/runtime/time.ts";
import type { InspectionRecords } from "../core/adapters/kubernetes/inspection-records.ts";
import { natsAccountStores } from "./account-stores.ts";
import { embeddedServices, moveReports, localSecret, signingFrom, type EmbeddedServices } from "./embedded-services.ts";

export type WorkloadServices = EmbeddedServices & {
  nats: Nats | null;
  /** The Inspection resources, where they are the store (INSPECTION_STORE=kubernetes): what the operator prunes. */
  inspectionRecords: InspectionRecords | null;
};

/**
 * The services of one workload of the cluster mode (`api`, `operator`): with NATS_URL, idempotency
 * keys, rate-limit counters, accounts, API keys, webhook secrets and dashboard users live in NATS KV
 * buckets every replica shares (bin/account-stores.ts), and so does the signing secret;
 * blobs are where config.blobs says (S3). Without NATS_URL these are the embedded set's, under
 * DATA_DIR. In either, inspections and events are the `Inspection` resources with
 * INSPECTION_STORE=kubernetes (bin/kubernetes-stores.ts), else the SQLite store under DATA_DIR,
 * shared by the processes of one machine.
 */
export async function workloadServices(config: Config, log: Logger, workload: string, metrics?: Metrics): Promise<WorkloadServices> {
  const base = embeddedServices(config, log, workload, systemClock, metrics);
  await moveReports(base, log);
  // Loaded only when asked for: bin/commands/kube-config.ts says why.
  const kubernetes =
    config.inspectionStore === "kubernetes"
      ? await (await import("./kubernetes-stores.ts")).kubernetesStores(config, log, base.metrics, base.blobs).catch(async (error) => {
          await base.close();
          throw error;
        })
      : null;
  const stores = kubernetes ? { inspections: kubernetes.inspections, events: kubernetes.events } : {};
  const inspectionRecords = kubernetes?.records ?? null;
  if (!config.natsUrl) {
    return {
      ...base,
      ...stores,
      nats: null,
      inspectionRecords,
      async close() {
        await kubernetes?.close();
        await base.close();
      },
    };
  }
  // A workload may start before NATS (a node's pods in any order, NATS restarting): it waits, not
  // ready (its /readyz says 503), and goes on once NATS answers, as its supervisor would have it.
  log.info({ nats_url: config.natsUrl }, "connecting to NATS; waiting for it if it is not up yet");
  const nats = await connectNats({
    url: config.natsUrl,
    name: `vehicle-inspection-${workload}`,
    onStatus: (status) => log.info({ nats: status.type }, "NATS connection status"),
    waitForServer: true,
  });
  try {
    const idempotency = await NatsIdempotencyStore.open(nats.kvm, { retentionMs: IDEMPOTENCY_RETENTION_MS });
    // Every replica must make and accept the same capture links, cookies and share links.
    const secret = await sharedSecret(nats, localSecret(config));
    const onWatchError = (err: unknown) => log.warn({ err }, "the failed-authentication counters' KV watch failed; watching again");
    // Every replica counts into the same buckets, so a client spreading its requests meets one limit.
    // An hour outlives every window counted (a minute at most).
    const [requests, failedAuth] = await Promise.all([
      NatsRateLimitStore.open(nats.kvm, { bucket: "rate-limits", ttlMs: 3_600_000, watch: false }),
      NatsRateLimitStore.open(nats.kvm, { bucket: "failed-auth", ttlMs: 3_600_000, watch: true, onWatchError }),
    ]);
    const { keys, users } = await natsAccountStores(nats, (err) => log.warn({ err }, "the API keys' KV watch failed; watching again"));
    return {
      ...base,
      ...signingFrom(secret, config.publicUrl),
      ...stores,
      idempotency,
      rateLimits: { requests, failedAuth },
      keys,
      users,
      nats,
      inspectionRecords,
      async close() {
        await kubernetes?.close();
        await Promise.all([requests.close(), failedAuth.close(), keys.close()]);
        await nats.close();
        await base.close();
      },
    };
  } catch (error) {
    await nats.close();
    await kubernetes?.close();
    await base.close();
    throw error;
  }
}

/**
 * The secret every replica signs with, kept in the KV bucket `secrets`. The first workload to start
 * offers its DATA_DIR's secret (so capture links made before the switch to cluster mode keep working)
 * and the first writer wins; every other replica takes the stored one.
 */
export async function sharedSecret(nats: Nats, offered: Buffer): Promise<Buffer> {
  const kv = await natsCall("the shared secret", () => nats.kvm.create("secrets", { history: 1 }));
  await firstWriter(kv.create("capture-link", offered.toString("base64")));
  const stored = await readSharedSecret(nats);
  if (!stored) throw new Error("the shared secret could not be read back from NATS KV");
  return stored;
}

/** The shared secret where a workload (or `migrate`) has stored one; null: none yet. */
export async function readSharedSecret(nats: Nats): Promise<Buffer | null> {
  const kv = await natsCall("the shared secret", () => nats.kvm.create("secrets", { history: 1 }));
  const entry = await kv.get("capture-link");
  return entry?.operation === "PUT" ? Buffer.from(entry.string(), "base64") : null;
}
