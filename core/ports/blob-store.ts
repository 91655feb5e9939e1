import type { Readable } from "node:stream";

/** Photos, evidence and reports as bytes under a key (local directory embedded, S3 in a cluster). */
export interface BlobStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /**
   * Stores the blob only where the key has none: true when this call stored it, false when a blob
   * was there first (and stays). For what must be written once though writers may race or retry.
   */
  create(key: string, bytes: Buffer, contentType: string): Promise<boolean>;
  /** Null when there is no such blob. */
  get(key: string): Promise<Buffer | null>;
  /** The blob as a stream, to answer a download without holding it whole; null when there is no such blob. */
  open(key: string): Promise<{ stream: Readable; bytes: number } | null>;
  delete(key: string): Promise<void>;
  /**
   * The names of the blobs directly in `folder` (a key prefix ending in "/"), in byte order, after
   * `startAfter` (a name) where given, at most `limit`: an index kept as keys, read in its order.
   */
  list(folder: string, startAfter: string | null, limit: number): Promise<string[]>;
}
