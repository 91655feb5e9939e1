import { describe, expect, it } from "vitest";
import { keyUseNoter } from "../../api/plugins/auth.ts";
import type { UserStore } from "../../core/ports/user-store.ts";

describe("keyUseNoter", () => {
  it("writes a key's use at most once a minute, each key on its own", () => {
    let now = 0;
    const writes: [string, number][] = [];
    const note = keyUseNoter({ touchKey: async (id: string, at: number) => void writes.push([id, at]) } as unknown as UserStore, {
      now: () => now,
    });
    note("key_a");
    now = 59_999;
    note("key_a");
    note("key_b");
    now = 60_000;
    note("key_a");
    expect(writes).toEqual([
      ["key_a", 0],
      ["key_b", 59_999],
      ["key_a", 60_000],
    ]);
  });
});
