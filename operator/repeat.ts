/**
 * Runs `pass` now and then every `everyMs` after each pass ends (never two at once), until stopped;
 * a pass that fails is reported and the next runs as planned. What the operator's loops share.
 */
export function repeat(pass: () => Promise<void>, everyMs: number, onError: (error: unknown) => void): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  let stopped = false;
  const loop = () => {
    running = pass()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, everyMs);
      });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
