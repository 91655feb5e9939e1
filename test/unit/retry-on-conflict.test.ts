import { ApiException } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { apiStatus, CONFLICT } from "../../core/adapters/kubernetes/api-status.ts";
import { type ConflictBackoff, ConflictRetriesExhausted, retryOnConflict } from "../../core/adapters/kubernetes/retry-on-conflict.ts";

const conflict = () => new ApiException(409, "Conflict", { reason: "Conflict" }, {});
const backoff: ConflictBackoff = { firstPauseMs: 10, factor: 2, maxPauseMs: 200, budgetMs: 1_000 };

/** An object at a version, written on the version read (compare-and-set), with a fake clock the pauses move. */
function setup(options: { random?: () => number } = {}) {
  const clock = { at: 0 };
  const store = { version: 1, value: 0 };
  const pauses: number[] = [];
  const reads: number[] = [];
  const run = <R>(apply: (read: { version: number; value: number }) => Promise<R>, read = () => ({ ...store })) =>
    retryOnConflict(
      "write of thing",
      (attempt) => {
        reads.push(attempt);
        return read();
      },
      apply,
      {
        backoff,
        now: () => clock.at,
        random: options.random ?? (() => 0.5),
        sleep: async (ms) => {
          pauses.push(ms);
          clock.at += ms;
        },
      },
    );
  /** The compare-and-set write: 409 unless `read` is the version stored. */
  const write = async (read: { version: number; value: number }, value: number) => {
    if (read.version !== store.version) throw conflict();
    Object.assign(store, { version: store.version + 1, value });
    return value;
  };
  return { clock, store, pauses, reads, run, write };
}

describe("retryOnConflict", () => {
  it("reads again and applies the change again after each 409, on the newer version", async () => {
    const t = setup();
    let others = 3; // another writer gets in before each of the first three writes
    const answer = await t.run(async (read) => {
      if (others-- > 0) Object.assign(t.store, { version: t.store.version + 1, value: t.store.value + 100 });
      return t.write(read, read.value + 1);
    });
    // The change (+1) was applied to what the other writer left, not to the first read.
    expect(answer).toBe(301);
    expect(t.store.value).toBe(301);
    expect(t.reads).toEqual([0, 1, 2, 3]);
    expect(t.pauses).toHaveLength(3);
  });

  it("pauses a random part of a doubling ceiling, capped", async () => {
    const draws = [0.9, 0.1, 0.5, 0.99, 0.3, 0.7, 0.2];
    const t = setup({ random: () => draws.shift()! });
    let fails = 7;
    await t.run(async () => {
      if (fails-- > 0) throw conflict();
      return "ok";
    });
    // Ceilings 10, 20, 40, 80, 160, 200, 200 (capped), each times its draw.
    expect(t.pauses.map((p) => Math.round(p * 1000) / 1000)).toEqual([9, 2, 20, 79.2, 48, 140, 40]);
  });

  it("does not retry any other failure: the first one ends it", async () => {
    const t = setup();
    let calls = 0;
    for (const error of [new ApiException(404, "Not Found", {}, {}), new ApiException(500, "boom", {}, {}), new Error("ECONNREFUSED")]) {
      calls = 0;
      await expect(
        t.run(async () => {
          calls++;
          throw error;
        }),
      ).rejects.toBe(error);
      expect(calls).toBe(1);
    }
    expect(t.pauses).toEqual([]);
  });

  it("gives up once its budget has passed, with a 409 that says so and carries the last conflict", async () => {
    const t = setup({ random: () => 1 });
    let tries = 0;
    const last = conflict();
    const error = await t
      .run(async () => {
        tries++;
        throw last;
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictRetriesExhausted);
    expect(apiStatus(error)).toBe(CONFLICT);
    expect((error as Error).cause).toBe(last);
    expect((error as Error).message).toBe(`write of thing: gave up after ${tries} writes refused with 409 Conflict in 1000 ms`);
    // 10 + 20 + 40 + 80 + 160 = 310, then 200 a pause: 310 + 3 × 200 = 910, and the last pause is cut to the 90 left.
    expect(t.pauses).toEqual([10, 20, 40, 80, 160, 200, 200, 200, 90]);
    expect(tries).toBe(10);
    expect(t.clock.at).toBe(1_000);
  });
});
