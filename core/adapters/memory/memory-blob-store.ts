import { Readable } from "node:stream";
import { checkedBlobKey } from "../../blob-keys.ts";
import type { BlobStore } from "../../ports/blob-store.ts";

/** Blobs in a map: for evaluation runs and tests, where nothing needs to outlive the process. */
export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, Buffer>();

  async put(key: string, bytes: Buffer): Promise<void> {
    // A copy, as a store that writes elsewhere would keep: the caller may reuse its buffer.
    this.#blobs.set(checkedBlobKey(key), Buffer.from(bytes));
  }

  async create(key: string, bytes: Buffer): Promise<boolean> {
    if (this.#blobs.has(checkedBlobKey(key))) return false;
    this.#blobs.set(key, Buffer.from(bytes));
    return true;
  }

  async get(key: string): Promise<Buffer | null> {
    return this.#blobs.get(checkedBlobKey(key)) ?? null;
  }

  async open(key: string): Promise<{ stream: Readable; bytes: number } | null> {
    const bytes = this.#blobs.get(checkedBlobKey(key));
    return bytes ? { stream: Readable.from([bytes]), bytes: bytes.length } : null;
  }

  async delete(key: string): Promise<void> {
    this.#blobs.delete(checkedBlobKey(key));
  }

  get size(): number {
    return this.#blobs.size;
  }
}
