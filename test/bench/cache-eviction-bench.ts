/**
 * `node test/bench/cache-eviction-bench.ts`: what an insert costs in a cache kept at 50,000 entries,
 * evicting the oldest with `map.delete(map.keys().next().value)` against lru-cache's LRUCache (what
 * the read caches, capture links, VIN decodes and capture plans use), once each has evicted
 * ROUNDS x 50,000 entries. Prints µs an insert.
 */
import { LRUCache } from "lru-cache";

const MAX = 50_000;
const ROUNDS = 4;

function trimmedMap() {
  const map = new Map<string, string>();
  return (key: string, value: string) => {
    if (map.size >= MAX) map.delete(map.keys().next().value!);
    map.set(key, value);
  };
}

function lruCache() {
  const cache = new LRUCache<string, string>({ max: MAX });
  return (key: string, value: string) => {
    cache.set(key, value);
  };
}

for (const [name, make] of [
  ["Map, oldest deleted through keys().next()", trimmedMap],
  ["LRUCache (lru-cache)", lruCache],
] as const) {
  const set = make();
  for (let i = 0; i < MAX; i++) set(`insp_${i}`, "token");
  const t0 = performance.now();
  for (let i = MAX; i < MAX * (ROUNDS + 1); i++) set(`insp_${i}`, "token");
  console.log(`${name}: ${(((performance.now() - t0) * 1000) / (MAX * ROUNDS)).toFixed(2)} µs an insert`);
}
