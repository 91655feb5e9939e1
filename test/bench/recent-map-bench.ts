/**
 * `node test/bench/recent-map-bench.ts`: what an insert costs in a cache kept at 50,000 entries,
 * evicting the oldest with `map.delete(map.keys().next().value)` against RecentMap
 * (core/runtime/recent-map.ts), once each has evicted ROUNDS x 50,000 entries. Prints µs an insert.
 */
import { RecentMap } from "../../core/runtime/recent-map.ts";

const MAX = 50_000;
const ROUNDS = 4;

function trimmedMap() {
  const map = new Map<string, string>();
  return (key: string, value: string) => {
    if (map.size >= MAX) map.delete(map.keys().next().value!);
    map.set(key, value);
  };
}

function recentMap() {
  const map = new RecentMap<string, string>(MAX);
  return (key: string, value: string) => map.set(key, value);
}

for (const [name, make] of [
  ["Map, oldest deleted through keys().next()", trimmedMap],
  ["RecentMap", recentMap],
] as const) {
  const set = make();
  for (let i = 0; i < MAX; i++) set(`insp_${i}`, "token");
  const t0 = performance.now();
  for (let i = MAX; i < MAX * (ROUNDS + 1); i++) set(`insp_${i}`, "token");
  console.log(`${name}: ${(((performance.now() - t0) * 1000) / (MAX * ROUNDS)).toFixed(2)} µs an insert`);
}
