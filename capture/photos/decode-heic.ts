import { Piscina } from "piscina";

/**
 * HEIC photos (what iPhones take) decoded off the event loop. One thread, started on the first HEIC
 * and gone after a minute without one: its WebAssembly heap grows with the largest photo decoded
 * (a process's resident size went from 98 to 274 MB over two 12-megapixel ones) and never shrinks, so it
 * is not kept for a format most uploads do not use.
 */
let pool: Piscina | undefined;

export async function decodeHeic(bytes: Buffer, maxPixels: number): Promise<{ width: number; height: number; rgba: Uint8ClampedArray }> {
  pool ??= new Piscina({ filename: new URL("./heic-worker.ts", import.meta.url).href, minThreads: 0, maxThreads: 1, idleTimeout: 60_000 });
  return pool.run({ bytes, maxPixels });
}

/** HEIF's `ftyp` box naming an HEVC brand. AVIF shares the container, but sharp decodes it itself. */
export function isHeic(bytes: Buffer): boolean {
  if (bytes.length < 16 || bytes.toString("latin1", 4, 8) !== "ftyp") return false;
  const size = Math.min(bytes.readUInt32BE(0), bytes.length);
  for (let at = 8; at + 4 <= size; at += at === 8 ? 8 : 4) {
    if (["heic", "heix", "hevc", "hevx"].includes(bytes.toString("latin1", at, at + 4))) return true;
  }
  return false;
}
