import { randomBytes } from "node:crypto";
import { link, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { Readable } from "node:stream";
import { byteOrder } from "../../domain/blob-keys.ts";
import type { BlobStore } from "../../ports/blob-store.ts";

const missing = (error: unknown) => (error as NodeJS.ErrnoException).code === "ENOENT";

export class FsBlobStore implements BlobStore {
  readonly #root: string;

  constructor(root: string) {
    this.#root = resolve(root);
  }

  #path(key: string): string {
    const path = resolve(join(this.#root, key));
    // Keys are made by the service, but a path outside the root must never be reachable.
    if (!path.startsWith(this.#root + sep)) throw new Error(`blob key escapes the store: ${key}`);
    return path;
  }

  /** The bytes written whole under a temporary name beside the blob's, so a crash never leaves a half-written blob under its own. */
  async #written(path: string, bytes: Buffer): Promise<string> {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    await writeFile(tmp, bytes);
    return tmp;
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const path = this.#path(key);
    await rename(await this.#written(path, bytes), path);
  }

  async create(key: string, bytes: Buffer): Promise<boolean> {
    const path = this.#path(key);
    const tmp = await this.#written(path, bytes);
    try {
      // link(2) fails where the name exists: of racing writers, exactly one makes it.
      await link(tmp, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw error;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.#path(key));
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  }

  /**
   * Read whole, then handed out as a stream: a local photo is at most the upload limit, and answering
   * with an fs.ReadStream left keep-alive connections that Fastify's close waited on for good under
   * load (test/integration/capture-race.test.ts beside the detection tests, every run), which a
   * buffer's stream does not. S3's objects are the ones streamed through.
   */
  async open(key: string): Promise<{ stream: Readable; bytes: number } | null> {
    const bytes = await this.get(key);
    return bytes ? { stream: Readable.from([bytes]), bytes: bytes.length } : null;
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }

  async list(folder: string, startAfter: string | null, limit: number): Promise<string[]> {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(this.#path(folder), { withFileTypes: true });
    } catch (error) {
      if (missing(error)) return [];
      throw error;
    }
    // Files only, and not a write in progress (#written's temporary names).
    return byteOrder(
      entries.filter((e) => e.isFile() && !e.name.endsWith(".tmp")).map((e) => e.name),
      startAfter,
      limit,
    );
  }
}
