import type { Logger } from "pino";
import { IDEMPOTENCY_RETENTION_MS } from "../api/plugins/idempotency.ts";
import { connectNats, type Nats } from "../core/adapters/nats/nats-connection.ts";
import { NatsIdempotencyStore } from "../core/adapters/nats/nats-idempotency-store.ts";
import type { Config } from "../core/config.ts";
import { embeddedServices, type EmbeddedServices } from "./embedded-services.ts";

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
    return {
      ...base,
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
