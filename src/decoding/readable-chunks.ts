/**
 * Decoding: a readable stream's chunks, then its error, with nothing it had produced dropped.
 *
 * Why not `for await (const chunk of stream)`: Node's async iterator reads nothing more once the
 * stream is destroyed, and a stream that fails is destroyed at once. A gunzip that reaches the end
 * of a truncated object fails after it has pushed every line it could inflate; what the reader
 * had not taken yet (a slow destination holds the reader back) was dropped with it, and the
 * object was reported unreadable some hundreds of lines too early, those lines never sent.
 * `read()` still gives a failed stream's buffered bytes, so they are yielded before the error.
 */
import type { Readable } from 'node:stream';

/**
 * The chunks `stream` produces (what `read()` gives), then its error if it failed; it ends when
 * the stream ends or is destroyed without an error. Stopping early destroys the stream.
 */
export async function* readableChunks(stream: Readable): AsyncGenerator<Buffer> {
  let error: Error | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onEnd = (): void => {
    ended = true;
    notify();
  };
  const onError = (err: Error): void => {
    error ??= err;
    notify();
  };
  stream.on('readable', notify);
  stream.on('end', onEnd);
  stream.on('close', notify);
  stream.on('error', onError);
  try {
    for (;;) {
      const chunk = stream.read() as Buffer | null;
      if (chunk !== null) {
        yield chunk;
        continue;
      }
      // (a stream destroyed with an error holds it at once; the 'error' event comes a tick later)
      const failed = error ?? stream.errored;
      if (failed) throw failed;
      if (ended || stream.destroyed) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    stream.off('readable', notify);
    stream.off('end', onEnd);
    stream.off('close', notify);
    // (onError stays: a stream destroyed with an error emits it a tick later, when the error was
    // thrown here already; without a listener it would be an uncaught exception)
    // stopped early: the stream is destroyed, as Node's own iterator does
    if (!ended && !stream.destroyed) stream.destroy();
  }
}
