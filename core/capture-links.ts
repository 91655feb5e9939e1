import { createHmac } from "node:crypto";
import { sha256 } from "./ids.ts";

/**
 * Capture tokens are derived, not stored: HMAC(secret, inspection id). The store keeps only the
 * token's SHA-256 for lookup, yet the API can show `capture_url` again on retrieval while the link
 * is open, as clients used to hosted checkout links expect.
 */
export class CaptureLinks {
  readonly #secret: Buffer;
  readonly #base: string;

  constructor(secret: Buffer, publicUrl: string) {
    this.#secret = secret;
    this.#base = `${publicUrl}/c/`;
  }

  token(inspectionId: string): string {
    return createHmac("sha256", this.#secret).update(inspectionId).digest("base64url");
  }

  url(inspectionId: string): string {
    return this.#base + this.token(inspectionId);
  }

  static hash(token: string): string {
    return sha256(token);
  }
}
