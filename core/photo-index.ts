import pLimit from "p-limit";
import { photoIndexFolder } from "./blob-keys.ts";
import { CANDIDATE_BITS, type Fingerprint, hamming, probesOf, samePicture, slicesOf } from "./domain/photo-fingerprint.ts";
import type { Paint } from "./domain/same-vehicle.ts";
import type { BlobStore } from "./ports/blob-store.ts";
import type { Scope } from "./ports/records.ts";

/**
 * A photo as the index keeps it: whose it is, its fingerprint, when its camera says it was taken,
 * and the vehicle's paint where the upload read it (core/domain/same-vehicle.ts; null: not read, or
 * indexed before paints were).
 */
export type IndexedPhoto = Fingerprint & { mediaId: string; inspectionId: string; takenAt: number | null; at: number; paint: Paint | null };

/** A photo of this inspection that is a picture already sent, and the inspection it was sent in first. */
export type ReusedPhoto = { mediaId: string; inspection: string };

/** A photo's name in a slice: its hash, when it was sent (base 36) and its media id, so a lookup reads only what is near, oldest first. */
const nameOf = (p: IndexedPhoto) => `${p.hash}.${p.at.toString(36)}.${p.mediaId}`;

/** Listings of one lookup in flight at once. */
const IN_FLIGHT = 16;

/** An index folder lists this many names a page; a slice of an account's index holds about 1/256 of its photos. */
const PAGE = 1_000;

/**
 * Every photo an account sent, indexed to find the same picture sent again (core/domain/
 * photo-fingerprint.ts), kept as blobs so that every composition has it where its photos are (a
 * directory, a bucket): one blob per photo with its fingerprint, and one empty name per slice of its
 * hash, `slices/<slice>/<hash>.<sent at>.<media id>`, so that the photos sharing a slice with a hash (or all
 * but one bit of it: probesOf) are one listing each, without reading them, and only those within
 * reach of the hash are read. A lookup lists 80 slices of about N/256 names each: its time grows
 * with the account's photos (`npm run bench:photo-index`).
 */
export class PhotoIndex {
  readonly #blobs: BlobStore;

  constructor(blobs: BlobStore) {
    this.#blobs = blobs;
  }

  /** Adds a photo; the photo's blob is written before the names that lead to it. */
  async add(scope: Scope, photo: IndexedPhoto): Promise<void> {
    const folder = photoIndexFolder(scope.accountId, scope.livemode);
    const { thumb, colour, ...rest } = photo;
    const body = JSON.stringify({ ...rest, thumb: Buffer.from(thumb).toString("base64"), colour: Buffer.from(colour).toString("base64") });
    await this.#blobs.put(`${folder}/media/${photo.mediaId}.json`, Buffer.from(body), "application/json");
    await Promise.all(
      slicesOf(photo.hash).map((slice) => this.#blobs.put(`${folder}/slices/${slice}/${nameOf(photo)}`, Buffer.alloc(0), "text/plain")),
    );
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
    const folder = photoIndexFolder(scope.accountId, scope.livemode);
    const exact = slicesOf(photo.hash);
    // First the slices themselves, the hash's and its mirror image's (16 listings): a copy resized,
    // re-encoded or mirrored is nearly always there. Then, only if none was the picture, the slices'
    // one-bit neighbours (64 more), where a cropped copy may be. A mirrored copy is near its mirror
    // image's hash, barely cropped as a rule (measured: 0 to 2 bits): its neighbours are not read.
    const seen = new Set<string>([photo.mediaId]);
    const rounds = [
      [
        ...exact.map((slice) => ({ hash: photo.hash, slice })),
        ...slicesOf(photo.mirrorHash).map((slice) => ({ hash: photo.mirrorHash, slice })),
      ],
      probesOf(photo.hash)
        .filter((slice) => !exact.includes(slice))
        .map((slice) => ({ hash: photo.hash, slice })),
    ];
    const limit = pLimit(IN_FLIGHT);
    for (const round of rounds) {
      // The listings go out together, a few at a time: one after another, they held a cluster's
      // completion for seconds.
      const listed = await Promise.all(
        round.map(({ hash, slice }) => limit(async () => ({ hash, names: await this.#all(`${folder}/slices/${slice}/`) }))),
      );
      const reach = new Map<string, number>();
      for (const { hash, names } of listed)
        for (const name of names) {
          const [named, at, mediaId] = name.split(".") as [string, string, string];
          // The hash and the time are in the name: only a photo within reach of it is read, oldest first.
          if (!seen.has(mediaId) && hamming(hash, named) <= CANDIDATE_BITS) reach.set(mediaId, Number.parseInt(at, 36));
        }
      // Oldest first, and the first that is this picture is the answer: a picture sent many times is
      // read and compared once or twice, not once per copy.
      for (const [mediaId] of [...reach].sort((a, b) => a[1] - b[1])) {
        seen.add(mediaId);
        const other = await this.get(scope, mediaId);
        if (other && other.inspectionId !== photo.inspectionId && samePicture(photo, other)) return other;
      }
    }
    return null;
  }

  async #all(folder: string): Promise<string[]> {
    const names: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await this.#blobs.list(folder, after, PAGE);
      names.push(...page);
      if (page.length < PAGE) return names;
      after = page.at(-1)!;
    }
  }
}
