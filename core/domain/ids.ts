import { hash, randomBytes, randomFillSync } from "node:crypto";

export const ID_PREFIXES = ["insp", "fnd", "evt", "med", "key", "req", "acct", "user"] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

// Random bytes are drawn from the CSPRNG in blocks: one call per id cost more than the rest of newId.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function randomByte(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** `length` characters of [a-z0-9], rejection-sampled so every character is uniform. */
export function randomLowercase(length: number): string {
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    // 252 = 7 * 36: bytes above it would bias the first characters of the alphabet.
    if (byte < 252) out += ALPHABET[byte % 36];
  }
  return out;
}

/** 24 characters of [a-z0-9] is 124 bits, above the contract's 120; lowercase so `insp-<rest>` is a valid Kubernetes name. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomLowercase(24)}`;
}

/**
 * An id that `seed` always gives (24 characters of [a-z0-9] from its SHA-256): the id of an inspection
 * created under an Idempotency-Key, so that the store of record itself refuses a second one.
 */
export function derivedId(prefix: IdPrefix, seed: string): string {
  const n = BigInt(`0x${hash("sha256", seed)}`);
  return `${prefix}_${n.toString(36).padStart(24, "0").slice(-24)}`;
}

export function isId(prefix: IdPrefix, value: string): boolean {
  return value.length === prefix.length + 25 && value.startsWith(`${prefix}_`) && /^[a-z0-9]{24}$/.test(value.slice(prefix.length + 1));
}

export type Environment = "test" | "live";

/** Secret API keys: 40 random characters of [a-z0-9] (206 bits) after the environment prefix. */
export function newApiKey(env: Environment): string {
  return `sk_${env}_${randomLowercase(40)}`;
}

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * Secrets are stored only as this hash; 256-bit random inputs need no salt or stretching. Every
 * /v1 request hashes its key: the one-shot crypto.hash skips the Hash object createHash builds.
 */
export function sha256(value: string): string {
  return hash("sha256", value, "hex");
}
