import type { Logger } from "pino";
import { IDEMPOTENCY_RETENTION_MS } from "../api/plugins/idempotency.ts";
import { connectNats, firstWriter, natsCall, type Nats } from "../core/adapters/nats/nats-connection.ts";
import { NatsIdempotencyStore } from "../core/adapters/nats/nats-idempotency-store.ts";
import type { Config } from "../core/config.ts";
import { embeddedServices, localSecret, signingFrom, type EmbeddedServices } from "./embedded-services.ts";

export type WorkloadServices = EmbeddedServices & { nats: Nats | null };

/**
 * The services of one workload of the cluster mode (`api`, `operator`): with NATS_URL, idempotency
 * keys live in a NATS KV bucket every replica shares; inspections, events, API keys and dashboard
 * users stay in the SQLite store under DATA_DIR, shared by the processes of one machine (the
 * `Inspection` custom resources replace it in Kubernetes); blobs are where config.blobs says (S3).
 * API keys stay beside the users because both name the same accounts: the NATS KeyStore waits for a
 * NATS UserStore to move with it. Without NATS_URL this is the embedded set.
 */
export async function workloadServices(config: Config, log: Logger, workload: string): Promise<WorkloadServices> {
  const base = embeddedServices(config, log);
  if (!config.natsUrl) return { ...base, nats: null };
  const nats = await connectNats({
    url: config.natsUrl,
    name: `vehicle-inspection-${workload}`,
    onStatus: (status) => log.info({ nats: status.type }, "NATS connection status"),
  });
  try {
    const idempotency = await NatsIdempotencyStore.open(nats.kvm, { retentionMs: IDEMPOTENCY_RETENTION_MS });
    // Every replica must make and accept the same capture links, cookies and share links.
    const secret = await sharedSecret(nats, localSecret(config));
    return {
      ...base,
      ...signingFrom(secret, config.publicUrl),
      idempotency,
      nats,
      async close() {
        await nats.close();
        await base.close();
      },
    };
  } catch (error) {
    await nats.close();
    await base.close();
    throw error;
  }
}

/**
 * The secret every replica signs with, kept in the KV bucket `secrets`. The first workload to start
 * offers its DATA_DIR's secret (so capture links made before the switch to cluster mode keep working)
 * and the first writer wins; every other replica takes the stored one.
 */
async function sharedSecret(nats: Nats, offered: Buffer): Promise<Buffer> {
  const kv = await natsCall("the shared secret", () => nats.kvm.create("secrets", { history: 1 }));
  await firstWriter(kv.create("capture-link", offered.toString("base64")));
  const entry = await kv.get("capture-link");
  const stored = entry?.operation === "PUT" ? entry.string() : null;
  if (!stored) throw new Error("the shared secret could not be read back from NATS KV");
  return Buffer.from(stored, "base64");
}
