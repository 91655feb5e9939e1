import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createShareToken, isShareLinkDays, verifyShareToken } from "../../dashboard/auth/share-links.ts";

const key = randomBytes(32);
const NOW = Date.parse("2026-11-23T12:00:00Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const ID = "insp_abcdefghijklmnopqrstuvwx";

/** The token's two halves, and a token made of others. */
const split = (token: string) => [token.slice(0, -22), token.slice(-22)] as const;
/** A payload as createShareToken lays it out: expiry in Unix seconds, 4 bytes, then the id. */
const payloadOf = (id: string, expiresAt: number) => {
  const bytes = Buffer.alloc(4 + id.length);
  bytes.writeUInt32BE(expiresAt / 1000, 0);
  bytes.write(id, 4, "latin1");
  return bytes.toString("base64url");
};
/** Flips one character of `text` at `i` to another of the base64url alphabet. */
const flip = (text: string, i: number) => text.slice(0, i) + (text[i] === "A" ? "B" : "A") + text.slice(i + 1);

describe("share link tokens", () => {
  it("a fresh token is valid for its inspection until its expiry, and not at it", () => {
    const made = createShareToken(key, ID, NOW, 7);
    expect(made.expiresAt).toBe(NOW + 7 * DAY_MS);
    // Of URL-safe characters only, and short enough for one path segment of Fastify's router (100).
    expect(made.token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(made.token.length).toBeLessThanOrEqual(100);
    expect(verifyShareToken(key, made.token, NOW)).toEqual({ ok: true, inspectionId: ID, expiresAt: NOW + 7 * DAY_MS });
    expect(verifyShareToken(key, made.token, made.expiresAt - 1).ok).toBe(true);
    expect(verifyShareToken(key, made.token, made.expiresAt)).toEqual({ ok: false, reason: "expired" });
  });

  it("each lifetime on offer sets its own expiry", () => {
    for (const days of [1, 30] as const) {
      const made = createShareToken(key, ID, NOW, days);
      expect(verifyShareToken(key, made.token, NOW + days * DAY_MS - 1)).toMatchObject({ ok: true, expiresAt: NOW + days * DAY_MS });
      expect(verifyShareToken(key, made.token, NOW + days * DAY_MS)).toEqual({ ok: false, reason: "expired" });
    }
    expect([1, 7, 30].map(isShareLinkDays)).toEqual([true, true, true]);
    expect([0, 2, 31, 365].map(isShareLinkDays)).toEqual([false, false, false, false]);
  });

  it("an expired token is expired, long after too", () => {
    const { token } = createShareToken(key, ID, NOW - 31 * DAY_MS, 30);
    expect(verifyShareToken(key, token, NOW)).toEqual({ ok: false, reason: "expired" });
  });

  it("a token whose inspection id or expiry was changed is invalid", () => {
    const { token, expiresAt } = createShareToken(key, ID, NOW, 1);
    const [, signature] = split(token);
    const otherId = payloadOf("insp_zzzzzzzzzzzzzzzzzzzzzzzz", expiresAt) + signature;
    expect(verifyShareToken(key, otherId, NOW)).toEqual({ ok: false, reason: "invalid" });
    // Lengthening its life is tampering too, not a later expiry.
    const longer = payloadOf(ID, expiresAt + 365 * DAY_MS) + signature;
    expect(verifyShareToken(key, longer, NOW + 2 * DAY_MS)).toEqual({ ok: false, reason: "invalid" });
  });

  it("a token whose signature was changed, anywhere, is invalid", () => {
    const { token } = createShareToken(key, ID, NOW, 7);
    const [payload, signature] = split(token);
    for (const i of [0, 20, signature.length - 1]) {
      expect(verifyShareToken(key, payload + flip(signature, i), NOW), `character ${i}`).toEqual({ ok: false, reason: "invalid" });
    }
    expect(verifyShareToken(key, payload + signature.slice(1), NOW)).toEqual({ ok: false, reason: "invalid" });
    expect(verifyShareToken(key, payload, NOW)).toEqual({ ok: false, reason: "invalid" });
    expect(verifyShareToken(key, "", NOW)).toEqual({ ok: false, reason: "invalid" });
  });

  it("a token signed with another key is invalid, even well formed and unexpired", () => {
    const { token } = createShareToken(randomBytes(32), ID, NOW, 7);
    expect(verifyShareToken(key, token, NOW)).toEqual({ ok: false, reason: "invalid" });
  });

  it("a correctly signed token whose payload is not an inspection's is invalid", () => {
    const sign = (payload: string) => payload + createHmac("sha256", key).update(payload).digest().subarray(0, 16).toString("base64url");
    const later = NOW + DAY_MS;
    const shortOne = Buffer.alloc(4);
    shortOne.writeUInt32BE(later / 1000);
    for (const [what, payload] of [
      ["no id", shortOne.toString("base64url")],
      ["not an inspection id", payloadOf("key_abcdefghijklmnopqrstuvwx", later)],
      ["an id in capitals", payloadOf(ID.toUpperCase(), later)],
      ["an id with a byte past ASCII", payloadOf(`${ID}\u00e9`, later)],
    ] as const) {
      expect(verifyShareToken(key, sign(payload), NOW), what).toEqual({ ok: false, reason: "invalid" });
    }
    // The same signing, with a well-formed payload, passes: the refusals above are for the shape.
    expect(verifyShareToken(key, sign(payloadOf(ID, NOW + DAY_MS)), NOW)).toMatchObject({ ok: true, inspectionId: ID });
  });
});
