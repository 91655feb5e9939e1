import { describe, expect, it } from "vitest";
import { median, percentile } from "../bench/stats.ts";

describe("the benchmarks' order statistics", () => {
  it("takes the mean of the two middle values as the median of an even count, the middle one of an odd count", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, 1, 3])).toBe(3);
    expect(median([7])).toBe(7);
  });

  it("gives percentiles by nearest rank, in any order", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 down to 1
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile(hundred, 0)).toBe(1);
    expect(percentile([10, 30, 20], 50)).toBe(20);
  });

  it("leaves the caller's values in their order, and refuses none", () => {
    const values = [3, 1, 2];
    median(values);
    percentile(values, 90);
    expect(values).toEqual([3, 1, 2]);
    expect(() => median([])).toThrow();
    expect(() => percentile([], 50)).toThrow();
  });
});
