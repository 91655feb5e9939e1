/** Time is injected wherever behaviour depends on it, so tests can move it. */
export type Clock = { now(): number };

export const systemClock: Clock = { now: () => Date.now() };

/** Unix ms → the contract's `YYYY-MM-DDTHH:MM:SSZ` (whole seconds, UTC). */
export function formatTimestamp(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null;
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}
