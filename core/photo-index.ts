import { photoIndexFolder } from "./blob-keys.ts";
import { CANDIDATE_BITS, type Fingerprint, hamming, probesOf, samePicture, slicesOf } from "./domain/photo-fingerprint.ts";
import type { BlobStore } from "./ports/blob-store.ts";
import type { Scope } from "./ports/records.ts";

/** A photo as the index keeps it: whose it is, its fingerprint, and when its camera says it was taken. */
export type IndexedPhoto = Fingerprint & { mediaId: string; inspectionId: string; takenAt: number | null; at: number };

/** A photo of this inspection that is a picture already sent, and the inspection it was sent in first. */
export type ReusedPhoto = { mediaId: string; inspection: string };

/** An index folder lists this many names a page; a slice of an account's index holds about 1/256 of its photos. */
const PAGE = 1_000;

/**
 * Every photo an account sent, indexed to find the same picture sent again (core/domain/
 * photo-fingerprint.ts), kept as blobs so that every composition has it where its photos are (a
 * directory, a bucket): one blob per photo with its fingerprint, and one empty name per slice of its
 * hash, `slices/<slice>/<hash>.<media id>`, so that the photos sharing a slice with a hash (or all
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
      slicesOf(photo.hash).map((slice) =>
        this.#blobs.put(`${folder}/slices/${slice}/${photo.hash}.${photo.mediaId}`, Buffer.alloc(0), "text/plain"),
      ),
    );
  }

  /** A photo as indexed; null when it never was (sent before the index existed). */
  async get(scope: Scope, mediaId: string): Promise<IndexedPhoto | null> {
    const found = await this.#blobs.get(`${photoIndexFolder(scope.accountId, scope.livemode)}/media/${mediaId}.json`);
    if (!found) return null;
    const o = JSON.parse(found.toString("utf8")) as Omit<IndexedPhoto, "thumb" | "colour"> & { thumb: string; colour: string };
    return { ...o, thumb: new Uint8Array(Buffer.from(o.thumb, "base64")), colour: new Uint8Array(Buffer.from(o.colour, "base64")) };
  }

  /**
   * The earliest photo of another inspection of the account that is this photo's picture (directly
   * or in a mirror); null when there is none.
   */
  async firstSent(scope: Scope, photo: IndexedPhoto): Promise<IndexedPhoto | null> {
    const folder = photoIndexFolder(scope.accountId, scope.livemode);
    // A copy is near its original's hash; a mirrored copy is near its mirror image's, barely cropped
    // as a rule (measured: 0 to 2 bits), so its slices are read without their neighbours.
    const searches = [
      { hash: photo.hash, slices: probesOf(photo.hash) },
      { hash: photo.mirrorHash, slices: slicesOf(photo.mirrorHash) },
    ];
    const reach = new Set<string>();
    for (const { hash, slices } of searches)
      for (const slice of slices)
        for (const name of await this.#all(`${folder}/slices/${slice}/`)) {
          const dot = name.indexOf(".");
          // The hash is in the name: only a photo within reach of it is read.
          if (hamming(hash, name.slice(0, dot)) <= CANDIDATE_BITS) reach.add(name.slice(dot + 1));
        }
    reach.delete(photo.mediaId);
    const others = (await Promise.all([...reach].map((id) => this.get(scope, id)))).filter(
      (o): o is IndexedPhoto => o !== null && o.inspectionId !== photo.inspectionId,
    );
    // Oldest first, and the first that is this picture is the answer: a picture sent many times is
    // compared once, not once per copy.
    return others.sort((a, b) => a.at - b.at).find((o) => samePicture(photo, o)) ?? null;
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
