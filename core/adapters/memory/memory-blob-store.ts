import { checkedBlobKey } from "../../blob-keys.ts";
import type { BlobStore } from "../../ports/blob-store.ts";

/** Blobs in a map: for evaluation runs and tests, where nothing needs to outlive the process. */
export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, Buffer>();

  async put(key: string, bytes: Buffer): Promise<void> {
    // A copy, as a store that writes elsewhere would keep: the caller may reuse its buffer.
    this.#blobs.set(checkedBlobKey(key), Buffer.from(bytes));
  }

  async get(key: string): Promise<Buffer | null> {
    return this.#blobs.get(checkedBlobKey(key)) ?? null;
  }

  async delete(key: string): Promise<void> {
    this.#blobs.delete(checkedBlobKey(key));
  }

  get size(): number {
    return this.#blobs.size;
  }
}
