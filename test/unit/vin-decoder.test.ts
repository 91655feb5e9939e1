import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { VinDecoder } from "../../core/vin/vin-decoder.ts";
import { OTHER_VALID_VIN, VALID_VIN } from "../helpers/service.ts";

const ACCORD = { make: "Honda", model: "Accord", year: 2003 };
const UNKNOWN = { make: null, model: null, year: null };

describe("VinDecoder", () => {
  const made: { decoder: VinDecoder; dir: string }[] = [];
  /** A decoder on a data directory of its own: cold, its first decode unpacks the vPIC database (24 MB gzipped). */
  const coldDecoder = (timeoutMs: number) => {
    const dir = mkdtempSync(join(tmpdir(), "vi-vin-"));
    const decoder = new VinDecoder(dir, { timeoutMs, onError: (error) => console.error(error) });
    made.push({ decoder, dir });
    return decoder;
  };
  afterEach(async () => {
    for (const { decoder, dir } of made.splice(0)) {
      await decoder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("decodes make, model and year, and nulls for a VIN vPIC does not know", async () => {
    const decoder = coldDecoder(120_000);
    expect(await decoder.decode(VALID_VIN)).toEqual(ACCORD);
    expect(await decoder.lookup(VALID_VIN)).toEqual({ vehicle: ACCORD, later: null });
    expect(await decoder.decode("ZZZZZZZZZZZZZZZZZ")).toEqual(UNKNOWN);
  }, 180_000);

  it("a decode that fails is not run again for a while: reads of undecoded inspections look their VINs up again (findInspection)", async () => {
    // Its data directory a file: the database cannot be unpacked, and every decode fails, in every try.
    const dir = mkdtempSync(join(tmpdir(), "vi-vin-"));
    writeFileSync(join(dir, "vpic"), "");
    let failures = 0;
    const decoder = new VinDecoder(join(dir, "vpic"), { timeoutMs: 60_000, onError: () => failures++ });
    made.push({ decoder, dir });
    for (let read = 0; read < 5; read++) expect(await decoder.decode(VALID_VIN)).toEqual(UNKNOWN);
    // The first decode's tries, then nothing until the failure is old: before, 3 tries for each read.
    expect(failures).toBe(3);
  }, 60_000);

  it("a decode past the budget is not cut short: the next decode of the VIN has it, and the caller that stopped waiting gets it later", async () => {
    // 1 ms: the cold start (a worker thread, the database unpacked and opened) always takes longer.
    const decoder = coldDecoder(1);
    const first = await decoder.lookup(VALID_VIN);
    expect(first.vehicle).toEqual(UNKNOWN);
    expect(first.later).not.toBeNull();
    // Before, the timeout aborted the task, and piscina ends the thread of a running task: each
    // decode killed the cold start under way, and no decode within the budget ever came.
    await expect.poll(() => decoder.decode(VALID_VIN), { timeout: 120_000, interval: 500 }).toEqual(ACCORD);
    expect(await first.later).toEqual(ACCORD);
    // A warm decoder answers a new VIN pattern too (the budget of 1 ms may still pass first: a new pattern's queries take a while).
    const other = await decoder.lookup(OTHER_VALID_VIN);
    expect(await (other.later ?? Promise.resolve(other.vehicle))).toMatchObject({ make: "Tesla", model: "Model 3" });
  }, 180_000);
});
