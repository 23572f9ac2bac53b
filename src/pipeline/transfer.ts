/**
 * Which byte views may be transferred (moved, not copied) to another thread. Transferring
 * detaches the whole ArrayBuffer, so nothing else may live in it.
 */

/** A view that covers its whole ArrayBuffer (e.g. a chunk the chunker concatenated). */
export function coversItsBuffer(b: Uint8Array): boolean {
  return b.buffer instanceof ArrayBuffer && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength;
}

/**
 * A request body from an encoder: either it covers its buffer, or it starts a buffer larger than
 * Node's small-Buffer pool, which the encoder allocated for it alone (ProtoWriter.take hands the
 * rest of its buffer over with it). Small pooled Buffers are never transferred.
 */
export function payloadOwnsItsBuffer(b: Uint8Array): boolean {
  return coversItsBuffer(b) || (b.buffer instanceof ArrayBuffer && b.byteOffset === 0 && b.buffer.byteLength > Buffer.poolSize);
}
