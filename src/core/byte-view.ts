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
 * `src[start, end)` copied to `dst` at `at`; returns the bytes copied. Buffer#copy, also for a
 * plain Uint8Array: on Node 24 a native copy that makes no object, where `dst.set(src.subarray(…))`
 * makes a Buffer for each copy (Node 20's copy still makes a view: no worse than `subarray`).
 */
export function copyBytes(src: Uint8Array, dst: Uint8Array, at: number, start: number, end: number): number {
  return bufferCopy.call(src, dst, at, start, end);
}
