import { photoIndexFolder } from "../domain/blob-keys.ts";
import {
  bitCount,
  CANDIDATE_BITS,
  type Coarse,
  COARSE_COLOUR_SIDE,
  COARSE_GREY,
  coarseOf,
  type Fingerprint,
  halves,
  mayBeOnePicture,
  mirrored,
  mirroredColour,
  samePicture,
} from "../domain/photo-fingerprint.ts";
import type { Paint } from "../domain/same-vehicle.ts";
import type { BlobStore } from "../ports/blob-store.ts";
import type { Scope } from "../ports/records.ts";

/**
 * A photo as the index keeps it: whose it is, its fingerprint, when its camera says it was taken,
 * and the vehicle's paint where the upload read it (core/domain/same-vehicle.ts; null: not read, or
 * indexed before paints were).
 */
export type IndexedPhoto = Fingerprint & { mediaId: string; inspectionId: string; takenAt: number | null; at: number; paint: Paint | null };

/** A lookup reads the photos sent this long before the newest it has seen again: a photo's entry may land after a later one's. */
const OVERLAP_MS = 5 * 60_000;
/** A listing's page. */
const PAGE = 1_000;
/**
 * Photos held in memory, all accounts together (about 500 bytes each, `npm run bench:photo-index`):
 * past this the accounts looked up longest ago are let go, and read again when next looked up.
 */
const HELD = 500_000;
const COARSE_BYTES = COARSE_GREY * COARSE_GREY + 3 * COARSE_COLOUR_SIDE * COARSE_COLOUR_SIDE;
/** An entry's time in its name: milliseconds in base 36, fixed width, so names sort by time. */
const timeOf = (at: number) => Math.max(0, Math.floor(at)).toString(36).padStart(9, "0");
const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10).replaceAll("-", "");

/**
 * Every photo an account sent, indexed to find the same picture sent again (core/domain/
 * photo-fingerprint.ts), kept as blobs so that every composition has it where its photos are (a
 * directory, a bucket):
 * - `media/<media id>.json`: the photo's whole fingerprint, read only to confirm a candidate;
 * - `log/<day>/<time>.<media id>.<hash>.<coarse picture>`: one empty blob per photo, the log a
 *   process reads into memory, in time order, and then only what is new (the names after the newest
 *   it has seen, less OVERLAP_MS); `days/<day>` names the days the log has.
 * A lookup scans the account's photos in memory (hash within CANDIDATE_BITS, directly or in a
 * mirror, and the coarse pictures alike: mayBeOnePicture), then reads and compares the few that pass,
 * oldest first. Its time grows with the account's photos only by that scan (`npm run bench:photo-index`).
 */
export class PhotoIndex {
  readonly #blobs: BlobStore;
  /** Each account's photos in memory (by index folder), the one looked up longest ago first. */
  readonly #held = new Map<string, Held>();
  /** Each account's reading of the log in progress, and the one waiting to start after it. */
  readonly #reading = new Map<string, Promise<void>>();
  readonly #queued = new Map<string, Promise<void>>();
  /** Days this process has marked in `days/`, so that a photo costs two writes and not three. */
  readonly #marked = new Set<string>();

  constructor(blobs: BlobStore) {
    this.#blobs = blobs;
  }

  /** Adds a photo; its fingerprint is written before the log's name that leads to it. */
  async add(scope: Scope, photo: IndexedPhoto): Promise<void> {
    const folder = photoIndexFolder(scope.accountId, scope.livemode);
    const { thumb, colour, ...rest } = photo;
    const body = JSON.stringify({ ...rest, thumb: Buffer.from(thumb).toString("base64"), colour: Buffer.from(colour).toString("base64") });
    await this.#blobs.put(`${folder}/media/${photo.mediaId}.json`, Buffer.from(body), "application/json");
    const day = dayOf(photo.at);
    const name = `${timeOf(photo.at)}.${photo.mediaId}.${photo.hash}.${Buffer.from(packed(coarseOf(photo))).toString("base64url")}`;
    await this.#blobs.put(`${folder}/log/${day}/${name}`, Buffer.alloc(0), "text/plain");
    if (!this.#marked.has(`${folder}/${day}`)) {
      await this.#blobs.put(`${folder}/days/${day}`, Buffer.alloc(0), "text/plain");
      this.#marked.add(`${folder}/${day}`);
    }
  }

