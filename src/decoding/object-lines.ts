/**
 * Decoding: bytes of one activity-log object → its lines, streamed.
 *
 * gzip is detected by its magic bytes (Tableau's objects are named `.txt` either way), the
 * object is never held in memory whole, CRLF endings are accepted, and a line longer than
 * `maxLineBytes` is reported as oversize (its head kept for the dead letter) and skipped
 * without buffering the rest of it.
 */
import type { TransformOptions } from 'node:stream';
import { createGunzip, type Gunzip, type ZlibOptions } from 'node:zlib';
import { copiedOut, onlyUsed, releaseWhenCopied } from '../core/buffer-release.js';
import { readableChunks } from './readable-chunks.js';

export type LineItem =
  | { kind: 'line'; line: number; text: string }
  | { kind: 'oversize'; line: number; bytes: number; head: string };

export interface LineReaderOptions {
  /** Longest line accepted, in bytes (default 16 MiB). */
  maxLineBytes?: number;
  /** The first N lines are counted but not yielded: resume after a restart from line N + 1. */
  skipLines?: number;
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;
const OVERSIZE_HEAD_BYTES = 1024;
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Bytes the gunzip buffers on each side (Node 20's default highWaterMark, on every Node). */
const GUNZIP_HIGH_WATER_MARK = 16 * 1024;

/** The same bytes as a Buffer, without copying them (Buffer.from(view) would copy). */
function asBuffer(v: Buffer | Uint8Array): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/** Yields the object's decompressed bytes; gunzips when the first two bytes are gzip's magic. */
export async function* decompressed(source: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await it.next();
    if (next.done) {
      if (head.length > 0) yield head;
      return;
    }
    head = head.length === 0 ? asBuffer(next.value) : Buffer.concat([head, next.value]);
  }
  const rest: AsyncIterable<Buffer> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        const n = await it.next();
        return n.done ? n : { done: false, value: asBuffer(n.value) };
      },
      return: async () => {
        await it.return?.();
        return { done: true, value: undefined };
      },
    }),
  };
  if (head[0] !== GZIP_MAGIC_0 || head[1] !== GZIP_MAGIC_1) {
    yield head;
    yield* rest;
    return;
  }
  // the gunzip's buffers pinned to Node 20's 16 KiB (Node 22 raised the default highWaterMark to
  // 64 KiB): past a limit (maxObjectLines) as little more of the object is fetched and inflated on
  // every Node (zlib streams take the stream.Transform options, which ZlibOptions' type omits)
  const gunzipOptions: ZlibOptions & TransformOptions = { chunkSize: 256 * 1024, highWaterMark: GUNZIP_HIGH_WATER_MARK };
  const gunzip = createGunzip(gunzipOptions);
  void feed(gunzip, head, rest);
  // the gunzip's output buffers are its own, written to their end before it takes a new one: each
  // is freed once all its bytes were copied into the encode workers' buffers (buffer-release.ts);
  // the last one only partly, when the stream ends (for a small object, the only one)
  let last: ArrayBufferLike | null = null;
  let lastUsed = 0;
  try {
    // (what the gunzip inflated before it failed, a truncated object, is yielded first: readable-chunks.ts)
    for await (const c of readableChunks(gunzip)) {
      releaseWhenCopied(c);
      if (c.buffer !== last) {
        last = c.buffer;
        lastUsed = 0;
      }
      lastUsed = c.byteOffset + c.length;
      yield c;
    }
    if (last) onlyUsed(last, lastUsed);
  } finally {
    // (stopped early, or failed: the feed sees the gunzip destroyed and closes the source)
    if (!gunzip.destroyed) gunzip.destroy();
  }
}

/**
 * Writes an object's compressed bytes into the gunzip, waiting for it to drain; an error of the
 * source destroys the gunzip with it (so it surfaces where the output is read), and a gunzip
 * destroyed (the reader stopped, or the data was bad) stops the feed and closes the source. A
 * compressed buffer is released once the gunzip has consumed it (its write callback), so it is
 * freed at once when the source registered it (buffer-release.ts).
 *
 * The gunzip is ended only once it has inflated every chunk written: Node's zlib inflates a chunk
 * still queued when `end()` is called with Z_FINISH, and when that chunk ends a truncated object
 * the call fails ("unexpected end of file") and what it inflated is dropped, the whole lines before
 * the cut with it. Ended after the last write's callback, the Z_FINISH call has no input and fails
 * having inflated nothing, so every line the object holds before its cut is yielded.
 */
