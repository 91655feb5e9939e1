import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { blobStoreFrom } from "../../core/adapters/blob-store-from.ts";
import { connectNats } from "../../core/adapters/nats/nats-connection.ts";
import { commitGroup, openDatabase } from "../../core/adapters/sqlite/database.ts";
import { moveLegacyReports } from "../../core/adapters/sqlite/legacy-reports.ts";
import { SqliteEventStore } from "../../core/adapters/sqlite/sqlite-event-store.ts";
import { SqliteInspectionStore } from "../../core/adapters/sqlite/sqlite-inspection-store.ts";
import { SqliteKeyStore } from "../../core/adapters/sqlite/sqlite-key-store.ts";
import { SqliteUserStore } from "../../core/adapters/sqlite/sqlite-user-store.ts";
import { type Config, ConfigError, loadConfig } from "../../core/runtime/config.ts";
import { createLogger } from "../../core/runtime/logger.ts";
import { Metrics } from "../../core/runtime/metrics.ts";
import { natsAccountStores } from "../account-stores.ts";
import { readSharedSecret, sharedSecret } from "../cluster-services.ts";
import { type Installation, type MigrationCounts, MigrationRefused, migrate } from "./migration.ts";

export { MigrationRefused };

/** A configuration as the service would read it from its environment, from a file of KEY=value lines (a .env file, a ConfigMap's data). */
export function configFile(path: string, role: string): Config {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read the ${role} configuration ${path}: ${(error as Error).message}`);
  }
  try {
    return loadConfig(parseEnv(text));
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`the ${role} configuration ${path}: ${error.message}`);
    throw error;
  }
}

type Opened = Installation & { close(): Promise<void> };

/**
 * The embedded installation, read through its SQLite store and blob store. Nothing is made in it;
 * reports an earlier version kept as rows are moved to its blob store first, as its own next start
 * would move them, so they are copied with the other blobs.
 */
async function embeddedInstallation(config: Config): Promise<Opened> {
  if (config.natsUrl || config.inspectionStore !== "sqlite")
    throw new MigrationRefused("the source must be an embedded installation (no NATS_URL, INSPECTION_STORE=sqlite)");
  const db = openDatabase(config.dataDir);
  const blobs = blobStoreFrom(config.blobs);
  try {
    await moveLegacyReports(db, blobs);
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    inspections: new SqliteInspectionStore(db),
    events: new SqliteEventStore(db),
    keys: new SqliteKeyStore(db),
    users: new SqliteUserStore(db),
    blobs,
    secret: async () => {
      try {
        return readFileSync(join(config.dataDir, "capture-link.key"));
      } catch {
        return null;
      }
    },
    adoptSecret: () => Promise.reject(new Error("the source is only read")),
    close: async () => {
      commitGroup(db);
      db.close();
    },
  };
}

/**
 * The cluster installation as its workloads would open it (bin/cluster-services.ts): keys, users
 * and the shared secret in NATS KV, blobs where its config says (S3), inspections and events in the
 * SQLite store under its DATA_DIR or as Inspection resources (INSPECTION_STORE=kubernetes).
 */
async function clusterInstallation(config: Config): Promise<Opened> {
  if (!config.natsUrl) throw new MigrationRefused("the target must be a cluster installation (NATS_URL set)");
  const log = createLogger(config.logLevel === "info" ? "warn" : config.logLevel);
  const nats = await connectNats({ url: config.natsUrl, name: "vehicle-inspection-migrate" });
  const closing: (() => unknown)[] = [() => nats.close()];
  const close = async () => {
    for (const c of closing.reverse()) await c();
  };
  try {
    const { keys, users } = await natsAccountStores(nats);
    closing.push(() => keys.close());
    const blobs = blobStoreFrom(config.blobs);
    let stores: Pick<Installation, "inspections" | "events">;
    if (config.inspectionStore === "kubernetes") {
      const kubernetes = await (await import("../kubernetes-stores.ts")).kubernetesStores(config, log, new Metrics("migrate"), blobs);
      closing.push(() => kubernetes.close());
      stores = kubernetes;
    } else {
      const db = openDatabase(config.dataDir);
      closing.push(() => {
        commitGroup(db);
        db.close();
      });
      stores = { inspections: new SqliteInspectionStore(db), events: new SqliteEventStore(db) };
    }
    return {
      ...stores,
      keys,
      users,
      blobs,
      secret: () => readSharedSecret(nats),
      adoptSecret: (offered) => sharedSecret(nats, offered),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * `migrate --from FILE --to FILE`: copies the embedded installation that FILE's configuration names
 * into the cluster one, which its workloads have not started on yet (bin/commands/migration.ts).
 */
export async function migrateInstallation(
  from: Config,
  to: Config,
  options: { allowOtherData: boolean; print: (line: string) => void },
): Promise<MigrationCounts> {
  const source = await embeddedInstallation(from);
  try {
    const target = await clusterInstallation(to);
    try {
      return await migrate(source, target, options);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
