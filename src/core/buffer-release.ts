/**
 * Read buffers whose memory is given back as soon as every byte of them has been copied
 * elsewhere, instead of when the garbage collector gets to them.
 *
 * The main thread reads a file (or inflates an object) into fresh buffers, cuts them into line
 * chunks (views of those buffers) and copies the chunks into the encode workers' shared input
 * buffers. From then on the read buffers are garbage, but their memory lives outside the
 * JavaScript heap and goes back only when V8 collects the small object that owns it; one that
 * lived through two young-generation collections is freed only by a full collection, and
 * between full collections some 30 MB of them piled up in the malloc heap
 * (docs/performance.md).
 *
 * A buffer is registered by whoever allocated it (`releaseWhenCopied`: the directory source's
 * reads, the gunzip's output). Each view of it copied out is counted once (`copiedOut`: the
 * encode pool); when the views copied cover the whole buffer, the buffer is detached, so its
 * memory is freed at once (Node 22 and later: `ArrayBuffer.prototype.transfer`) or handed to a
 * new, young buffer that the next minor collection frees (Node 20: `structuredClone` with
 * transfer). A buffer some of whose bytes are never copied (lines skipped on resume, an
 * oversize line, the unfinished last line of a growing file, bytes past an object's limit) is
 * simply left to the collector, as before.
 *
 * Only buffers registered here are ever detached, and only once the views counted add up to
 * exactly their length: a view counted twice is ignored, and a count past the length disables
 * the buffer's release.
 */

/** Bytes of each registered buffer not yet copied out. */
const remaining = new WeakMap<ArrayBuffer, number>();
/** Views already counted (so a view copied twice is counted once). */
const counted = new WeakSet<Uint8Array>();

type Transferable = ArrayBuffer & { transfer?: (length?: number) => ArrayBuffer };

/** Buffers detached so far (for tests and the bench). */
export const bufferReleaseStats = { released: 0 };

/**
 * `view`'s whole ArrayBuffer may be freed once every byte of it was copied out. Call it only for
 * buffers this code allocated and no one else holds views of (not pooled, not shared).
 */
export function releaseWhenCopied(view: Uint8Array): void {
  const ab = view.buffer;
  if (!(ab instanceof ArrayBuffer) || ab.byteLength === 0 || remaining.has(ab)) return;
  remaining.set(ab, ab.byteLength);
}

/**
 * No view of `ab` beyond its first `used` bytes will be handed on (the gunzip's last output
 * buffer, written only partly when the stream ended): only those are waited for.
 */
export function onlyUsed(ab: ArrayBufferLike, used: number): void {
  settle(ab as ArrayBuffer, ab.byteLength - used);
}

/** The bytes of `view` were copied elsewhere; frees its buffer once all of them were. */
export function copiedOut(view: Uint8Array): void {
  const ab = view.buffer as ArrayBuffer;
  if (view.byteLength === 0 || !remaining.has(ab) || counted.has(view)) return;
  counted.add(view);
  settle(ab, view.byteLength);
}

/** `bytes` more of `ab` are no longer waited for: it is freed once none are left (a count past its length disables that). */
function settle(ab: ArrayBuffer, bytes: number): void {
  const left = remaining.get(ab);
  if (left === undefined) return;
  const now = left - bytes;
  if (now > 0) {
    remaining.set(ab, now);
    return;
  }
  remaining.delete(ab);
  if (now === 0) detach(ab);
}

function detach(ab: Transferable): void {
  try {
    if (typeof ab.transfer === 'function') ab.transfer(0);
    else structuredClone(ab, { transfer: [ab] });
    bufferReleaseStats.released++;
  } catch {
    // (not transferable: left to the collector)
  }
}
