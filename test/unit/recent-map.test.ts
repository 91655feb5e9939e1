import { describe, expect, it } from "vitest";
import { RecentMap } from "../../core/runtime/recent-map.ts";

describe("RecentMap", () => {
  it("keeps at most max entries, the most recently set among them", () => {
    const map = new RecentMap<number, string>(100);
    for (let i = 0; i < 1_000; i++) {
      map.set(i, `v${i}`);
      expect(map.size).toBeLessThanOrEqual(100);
    }
    // At least the last half of max is always there.
    for (let i = 950; i < 1_000; i++) expect(map.get(i)).toBe(`v${i}`);
    expect(map.get(0)).toBeUndefined();
    expect(map.get(899)).toBeUndefined();
  });

  it("keeps an entry that is read while newer ones arrive", () => {
    const map = new RecentMap<string, number>(10);
    map.set("kept", 1);
    for (let i = 0; i < 100; i++) {
      map.set(`k${i}`, i);
      expect(map.get("kept")).toBe(1);
    }
    expect(map.size).toBeLessThanOrEqual(10);
  });

  it("answers the value last set for a key, and nothing after clear", () => {
    const map = new RecentMap<string, number>(4);
    map.set("a", 1);
    map.set("b", 2);
    map.set("a", 3);
    map.set("c", 4);
    expect(map.get("a")).toBe(3);
    expect(map.size).toBeLessThanOrEqual(4);
    map.clear();
    expect(map.get("a")).toBeUndefined();
    expect(map.size).toBe(0);
  });
});
