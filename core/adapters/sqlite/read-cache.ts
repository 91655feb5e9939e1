import { LRUCache } from "lru-cache";
import { changeStamp, type Database } from "./database.ts";

/**
 * Records read from one connection's `tables`, kept until a row of those may have changed: the whole
 * cache empties when changeStamp() moves, so it answers what a read would (another process's commits
 * show within a millisecond). On GET /v1/inspections/:id, where the API key and the inspection are
 * read on every request, it took the server's CPU from 94 to 115 µs a request to 46 to 52
 * (`npm run bench`'s service, measured from /proc). Updates and deletes of its tables' rows empty it;
 * inserts do not (it holds only rows that exist, by a unique key), so creates arriving all the time
 * leave it warm: GETs by id over 500 inspections on 16 connections, with 200 creates a second on
 * 2 more, went from 17,300 and 19,200 req/s to 22,900 and 24,300 (two 8 s runs of each build,
 * autocannon against the service on loopback). Records it holds are frozen, since every caller gets the same object.
 * Absent records are not kept: a stream of unknown ids or keys would only fill it.
 */
export class ReadCache<V> {
  readonly #db: Database;
  readonly #tables: readonly string[];
  readonly #held: LRUCache<string, V & {}>;
  #stamp = -1;

  /** `tables`: every table the records are read from. */
  constructor(db: Database, tables: readonly string[], max: number) {
    this.#db = db;
    // changeStamp() counts tables by their lower-case names, as SQLite treats them.
    this.#tables = tables.map((t) => t.toLowerCase());
    this.#held = new LRUCache({ max });
  }

  get(key: string, read: () => V | null): V | null {
    const stamp = changeStamp(this.#db, this.#tables);
    if (stamp !== this.#stamp) {
      this.#held.clear();
      this.#stamp = stamp;
    }
    const held = this.#held.get(key);
    if (held !== undefined) return held;
    const value = read();
    if (value === null) return null;
    // A caller that edits it fails loudly instead of changing what the next request is told.
    Object.freeze(value);
    this.#held.set(key, value as V & {});
    return value;
  }
}