  /** A photo as indexed; null when it never was (sent before the index existed). */
  async get(scope: Scope, mediaId: string): Promise<IndexedPhoto | null> {
    const found = await this.#blobs.get(`${photoIndexFolder(scope.accountId, scope.livemode)}/media/${mediaId}.json`);
    if (!found) return null;
    const o = JSON.parse(found.toString("utf8")) as Omit<IndexedPhoto, "thumb" | "colour"> & { thumb: string; colour: string };
    return {
      ...o,
      paint: o.paint ?? null,
      thumb: new Uint8Array(Buffer.from(o.thumb, "base64")),
      colour: new Uint8Array(Buffer.from(o.colour, "base64")),
    };
  }

  /**
   * The earliest photo of another inspection of the account that is this photo's picture (directly
   * or in a mirror); null when there is none.
   */
  async firstSent(scope: Scope, photo: IndexedPhoto): Promise<IndexedPhoto | null> {
    return (await this.lookUp(scope, photo)).first;
  }

  /** firstSent's answer, and how many of the account's photos passed the in-memory gates as candidates. */
  async lookUp(scope: Scope, photo: IndexedPhoto): Promise<{ first: IndexedPhoto | null; candidates: number }> {
    // From memory, the photos that may be this picture, oldest first; the first that is this picture
    // is the answer: a picture sent many times is read and compared once or twice, not once per copy.
    const candidates = (await this.#caughtUp(scope)).candidates(photo);
    for (const mediaId of candidates) {
      const other = await this.get(scope, mediaId);
      if (other && other.inspectionId !== photo.inspectionId && samePicture(photo, other))
        return { first: other, candidates: candidates.length };
    }
    return { first: null, candidates: candidates.length };
  }

  /**
   * The account's photos in memory, with what the log gained since they were last read: a lookup
   * waits for a reading that starts after it came (one at a time per account; lookups that come
   * while one waits to start share it), so it sees every photo added before it.
   */
  async #caughtUp(scope: Scope): Promise<Held> {
    const folder = photoIndexFolder(scope.accountId, scope.livemode);
    const held = this.#held.get(folder) ?? new Held();
    // Most recently looked up last (a Map keeps its order of insertion), then the rest let go.
    this.#held.delete(folder);
    this.#held.set(folder, held);
    this.#forget();
    let queued = this.#queued.get(folder);
    if (!queued) {
      queued = (this.#reading.get(folder) ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => {
          this.#queued.delete(folder);
          const reading = this.#readNew(folder, held);
          this.#reading.set(folder, reading);
          return reading;
        });
      this.#queued.set(folder, queued);
    }
    await queued;
    return held;
  }

  async #readNew(folder: string, h: Held): Promise<void> {
    const from = h.newest - OVERLAP_MS;
    // The days from the one the overlap starts on (all of them the first time).
    const startDay = h.newest > 0 ? dayOf(from) : null;
    const days = await this.#all(`${folder}/days/`, startDay === null ? null : previous(startDay));
    for (const day of days) {
      const after = day === startDay ? timeOf(from) : null;
      for (const name of await this.#all(`${folder}/log/${day}/`, after)) h.take(name);
    }
    h.settle();
  }

  /** Lets go of the accounts looked up longest ago while more than HELD photos are in memory; the last one looked up stays. */
  #forget(): void {
    let total = 0;
    for (const held of this.#held.values()) total += held.size;
    for (const [folder, held] of this.#held) {
      if (total <= HELD || this.#held.size === 1) break;
      this.#held.delete(folder);
      total -= held.size;
    }
  }

  async #all(folder: string, startAfter: string | null): Promise<string[]> {
    const names: string[] = [];
    let after = startAfter;
    for (;;) {
      const page = await this.#blobs.list(folder, after, PAGE);
      names.push(...page);
      if (page.length < PAGE) return names;
      after = page.at(-1)!;
    }
  }
}

