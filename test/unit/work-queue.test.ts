import { describe, expect, it } from "vitest";
import { systemClock } from "../../core/runtime/time.ts";
import { WorkQueue } from "../../operator/work-queue.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("WorkQueue", () => {
  it("retries a failing key with growing waits, without holding up the others", async () => {
    const calls: { key: string; at: number }[] = [];
    const errors: number[] = [];
    const queue = new WorkQueue({
      clock: systemClock,
      handle: async (key) => {
        calls.push({ key, at: Date.now() });
        if (key === "bad" && calls.filter((c) => c.key === "bad").length < 3) throw new Error("store unreachable");
        return null;
      },
      onError: (_key, _error, retryInMs) => errors.push(retryInMs),
    });
    queue.add("bad");
    queue.add("good");
    await sleep(500);
    await queue.stop();
    expect(errors).toEqual([100, 200]);
    const bad = calls.filter((c) => c.key === "bad").map((c) => c.at);
    expect(bad).toHaveLength(3);
    expect(bad[1]! - bad[0]!).toBeGreaterThanOrEqual(99);
    expect(bad[2]! - bad[1]!).toBeGreaterThanOrEqual(199);
    // The good key ran once, right after the first failure, not after the retries.
    expect(calls.findIndex((c) => c.key === "good")).toBe(1);
  });

  it("handles a key once at a time; added while handled, it runs once more after; requeueAfter brings it back", async () => {
    let running = 0;
    let most = 0;
    const seen: string[] = [];
    let queue: WorkQueue;
    queue = new WorkQueue({
      clock: systemClock,
      handle: async (key) => {
        running++;
        most = Math.max(most, running);
        seen.push(key);
        if (seen.length === 1) {
          queue.add("a");
          queue.add("a");
        }
        await sleep(5);
        running--;
        return seen.length === 2 ? 30 : null;
      },
      onError: () => {},
    });
    queue.add("a");
    await sleep(150);
    await queue.stop();
    expect(most).toBe(1);
    // First run; once more for the adds made during it (two adds, one run); then 30 ms later as asked.
    expect(seen).toEqual(["a", "a", "a"]);
  });
});

describe("WorkQueue's results, as controller-runtime counts reconciles", () => {
  it("tells each run's result and time: success, error, requeue (at once), requeue_after", async () => {
    const answers: (number | null | "throw")[] = [0, 20, "throw", null];
    const results: { result: string; seconds: number }[] = [];
    const queue = new WorkQueue({
      clock: systemClock,
      handle: async () => {
        await sleep(2);
        const answer = answers.shift() ?? null;
        if (answer === "throw") throw new Error("store unreachable");
        return answer;
      },
      onError: () => {},
      onResult: (result, seconds) => results.push({ result, seconds }),
    });
    queue.add("a");
    await sleep(300);
    await queue.stop();
    expect(results.map((r) => r.result)).toEqual(["requeue", "requeue_after", "error", "success"]);
    for (const { seconds } of results) {
      expect(seconds).toBeGreaterThan(0.001);
      expect(seconds).toBeLessThan(1);
    }
  });
});
