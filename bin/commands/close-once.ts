/** A close() that runs its steps once, however often it is called (a signal and a caller may both ask). */
export function closeOnce(steps: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= steps());
}
