/**
 * Fixed-size buffers lent to encode tasks, for their input bytes and request bodies, and given
 * back when the batch is done: views of a few SharedArrayBuffers per pool (its regions).
 *
 * Why shared: moving a fresh ArrayBuffer between threads for every batch made both threads'
 * garbage collectors run full collections again and again (each thread counts a buffer it
 * receives as newly allocated external memory, and so does every new handle on a shared
 * buffer). A region is made once, each thread gets one handle on it, and a task's messages
 * carry only buffer ids, offsets and lengths. A buffer is a view, made when first needed, up to
 * `maxBuffers`; when all are lent out (or a task does not fit one) the caller falls back to
 * buffers of its own.
 *
 * Why each region is a block of more than 64 MiB (of which its buffers use 32 at most): a
 * SharedArrayBuffer's memory is zeroed by calloc. Served from the malloc heap, a block is written
 * with zeros in full, so resident in full; served by a mapping of its own, its pages take memory
 * only once written, so a buffer costs what batches wrote into it. glibc maps a block of its
 * mmap threshold or more (at most 32 MiB) unless free memory of the heap holds it, and the heap
 * keeps up to twice that threshold free at its top. Separate buffers of 4 and 8 MiB came from the
 * heap as soon as the threshold had risen (it follows the largest block freed): with 100 tenants
 * all 2 x 16 were made, some 190 MiB resident however little of them was used. So did a region of
 * 32 MiB, after blocks of 24 and 36 MiB had been freed (test/shared-buffers.test.ts). The pages of
 * a region that no buffer uses are never written: they cost address space, not memory.
 *
 * Why more than one region: a page once written stays resident as long as its region lives
 * (nothing in Node gives a SharedArrayBuffer's pages back). A slow moment that puts more batches
 * in flight than usual writes into buffers that the usual load never lends again; in one region
 * those pages stayed for the life of the process (an hour's soak: 16 MiB of region where an
 * identical run beside it had touched 26). Buffers are lent lowest id first, so the usual load
 * lives in the first region; a later region whose buffers are all free, and have not been lent
 * for `regionIdleMs`, can be dropped (dropIdleRegions) and made again if it is needed again.
 */
import type { SharedRegion } from './encode-messages.js';

/** What the buffers of one region hold at most. */
export const REGION_BUFFER_BYTES = 32 << 20;
/** The size of a region's block: more than the malloc heap keeps free (see above). */
export const REGION_BLOCK_BYTES = (64 << 20) + (64 << 10);

export class SharedBufferPool {
  /** The buffers made so far, by id (views of their region; undefined once their region is dropped). */
  readonly buffers: Array<Uint8Array | undefined> = [];
  /** Buffers per region. */
  readonly perRegion: number;
  private readonly regions: Array<SharedArrayBuffer | undefined> = [];
  /** When a buffer of each region was last lent. */
  private readonly lastLent: number[] = [];
  private readonly lent: boolean[] = [];
  private lentCount = 0;

  constructor(
    readonly bufferBytes: number,
    readonly maxBuffers: number,
    private readonly now: () => number = Date.now,
  ) {
    this.perRegion = Math.max(1, Math.min(maxBuffers, Math.floor(REGION_BUFFER_BYTES / bufferBytes)));
  }

  /** Region `index` (made when a buffer of it is first lent), or undefined. */
  region(index: number): SharedArrayBuffer | undefined {
    return this.regions[index];
  }

  /** The region buffer `id` belongs to. */
  regionOf(id: number): number {
    return Math.floor(id / this.perRegion);
  }

