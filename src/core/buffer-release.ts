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
 *
 * Read buffers of the usual size (`READ_BUFFER_BYTES`) made by {@link readBuffer} are kept for
 * the next read instead of freed, a few at a time: detaching moves their memory into a new
 * ArrayBuffer that only this module holds (every view of the old one reads as empty, as when
 * freed). On this machine (a Firecracker VM) the first write to a page costs some 10 µs, so a
 * 256 KiB buffer freed and allocated again cost 0.7 ms whenever malloc had given its pages back;
 * on the bench's plain corpus that was 8 000 of the run's 29 000 page faults, 0.1 CPU-seconds of
 * system time (docs/performance.md). The spares are freed when the encode pool goes quiet
 * ({@link dropSpareReadBuffers}).
 */

/** Bytes of each registered buffer not yet copied out. */
const remaining = new WeakMap<ArrayBuffer, number>();
/** Views already counted (so a view copied twice is counted once). */
const counted = new WeakSet<Uint8Array>();

type Transferable = ArrayBuffer & { transfer?: (length?: number) => ArrayBuffer };

/** Buffers detached so far, reads served by a spare buffer, probes served by the spare probe buffer (for tests and the bench). */
export const bufferReleaseStats = { released: 0, reused: 0, probesReused: 0 };

/** The size of the read buffers that are kept for the next read (the directory source's whole reads). */
export const READ_BUFFER_BYTES = 256 * 1024;
/** At most this many spare read buffers are kept (2 MiB). */
export const MAX_SPARE_READ_BUFFERS = 8;
/** Spare read buffers: memory of buffers whose bytes were all copied out, for the next read. */
const spares: ArrayBuffer[] = [];
/** Buffers made by `readBuffer` at the usual size: only these become spares. */
const recyclable = new WeakSet<ArrayBuffer>();

/**
 * A buffer of `bytes` to read into: a spare one when `bytes` is the usual size and one is kept,
 * else a new one. Register it with {@link releaseWhenCopied} before handing its bytes on, as any
 * read buffer; a buffer not registered is left to the collector.
 */
export function readBuffer(bytes: number): Buffer {
  if (bytes !== READ_BUFFER_BYTES) return Buffer.allocUnsafeSlow(bytes);
  const spare = spares.pop();
  if (spare) bufferReleaseStats.reused++;
  const buf = spare ? Buffer.from(spare) : Buffer.allocUnsafeSlow(bytes);
  recyclable.add(buf.buffer as ArrayBuffer);
  return buf;
}

/**
 * The buffer of a read past the size listed that found nothing (the usual end of a file read to
 * its end, as every gzip object is): no view of it was handed on, so the next such read takes it
 * instead of allocating one that would only wait for the collector. At most one is kept.
 */
let spareProbe: Buffer | undefined;

/** A buffer of `bytes` for a read past the size listed: the spare one when it is that size. */
export function probeBuffer(bytes: number): Buffer {
  const spare = spareProbe;
  if (spare !== undefined && spare.length === bytes) {
    spareProbe = undefined;
    bufferReleaseStats.probesReused++;
    return spare;
  }
  return Buffer.allocUnsafeSlow(bytes);
}

/** `buf` (from {@link probeBuffer}) read nothing and no view of it was handed on: kept for the next probe. */
export function probeFoundNothing(buf: Buffer): void {
  spareProbe = buf;
}

/** Spare read buffers kept now. */
export function spareReadBuffers(): number {
  return spares.length;
}

/** Frees the spare read buffers (a quiet spell: nothing is being read). */
export function dropSpareReadBuffers(): void {
  for (const ab of spares.splice(0)) free(ab);
  spareProbe = undefined;
}

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
    if (recyclable.has(ab) && spares.length < MAX_SPARE_READ_BUFFERS) spares.push(moved(ab));
    else free(ab);
    bufferReleaseStats.released++;
  } catch {
    // (not transferable: left to the collector)
  }
}

/** `ab`'s memory in a new ArrayBuffer; `ab` and its views are detached. */
function moved(ab: Transferable): ArrayBuffer {
  return typeof ab.transfer === 'function' ? ab.transfer() : structuredClone(ab, { transfer: [ab] });
}

/** Detaches `ab`, its memory freed at once (Node 22 and later) or at the next minor collection (Node 20). */
function free(ab: Transferable): void {
  if (typeof ab.transfer === 'function') ab.transfer(0);
  else structuredClone(ab, { transfer: [ab] });
}