/** The day before a day (yyyymmdd), so that a listing after it starts at the day itself. */
const previous = (day: string) => dayOf(Date.parse(`${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}T00:00:00Z`) - 86_400_000);

const packed = (c: Coarse) => Buffer.concat([c.grey, c.colour]);
const unpacked = (bytes: Uint8Array, at = 0): Coarse => ({
  grey: bytes.subarray(at, at + COARSE_GREY * COARSE_GREY),
  colour: bytes.subarray(at + COARSE_GREY * COARSE_GREY, at + COARSE_BYTES),
});

/** One account's photos in memory, in columns: hashes, coarse pictures, times and media ids. */
class Held {
  #hashes = new Uint32Array(2 * 1024);
  #coarse = new Uint8Array(COARSE_BYTES * 1024);
  #times = new Float64Array(1024);
  readonly #ids: string[] = [];
  /** The photos taken within OVERLAP_MS of the newest: the only ones a later reading lists again. */
  #recent = new Map<string, number>();
  newest = 0;

  get size(): number {
    return this.#ids.length;
  }

  /** A log name read (`<time>.<media id>.<hash>.<coarse>`); one read before is passed over. */
  take(name: string): void {
    const [time, mediaId, hash, coarse] = name.split(".") as [string, string, string, string];
    if (this.#recent.has(mediaId) || !coarse) return;
    const n = this.#ids.length;
    if (n === this.#times.length) this.#grow();
    const [hi, lo] = halves(hash);
    this.#hashes[2 * n] = hi;
    this.#hashes[2 * n + 1] = lo;
    this.#coarse.set(Buffer.from(coarse, "base64url").subarray(0, COARSE_BYTES), n * COARSE_BYTES);
    const at = Number.parseInt(time, 36);
    this.#times[n] = at;
    this.#ids.push(mediaId);
    this.#recent.set(mediaId, at);
    this.newest = Math.max(this.newest, at);
  }

  /** Forgets, of the photos taken, those a later reading will not list again (older than OVERLAP_MS before the newest). */
  settle(): void {
    for (const [mediaId, at] of this.#recent) if (at < this.newest - OVERLAP_MS) this.#recent.delete(mediaId);
  }

  /** The media ids of the photos that may be `photo`'s picture, directly or in a mirror, oldest first. */
  candidates(photo: Fingerprint & { mediaId: string }): string[] {
    const direct = { hash: halves(photo.hash), coarse: coarseOf(photo) };
    const mirror = {
      hash: halves(photo.mirrorHash),
      coarse: coarseOf({ thumb: mirrored(photo.thumb), colour: mirroredColour(photo.colour) }),
    };
    const found: number[] = [];
    const [dHi, dLo] = direct.hash;
    const [mHi, mLo] = mirror.hash;
    const hashes = this.#hashes;
    // The hashes first, without allocating: nearly every photo stops there.
    for (let i = 0, n = this.#ids.length; i < n; i++) {
      const hi = hashes[2 * i]!;
      const lo = hashes[2 * i + 1]!;
      const near = bitCount((hi ^ dHi) >>> 0) + bitCount((lo ^ dLo) >>> 0) <= CANDIDATE_BITS;
      const nearMirror = bitCount((hi ^ mHi) >>> 0) + bitCount((lo ^ mLo) >>> 0) <= CANDIDATE_BITS;
      if ((!near && !nearMirror) || this.#ids[i] === photo.mediaId) continue;
      const coarse = unpacked(this.#coarse, i * COARSE_BYTES);
      if ((near && mayBeOnePicture(direct.coarse, coarse)) || (nearMirror && mayBeOnePicture(mirror.coarse, coarse))) found.push(i);
    }
    return found.sort((a, b) => this.#times[a]! - this.#times[b]!).map((i) => this.#ids[i]!);
  }

  #grow(): void {
    const hashes = new Uint32Array(this.#hashes.length * 2);
    hashes.set(this.#hashes);
    const coarse = new Uint8Array(this.#coarse.length * 2);
    coarse.set(this.#coarse);
    const times = new Float64Array(this.#times.length * 2);
    times.set(this.#times);
    [this.#hashes, this.#coarse, this.#times] = [hashes, coarse, times];
  }
}