  /** The id of a free buffer (the lowest), or -1 when none is free and no more may be made. */
  acquire(): number {
    let id = 0;
    while (id < this.maxBuffers && this.lent[id]) id++;
    if (id >= this.maxBuffers) return -1;
    const r = this.regionOf(id);
    let region = this.regions[r];
    if (region === undefined) {
      const count = Math.min(this.perRegion, this.maxBuffers - r * this.perRegion);
      region = this.regions[r] = new SharedArrayBuffer(Math.max(count * this.bufferBytes, REGION_BLOCK_BYTES));
    }
    this.buffers[id] ??= sharedView(region, this.bufferBytes, id % this.perRegion);
    this.lent[id] = true;
    this.lentCount++;
    this.lastLent[r] = this.now();
    return id;
  }

  release(id: number): void {
    if (!this.lent[id]) return;
    this.lent[id] = false;
    this.lentCount--;
  }

  /** Buffers lent before (their view made: a task wrote into them) and free now: lent again, they take no new memory. */
  get freeUsed(): number {
    let n = 0;
    for (let id = 0; id < this.buffers.length; id++) if (this.buffers[id] !== undefined && !this.lent[id]) n++;
    return n;
  }

  /**
   * How many buffers may be asked for without a new one being written: the used ones free, or
   * any number once every buffer there may be is lent (a caller then brings its own, given back
   * when its task is done).
   */
  get lendableWithoutNew(): number {
    const free = this.freeUsed;
    return free === 0 && this.lentCount >= this.maxBuffers ? Infinity : free;
  }

  /** Buffers lent out now. */
  get inUse(): number {
    return this.lentCount;
  }

  /** Regions alive now. */
  get regionCount(): number {
    let n = 0;
    for (const r of this.regions) if (r !== undefined) n++;
    return n;
  }

  /**
   * Drops every region but the first whose buffers are all free and were last lent at least
   * `idleMs` ago: its views are forgotten here (other threads must forget theirs), and its memory
   * goes once the collectors of every thread holding it have run. Returns their indexes.
   */
  dropIdleRegions(idleMs: number): number[] {
    const dropped: number[] = [];
    const now = this.now();
    for (let r = 1; r < this.regions.length; r++) {
      if (this.regions[r] === undefined || now - this.lastLent[r]! < idleMs) continue;
      const first = r * this.perRegion;
      const end = Math.min(first + this.perRegion, this.maxBuffers);
      let busy = false;
      for (let id = first; id < end; id++) if (this.lent[id]) busy = true;
      if (busy) continue;
      for (let id = first; id < end; id++) this.buffers[id] = undefined;
      this.regions[r] = undefined;
      dropped.push(r);
    }
    return dropped;
  }
}

/** Another thread's side of a pool: the regions it was handed (by index), and the views it made of them (by buffer id). */
export class SharedRegionViews {
  private readonly regions = new Map<number, SharedRegion>();
  private readonly views = new Map<number, Uint8Array>();
  private perRegion = 1;

  add(regions: SharedRegion[]): void {
    for (const r of regions) {
      this.regions.set(r.index, r);
      this.perRegion = r.perRegion;
    }
  }

  /** Forgets the regions and their views (the pool dropped them). */
  drop(indexes: number[]): void {
    for (const index of indexes) {
      this.regions.delete(index);
      for (const id of [...this.views.keys()]) if (Math.floor(id / this.perRegion) === index) this.views.delete(id);
    }
  }

  buffer(id: number): Uint8Array {
    let view = this.views.get(id);
    if (!view) {
      const region = this.regions.get(Math.floor(id / this.perRegion));
      if (!region) throw new Error(`encode worker: shared buffer ${id} before its region`);
      view = sharedView(region.region, region.bufferBytes, id % region.perRegion);
      this.views.set(id, view);
    }
    return view;
  }
}
/** Buffer `index` of a region of buffers of `bufferBytes` each (the same in every thread). */
export function sharedView(region: SharedArrayBuffer, bufferBytes: number, index: number): Uint8Array {
  return new Uint8Array(region, index * bufferBytes, bufferBytes);
}

/** Where a byte range lives in a shared buffer known to both threads. */
export interface SharedRange {
  buffer: number;
  offset: number;
  length: number;
}
