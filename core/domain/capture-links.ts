import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
import { LRUCache } from "lru-cache";
import { sha256 } from "./ids.ts";

/**
 * Capture tokens are derived, not stored: HMAC(secret, inspection id). The store keeps only the
 * token's SHA-256 for lookup, yet the API can show `capture_url` again on retrieval while the link
 * is open, as clients used to hosted checkout links expect.
 */
export class CaptureLinks {
  readonly #secret: KeyObject;
  readonly #base: string;
  /** Every retrieval and list item shows capture_url: recent tokens are kept rather than re-derived. */
  readonly #recent = new LRUCache<string, string>({ max: 50_000 });

  constructor(secret: Buffer, publicUrl: string) {
    this.#secret = createSecretKey(secret);
    this.#base = `${publicUrl}/c/`;
  }

  token(inspectionId: string): string {
    let token = this.#recent.get(inspectionId);
    if (token === undefined) {
      token = createHmac("sha256", this.#secret).update(inspectionId).digest("base64url");
      this.#recent.set(inspectionId, token);
    }
    return token;
  }

  url(inspectionId: string): string {
    return this.#base + this.token(inspectionId);
  }

  /** The link and its token, as the inspection object shows them. */
  link(inspectionId: string): { url: string; token: string } {
    const token = this.token(inspectionId);
    return { url: this.#base + token, token };
  }

  static hash(token: string): string {
    return sha256(token);
  }
}
