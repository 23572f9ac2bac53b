/** Waiting that a stop can cut short: the one `sleep` of the daemon. */

/** Resolves after `ms`, or as soon as `signal` aborts: true when it was aborted before the time was up. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      resolve(true);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
