/**
 * When the next delivery attempt of an event is due. `attemptsMade` counts the attempts since the
 * schedule began (1 after the first): at the event's creation, or at its last resend, which gives
 * a fresh schedule while the attempts' numbering goes on. The schedule lists the waits before
 * attempts 2, 3, …. Null means the attempts are used up and the event is marked failed.
 */
export function nextAttemptAt(
  now: number,
  attemptsMade: number,
  scheduleMs: readonly number[],
  random: () => number = Math.random,
): number | null {
  const wait = scheduleMs[attemptsMade - 1];
  if (wait === undefined) return null;
  // ±10% jitter spreads retries of many events that failed together (svix does the same).
  const jitter = wait * 0.1 * (random() * 2 - 1);
  return now + Math.round(wait + jitter);
}

export const maxAttempts = (scheduleMs: readonly number[]): number => scheduleMs.length + 1;
