/**
 * Fixed-size SharedArrayBuffers lent to encode tasks, for their input bytes and request bodies,
 * and given back when the batch is done.
 *
 * Why: moving a fresh ArrayBuffer between threads for every batch made both threads' garbage
 * collectors run full collections again and again (each thread counts a buffer it receives as
 * newly allocated external memory, and so does every new handle on a shared buffer). These
 * buffers are allocated once, each thread is handed each buffer once (by id), and a task's
 * messages carry only ids, offsets and lengths. Buffers are created lazily, up to `maxBuffers`;
 * when all are lent out (or a task does not fit) the caller falls back to buffers of its own.
 */
export class SharedBufferPool {
  /** Every buffer created, by id. */
  readonly buffers: Uint8Array[] = [];
  private readonly free: number[] = [];

  constructor(
    readonly bufferBytes: number,
    readonly maxBuffers: number,
  ) {}

  /** The id of a free buffer, or -1 when none is free and no more may be created. */
  acquire(): number {
    const id = this.free.pop();
    if (id !== undefined) return id;
    if (this.buffers.length >= this.maxBuffers) return -1;
    this.buffers.push(new Uint8Array(new SharedArrayBuffer(this.bufferBytes)));
    return this.buffers.length - 1;
  }

  release(id: number): void {
    this.free.push(id);
  }

  /** Buffers lent out now. */
  get inUse(): number {
    return this.buffers.length - this.free.length;
  }
}

/** Where a byte range lives in a shared buffer known to both threads. */
export interface SharedRange {
  buffer: number;
  offset: number;
  length: number;
}
