import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { Readable } from "node:stream";
import { checkedBlobKey } from "../../domain/blob-keys.ts";
import type { S3Config } from "../../runtime/config.ts";
import { storeUnavailable } from "../../domain/errors.ts";
import type { BlobStore } from "../../ports/blob-store.ts";

/** Failures below HTTP: the server is down, unreachable, or went away mid-request. */
const NETWORK_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "ETIMEDOUT",
]);

/**
 * Whether S3 was out of reach (503 to the client, who retries) rather than refusing the request
 * (a wrong bucket or credentials: a 4xx from S3, an internal error here, logged as such).
 */
function unreachable(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500;
  return e.name === "TimeoutError" || NETWORK_ERROR_CODES.has(e.code ?? "");
}

/**
 * Blobs as objects in one S3 bucket (AWS, MinIO, versitygw, any S3), under the same keys the
 * directory adapter uses as paths. Credentials come from the AWS SDK's standard chain
 * (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, a pod's web identity, instance metadata).
 */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client;
  readonly #bucket: string;

  constructor(config: S3Config) {
    this.#bucket = config.bucket;
    this.#client = new S3Client({
      region: config.region,
      endpoint: config.endpoint ?? undefined,
      forcePathStyle: config.forcePathStyle,
      // Checksums only where S3 requires them: otherwise the SDK sends streamed uploads with
      // aws-chunked framing, which some S3-compatible servers store as the object's bytes.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // A server that accepts no connection fails fast (the SDK retries twice), one that stops
      // answering mid-request fails after this long idle, instead of holding an upload forever.
      requestHandler: { connectionTimeout: 2_000, requestTimeout: 30_000 },
    });
  }

  async #call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw unreachable(error) ? storeUnavailable("Photo storage", error) : error;
    }
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    const Key = checkedBlobKey(key);
    // One PutObject: S3 shows an object only once all of it is stored, so none is ever half-written.
    await this.#call(() =>
      this.#client.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key, Body: bytes, ContentType: contentType, ContentLength: bytes.length }),
      ),
    );
  }

  async create(key: string, bytes: Buffer, contentType: string): Promise<boolean> {
    const Key = checkedBlobKey(key);
    return this.#call(async () => {
      try {
        // If-None-Match: * makes S3 store it only where the key has no object (AWS since 2024, MinIO, versitygw).
        await this.#client.send(
          new PutObjectCommand({
            Bucket: this.#bucket,
            Key,
            Body: bytes,
            ContentType: contentType,
            ContentLength: bytes.length,
            IfNoneMatch: "*",
          }),
        );
        return true;
      } catch (error) {
        // 412: an object is there; 409: another conditional write of the key is under way and wins.
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 412 || status === 409) return false;
        throw error;
      }
    });
  }

  async open(key: string): Promise<{ stream: Readable; bytes: number } | null> {
    const Key = checkedBlobKey(key);
    return this.#call(async () => {
      try {
        const object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key }));
        // In Node the SDK's body is the HTTP response itself: read as it arrives, never held whole.
        return { stream: object.Body as Readable, bytes: object.ContentLength ?? 0 };
      } catch (error) {
        if ((error as Error).name === "NoSuchKey") return null;
        throw error;
      }
    });
  }

  async get(key: string): Promise<Buffer | null> {
    const Key = checkedBlobKey(key);
    return this.#call(async () => {
      try {
        const object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key }));
        const bytes = await object.Body!.transformToByteArray();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (error) {
        if ((error as Error).name === "NoSuchKey") return null;
        throw error;
      }
    });
  }

  async delete(key: string): Promise<void> {
    const Key = checkedBlobKey(key);
    // S3 answers a delete of a missing key with success, as the other adapters do.
    await this.#call(() => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key })));
  }
  async list(folder: string, startAfter: string | null, limit: number): Promise<string[]> {
    const Prefix = checkedBlobKey(folder);
    const listed = await this.#call(() =>
      this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix,
          // Only what is directly in the folder: deeper keys are rolled up under CommonPrefixes.
          Delimiter: "/",
          StartAfter: startAfter === null ? undefined : Prefix + startAfter,
          MaxKeys: limit,
        }),
      ),
    );
    return (listed.Contents ?? []).map((o) => o.Key!.slice(Prefix.length));
  }
}
