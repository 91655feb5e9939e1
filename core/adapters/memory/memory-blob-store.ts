import { Readable } from "node:stream";
import { byteOrder, checkedBlobKey } from "../../domain/blob-keys.ts";
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

  async list(folder: string, startAfter: string | null, limit: number): Promise<string[]> {
    const inFolder = [...this.#blobs.keys()].filter((k) => k.startsWith(folder) && !k.slice(folder.length).includes("/"));
    return byteOrder(
      inFolder.map((k) => k.slice(folder.length)),
      startAfter,
      limit,
    );
  }

  get size(): number {
    return this.#blobs.size;
  }
}
