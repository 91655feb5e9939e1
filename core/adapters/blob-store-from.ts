import type { BlobStoreConfig } from "../runtime/config.ts";
import type { BlobStore } from "../ports/blob-store.ts";
import { FsBlobStore } from "./fs/fs-blob-store.ts";
import { S3BlobStore } from "./s3/s3-blob-store.ts";

/** The one place a blob store is built from configuration: the API process and each detection thread call it. */
export function blobStoreFrom(config: BlobStoreConfig): BlobStore {
  return config.kind === "s3" ? new S3BlobStore(config) : new FsBlobStore(config.dir);
}
