import { NatsKeyStore } from "../core/adapters/nats/nats-key-store.ts";
import { connectNats, type Nats } from "../core/adapters/nats/nats-connection.ts";
import { NatsUserStore } from "../core/adapters/nats/nats-user-store.ts";
import { openDatabase } from "../core/adapters/sqlite/database.ts";
import { SqliteKeyStore } from "../core/adapters/sqlite/sqlite-key-store.ts";
import { SqliteUserStore } from "../core/adapters/sqlite/sqlite-user-store.ts";
import type { Config } from "../core/runtime/config.ts";
import type { KeyStore } from "../core/ports/key-store.ts";
import type { UserStore } from "../core/ports/user-store.ts";

/**
 * Accounts, API keys, webhook secrets and dashboard users, where the service keeps them: with
 * NATS_URL in NATS KV buckets every replica shares (the two stores name the same `accounts`), else
 * in the SQLite store under DATA_DIR.
 */
export async function natsAccountStores(
  nats: Nats,
  onWatchError?: (error: unknown) => void,
): Promise<{ keys: NatsKeyStore; users: NatsUserStore }> {
  const [keys, users] = await Promise.all([NatsKeyStore.open(nats.kvm, { onWatchError }), NatsUserStore.open(nats.kvm)]);
  return { keys, users };
}

/** The same, alone, for CLI commands (`keys`, `webhooks`, `users`) that must not start the service's threads. */
export async function accountStoresOnly(config: Config): Promise<{ keys: KeyStore; users: UserStore; close(): Promise<void> }> {
  if (!config.natsUrl) {
    const db = openDatabase(config.dataDir);
    return { keys: new SqliteKeyStore(db), users: new SqliteUserStore(db), close: async () => db.close() };
  }
  const nats = await connectNats({ url: config.natsUrl, name: "vehicle-inspection-cli" });
  try {
    const { keys, users } = await natsAccountStores(nats);
    return {
      keys,
      users,
      async close() {
        await keys.close();
        await nats.close();
      },
    };
  } catch (error) {
    await nats.close();
    throw error;
  }
}
