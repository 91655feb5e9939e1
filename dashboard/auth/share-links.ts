import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Read-only report links (/r/<token>) are stateless: the token carries the inspection id and the
 * expiry, signed with HMAC-SHA256 under a key of their own (Services.signingKeys.shareLinks). Nothing
 * is stored, so a link cannot be revoked before it expires; that is why links are short-lived and
 * only of completed inspections, whose report never changes.
 */

/** The lifetimes a user may choose, in days; a week unless they choose otherwise. */
export const SHARE_LINK_DAYS = [1, 7, 30] as const;
export type ShareLinkDays = (typeof SHARE_LINK_DAYS)[number];
export const DEFAULT_SHARE_LINK_DAYS: ShareLinkDays = 7;
export const isShareLinkDays = (days: number): days is ShareLinkDays => (SHARE_LINK_DAYS as readonly number[]).includes(days);

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * HMAC-SHA256 truncated to its first 128 bits (RFC 2104 §5 allows down to half the output), 22
 * base64url characters: the whole token must fit in one path segment of Fastify's router, 100
 * characters at most (its maxParamLength), and 128 bits are still out of reach of guessing.
 */
const MAC_BYTES = 16;
const MAC_CHARS = 22;
/**
 * The payload's base64url, then the signature's, found by its length. No separator: a token of
 * URL-safe characters only is found whole by anything that picks a link out of text (mail clients,
 * chat, a person's double-click).
 */
const TOKEN = new RegExp(`^([A-Za-z0-9_-]{8,80})([A-Za-z0-9_-]{${MAC_CHARS}})$`);
/** An inspection id as core/domain/ids.ts makes them (`insp_` and lowercase letters and digits). */
const INSPECTION_ID = /^insp_[a-z0-9]{1,59}$/;

export type ShareToken = { inspectionId: string; expiresAt: number };
export type ShareTokenCheck = ({ ok: true } & ShareToken) | { ok: false; reason: "invalid" | "expired" };

const mac = (key: Buffer, payload: string) =>
  createHmac("sha256", key).update(payload).digest().subarray(0, MAC_BYTES).toString("base64url");

/**
 * A token for `inspectionId` that works until `now` plus `days` (to the second). The payload is
 * binary, to keep the URL short: the expiry in Unix seconds (4 bytes, big-endian), then the id.
 */
export function createShareToken(key: Buffer, inspectionId: string, now: number, days: ShareLinkDays): ShareToken & { token: string } {
  if (!INSPECTION_ID.test(inspectionId)) throw new Error(`not an inspection id: ${inspectionId}`);
  const expiresS = Math.floor((now + days * DAY_MS) / 1000);
  const bytes = Buffer.alloc(4 + inspectionId.length);
  bytes.writeUInt32BE(expiresS, 0);
  bytes.write(inspectionId, 4, "ascii");
  const payload = bytes.toString("base64url");
  return { token: payload + mac(key, payload), inspectionId, expiresAt: expiresS * 1000 };
}

/**
 * What a token grants, if its signature is this key's and it has not expired. The signature is
 * checked first, in constant time, so "expired" is said only of tokens this service made.
 */
export function verifyShareToken(key: Buffer, token: string, now: number): ShareTokenCheck {
  const parts = TOKEN.exec(token);
  if (!parts) return { ok: false, reason: "invalid" };
  const [, payload, signature] = parts as unknown as [string, string, string];
  // Compared as text, not as decoded bytes: decoding ignores the last character's spare bits, so
  // several spellings of one signature would pass. TOKEN fixed the length, as timingSafeEqual needs.
  if (!timingSafeEqual(Buffer.from(signature), Buffer.from(mac(key, payload)))) return { ok: false, reason: "invalid" };
  const bytes = Buffer.from(payload, "base64url");
  const inspectionId = bytes.subarray(4).toString("latin1");
  if (bytes.length < 5 || !INSPECTION_ID.test(inspectionId)) return { ok: false, reason: "invalid" };
  const expiresAt = bytes.readUInt32BE(0) * 1000;
  if (expiresAt <= now) return { ok: false, reason: "expired" };
  return { ok: true, inspectionId, expiresAt };
}
