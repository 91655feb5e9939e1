/** Photos, evidence and reports as bytes under a key (local directory embedded, S3 in a cluster). */
export interface BlobStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** Null when there is no such blob. */
  get(key: string): Promise<Buffer | null>;
  delete(key: string): Promise<void>;
}
