/**
 * Fixed-size buffers lent to encode tasks, for their input bytes and request bodies, and given
 * back when the batch is done: views of one SharedArrayBuffer per pool (its `region`).
 *
 * Why shared: moving a fresh ArrayBuffer between threads for every batch made both threads'
 * garbage collectors run full collections again and again (each thread counts a buffer it
 * receives as newly allocated external memory, and so does every new handle on a shared
 * buffer). The region is made once, each thread gets one handle on it, and a task's messages
 * carry only buffer ids, offsets and lengths. A buffer is a view, made when first needed, up to
 * `maxBuffers`; when all are lent out (or a task does not fit one) the caller falls back to
 * buffers of its own.
 *
 * Why one region: a SharedArrayBuffer's memory is zeroed by calloc. A region larger than glibc's
 * highest mmap threshold (32 MiB) always gets its own mapping, whose pages take memory only once
 * written, so a buffer costs what batches wrote into it. Separate buffers of 4 and 8 MiB came
 * from the malloc heap as soon as the threshold had risen (it follows the largest block freed),
 * and calloc then wrote zeros over all of each: with 100 tenants all 2 x 16 were made, some
 * 190 MiB resident however little of them was used.
 */
export class SharedBufferPool {
  /** The buffers made so far, by id (views of the region). */
  readonly buffers: Uint8Array[] = [];
  private readonly free: number[] = [];
  private region_: SharedArrayBuffer | undefined;

  constructor(
    readonly bufferBytes: number,
    readonly maxBuffers: number,
  ) {}

  /** The memory all the buffers are views of (reserved when the first buffer is lent). */
  get region(): SharedArrayBuffer | undefined {
    return this.region_;
  }

  /** The id of a free buffer, or -1 when none is free and no more may be made. */
  acquire(): number {
    const id = this.free.pop();
    if (id !== undefined) return id;
    if (this.buffers.length >= this.maxBuffers) return -1;
    this.region_ ??= new SharedArrayBuffer(this.bufferBytes * this.maxBuffers);
    const made = this.buffers.length;
    this.buffers.push(sharedView(this.region_, this.bufferBytes, made));
    return made;
  }

  release(id: number): void {
    this.free.push(id);
  }

  /** Buffers lent out now. */
  get inUse(): number {
    return this.buffers.length - this.free.length;
  }
}

/** Buffer `id` of a region of buffers of `bufferBytes` each (the same in every thread). */
export function sharedView(region: SharedArrayBuffer, bufferBytes: number, id: number): Uint8Array {
  return new Uint8Array(region, id * bufferBytes, bufferBytes);
}

/** Where a byte range lives in a shared buffer known to both threads. */
export interface SharedRange {
  buffer: number;
  offset: number;
  length: number;
}
