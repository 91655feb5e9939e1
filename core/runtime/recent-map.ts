/**
 * A cache that keeps the entries last set or read, at most `max`, in two generations: entries go
 * into the young map; when it holds half of `max` it becomes the old one and the previous old one
 * is dropped whole; a read that finds an entry in the old map moves it back to the young.
 *
 * Not a Map trimmed one by one with `map.delete(map.keys().next().value)`: V8 leaves a deleted
 * entry's slot in place until the table is rebuilt, and every keys() iterator skips those slots from
 * the start again, so each eviction costs time in proportion to the evictions before it
 * (test/bench/recent-map-bench.ts, docs/benchmarks.md). Values may not be undefined (it means absent).
 */
export class RecentMap<K, V> {
  readonly #half: number;
  #young = new Map<K, V>();
  #old = new Map<K, V>();

  constructor(max: number) {
    this.#half = Math.max(1, Math.floor(max / 2));
  }

  get(key: K): V | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    if (old !== undefined) {
      this.#old.delete(key);
      this.#put(key, old);
    }
    return old;
  }

  set(key: K, value: V): void {
    this.#old.delete(key);
    this.#put(key, value);
  }

  clear(): void {
    this.#young.clear();
    this.#old.clear();
  }

  /** How many entries it holds: at most `max`. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  #put(key: K, value: V): void {
    this.#young.set(key, value);
    if (this.#young.size >= this.#half) {
      this.#old = this.#young;
      this.#young = new Map();
    }
  }
}
