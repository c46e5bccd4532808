/**
 * A sleep that an AbortSignal ends early, for waits that must stop when their client
 * goes away (a Cloudq GET watching for its queue to be made, an lmstfy consume of names
 * that can hold no job). Nothing to wait for (ms ≤ 0, or already aborted) resolves at once.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
