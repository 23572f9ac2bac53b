/**
 * Views of bytes: where a view lies, and where to copy one so that the copy is fast.
 *
 * V8 copies into or out of a SharedArrayBuffer (the encode workers' input and output buffers)
 * word by word only when the source and the destination are as far from an 8-byte boundary as
 * each other; otherwise byte by byte, several times slower: on the bench machine 2 MB took
 * 1.05 ms against 0.16 (docs/performance.md). A copy placed with {@link alignedLike} is the fast
 * one (the buffers' own memory starts on such a boundary).
 */

/** Whether the bytes `view` covers lie within those `buf` covers (the same memory, not a copy). */
export function isViewWithin(view: Uint8Array, buf: Uint8Array): boolean {
  return view.buffer === buf.buffer && view.byteOffset >= buf.byteOffset && view.byteOffset + view.length <= buf.byteOffset + buf.length;
}

/** Bytes a copy may be moved on by {@link alignedLike}, at most. */
export const ALIGNMENT_SLACK = 7;

/** The first offset from `at` in `dst` that is as far from an 8-byte boundary as `src` starts. */
export function alignedLike(at: number, dst: Uint8Array, src: Uint8Array): number {
  return at + ((src.byteOffset - dst.byteOffset - at) & 7);
}

const bufferCopy = Buffer.prototype.copy;

/**
 * Whether Buffer#copy is taken to be a native copy that makes no object: measured on Node 24,
 * assumed from Node 22 on (where it would not be, copyBytes only costs what Buffer#copy did).
 * Node 20's makes a Uint8Array view of the source's range and calls TypedArray#set: an object for
 * every value copied, 95 MB a pass over the bench corpus in the encode worker.
 */
export const NATIVE_BUFFER_COPY = Number(process.versions.node.split('.')[0]) >= 22;

/** Copies up to this many bytes go four bytes a step in JavaScript where Buffer#copy is not native. */
const WORD_COPY_MAX = 512;

/**
 * DataViews of the last two buffers seen (sources: a line and a body's buffer; targets: the
 * request's and the body's): a view is made only when a third buffer comes.
 */
class LastTwoViews {
  private readonly bytes: Array<Uint8Array | undefined> = [undefined, undefined];
  private readonly views: DataView[] = [];
  private next = 0;

  of(bytes: Uint8Array): DataView {
    if (this.bytes[0] === bytes) return this.views[0]!;
    if (this.bytes[1] === bytes) return this.views[1]!;
    const k = this.next;
    this.next = 1 - k;
    this.bytes[k] = bytes;
    return (this.views[k] = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
}

const sourceViews = new LastTwoViews();
const targetViews = new LastTwoViews();

/**
 * `src[start, end)` copied to `dst` at `at` (room there is the caller's to make); returns the
 * bytes copied. Buffer#copy, also for a plain Uint8Array, where it is native (Node 24: nothing
 * made, where `dst.set(src.subarray(…))` makes a Buffer each time); on Node 20, up to
 * WORD_COPY_MAX bytes four at a step through DataViews kept of the last buffers (no object
 * made: 90-125 ns for 100-200 bytes against 110-170 for its copy), longer ones by its copy.
 */
export function copyBytes(src: Uint8Array, dst: Uint8Array, at: number, start: number, end: number): number {
  if (NATIVE_BUFFER_COPY || end - start > WORD_COPY_MAX) return bufferCopy.call(src, dst, at, start, end);
  return copyByWords(src, dst, at, start, end);
}

/** copyBytes() in JavaScript, four bytes a step (Node 20's way; exported for the tests, which run on every runtime). */
export function copyByWords(src: Uint8Array, dst: Uint8Array, at: number, start: number, end: number): number {
  const n = end - start;
  let i = start;
  if (n >= 8) {
    const from = sourceViews.of(src);
    const to = targetViews.of(dst);
    for (; i + 4 <= end; i += 4, at += 4) to.setInt32(at, from.getInt32(i, true), true);
  }
  for (; i < end; i++) dst[at++] = src[i]!;
  return n;
}