async function feed(gunzip: Gunzip, head: Buffer, rest: AsyncIterable<Buffer>): Promise<void> {
  // chunks written and not inflated yet; `inflated` is called when none is left
  let queued = 0;
  let inflated: (() => void) | undefined;
  /** Resolves when `arm`'s callback is called or the gunzip closes, whichever comes first. */
  const untilOrClosed = (arm: (done: () => void) => void, disarm: (done: () => void) => void): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        disarm(done);
        gunzip.off('close', done);
        resolve();
      };
      arm(done);
      gunzip.on('close', done);
    });
  const write = async (chunk: Buffer): Promise<void> => {
    queued++;
    const more = gunzip.write(chunk, (err) => {
      if (!err) copiedOut(chunk);
      if (--queued === 0) inflated?.();
    });
    if (more || gunzip.destroyed) return;
    await untilOrClosed(
      (done) => gunzip.on('drain', done),
      (done) => gunzip.off('drain', done),
    );
  };
  try {
    await write(head);
    for await (const chunk of rest) {
      if (gunzip.destroyed) return;
      await write(chunk);
    }
    if (queued > 0 && !gunzip.destroyed) {
      await untilOrClosed(
        (done) => (inflated = done),
        () => (inflated = undefined),
      );
    }
    if (!gunzip.destroyed) gunzip.end();
  } catch (err) {
    gunzip.destroy(err as Error);
  }
}

/**
 * Splits decompressed bytes into lines. Items are yielded in arrays (one per input chunk) so
 * that a consumer pays one await per chunk, not one per line. Line numbers are 1-based and
 * count blank lines, so a line number always points at the same place in the object.
 */
export async function* splitLines(
  bytes: AsyncIterable<Buffer>,
  options: LineReaderOptions = {},
): AsyncGenerator<LineItem[]> {
  const maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const skipBefore = options.skipLines ?? 0;
  let lineNo = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let oversize: { head: Buffer; bytes: number } | null = null;

  const emit = (out: LineItem[], buf: Buffer, start: number, end: number): void => {
    lineNo++;
    if (oversize) {
      const total = oversize.bytes + (end - start);
      if (lineNo > skipBefore) {
        out.push({ kind: 'oversize', line: lineNo, bytes: total, head: oversize.head.toString('utf8') });
      }
      oversize = null;
      return;
    }
    if (lineNo <= skipBefore) {
      pending = [];
      pendingBytes = 0;
      return;
    }
    let text: string;
    if (pendingBytes > 0) {
      pending.push(buf.subarray(start, end));
      const whole = Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      text = trimEnd(whole, 0, whole.length);
    } else {
      text = trimEnd(buf, start, end);
    }
    if (text.length === 0 || isBlank(text)) return;
    if (Buffer.byteLength(text) > maxLine) {
      out.push({ kind: 'oversize', line: lineNo, bytes: Buffer.byteLength(text), head: text.slice(0, OVERSIZE_HEAD_BYTES) });
      return;
    }
    out.push({ kind: 'line', line: lineNo, text });
  };

  for await (const chunk of bytes) {
    const out: LineItem[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      emit(out, chunk, start, nl);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const tail = chunk.subarray(start);
      if (oversize) {
        oversize.bytes += tail.length;
      } else if (pendingBytes + tail.length > maxLine + 1) {
        // (+1: the line's CR, stripped when it completes, does not count against the limit)
        const joined = Buffer.concat([...pending, tail]);
        oversize = { head: Buffer.from(joined.subarray(0, OVERSIZE_HEAD_BYTES)), bytes: joined.length };
        pending = [];
        pendingBytes = 0;
      } else {
        // copy: the chunk's memory may be reused by the stream
        pending.push(Buffer.from(tail));
        pendingBytes += tail.length;
      }
    }
    if (out.length > 0) yield out;
  }
  if (pendingBytes > 0 || oversize) {
    const out: LineItem[] = [];
    emit(out, Buffer.alloc(0), 0, 0);
    if (out.length > 0) yield out;
  }
}

function trimEnd(buf: Buffer, start: number, end: number): string {
  if (end > start && buf[end - 1] === 0x0d) end--;
  return buf.toString('utf8', start, end);
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/** Lines of one object's byte stream, gzip or not. */
export function objectLines(source: AsyncIterable<Buffer | Uint8Array>, options: LineReaderOptions = {}): AsyncGenerator<LineItem[]> {
  return splitLines(decompressed(source), options);
}
