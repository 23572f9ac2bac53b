/**
 * A local file's bytes as a stream of buffers sized to what is read: the directory source's
 * reader.
 *
 * fs.createReadStream allocates a `highWaterMark`-sized buffer for every read, copies a short
 * read into a second buffer, and allocates once more for the read that finds the end. For the
 * many small objects of an Activity Log that was about four times each file's size in fresh
 * buffers; each one counts towards V8's external memory, and on the main thread that memory
 * is what started most garbage collections. Here the reads up to the size seen at listing
 * are exact (one buffer per read, kept whole); past it, a file that is still being written is
 * read on in `probeBytes` buffers until a read finds nothing (that read's buffer is lent to the
 * next such read: every gzip object ends with one).
 */
import type { Stats } from 'node:fs';
import { openFile, type OpenFile, type SyncCalls } from './open-file.js';
import { probeBuffer, probeFoundNothing, readBuffer, releaseWhenCopied, READ_BUFFER_BYTES } from '../../core/buffer-release.js';

export interface FileChunksOptions {
  /** The file's size when it was listed: read in exact buffers up to here. */
  expectedSize: number;
  /** Where to start reading (a resume by byte offset); default 0. */
  start?: number;
  /**
   * Largest single read (default 256 KiB, `READ_BUFFER_BYTES`: whole reads of that size reuse
   * the buffers of reads already copied out (buffer-release.ts); the gunzip's output buffers
   * are that size too, so the malloc heap reuses the space a freed one leaves; with 1 MiB reads
   * it grew by some 17 MB more in a run of the bench corpus).
   */
  maxReadBytes?: number;
  /** Buffer size for reads past `expectedSize` (default 64 KiB). */
  probeBytes?: number;
  signal?: AbortSignal | undefined;
  /**
   * The inode listed: when the path names another file or none by the time it is opened
   * (rotated in between), nothing is read and `onEnd(null)` is called.
   */
  ino?: number;
  /**
   * The file is finished: its end is taken to be the size listed, without a read past it to
   * confirm it (one file operation fewer per file; bytes it has past that size are read from
   * there at the next listing, which sees the larger size).
   */
  endAtExpectedSize?: boolean;
  /** Called once the end of the file is reached, with the position of that end (the bytes it then had). */
  onEnd?: (endPosition: number | null) => void;
  /**
   * Called with the opened file's status and the first bytes read (from `start`), before they
   * are yielded: the directory source names a file it had not looked at before by these, so the
   * file is opened once, not once for its identity and again for its bytes. Its answer replaces
   * `endAtExpectedSize` (a gzip file is read to its end). Not called when nothing is read.
   */
  onFirstBytes?: (st: Stats, bytes: Buffer) => { endAtExpectedSize: boolean };
  /**
   * The file is on device `dev`: when `calls` allows it, the file is read with synchronous
   * calls, the event loop let to turn between them once they have held it for a slice.
   */
  sync?: SyncCalls;
}

export async function* fileChunks(path: string, options: FileChunksOptions): AsyncGenerator<Buffer> {
  const maxRead = options.maxReadBytes ?? READ_BUFFER_BYTES;
  const probe = options.probeBytes ?? 64 * 1024;
  const signal = options.signal;
  signal?.throwIfAborted();
  // a file on a local filesystem: synchronous calls (local-sync-calls.ts)
  const sync = options.sync;
  let file: OpenFile;
  try {
    file = await openFile(path, sync);
  } catch (err) {
    if (options.ino === undefined || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    options.onEnd?.(null);
    return;
  }
  try {
    const st = options.ino !== undefined || options.onFirstBytes ? await file.stat() : undefined;
    if (options.ino !== undefined && st!.ino !== options.ino) {
      options.onEnd?.(null);
      return;
    }
    let endAtExpectedSize = options.endAtExpectedSize === true;
    let first = options.onFirstBytes;
    let pos = options.start ?? 0;
    for (;;) {
      const remaining = options.expectedSize - pos;
      if (remaining <= 0 && endAtExpectedSize) {
        options.onEnd?.(pos);
        return;
      }
      const probing = remaining <= 0;
      const want = probing ? probe : Math.min(remaining, maxRead);
      const buf = probing ? probeBuffer(want) : readBuffer(want);
      const bytesRead = await file.read(buf, pos);
      // (nothing of it handed on: the next probe takes it, see buffer-release.ts)
      if (bytesRead === 0 && probing) probeFoundNothing(buf);
      signal?.throwIfAborted();
      if (bytesRead === 0) {
        options.onEnd?.(pos);
        return;
      }
      pos += bytesRead;
      if (first) {
        endAtExpectedSize = first(st!, buf.subarray(0, bytesRead)).endAtExpectedSize;
        first = undefined;
      }
      // a short read (the file shrank, or is at its end past the listing) keeps only what was read;
      // a whole one is freed as soon as its bytes are in the encode workers' buffers (buffer-release.ts)
      if (bytesRead === want) {
        releaseWhenCopied(buf);
        yield buf;
      } else yield buf.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}
