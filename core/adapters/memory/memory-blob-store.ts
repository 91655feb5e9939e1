import type { BlobStore } from "../../ports/blob-store.ts";

/** Blobs in a map: for evaluation runs and tests, where nothing needs to outlive the process. */
export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, Buffer>();

  /** Keys are relative paths inside the store, here as in a directory or a bucket prefix. */
  #key(key: string): string {
    if (key.startsWith("/") || key.split("/").includes("..")) throw new Error(`blob key escapes the store: ${key}`);
    return key;
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    // A copy, as a store that writes elsewhere would keep: the caller may reuse its buffer.
    this.#blobs.set(this.#key(key), Buffer.from(bytes));
  }

  async get(key: string): Promise<Buffer | null> {
    return this.#blobs.get(this.#key(key)) ?? null;
  }

  async delete(key: string): Promise<void> {
    this.#blobs.delete(this.#key(key));
  }

  get size(): number {
    return this.#blobs.size;
  }
}
