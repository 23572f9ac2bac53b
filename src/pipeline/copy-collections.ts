/**
 * The main thread's garbage collections paced by the bytes of input copied into the shared
 * buffers (worker-pool.ts): a young-generation collection after every few MiB, a full one after
 * every few tens of MiB (more when the heap is large).
 *
 * The main thread reads and decompresses objects into buffers that are dead once their bytes
 * are in a shared input buffer, but it allocates so few JavaScript objects that V8 seldom
 * collects its young generation: those dead buffers (their memory outside the JavaScript heap)
 * piled up to some 40 MB between collections and made most of a run's peak RSS. A minor
 * collection frees them; with little alive in the young generation it takes well under a
 * millisecond.
 *
 * What lives through two minor collections moves to the old generation, which V8 collects only
 * when that has grown by half again, and in a backlog the main thread seldom gets there: the
 * gunzips and slabs of Node's buffer pool (64 KiB each on Node 24) of the objects read, each
 * object's reading state, settled promises. On Node 24 the bench corpus's peak RSS grew by some
 * 5 MiB of them (docs/performance.md). A full collection after every `majorEveryBytes` copied,
 * or `majorHeapMultiple` times the heap left after the last one when that is more (its cost
 * follows the heap: so does the interval), frees them: some 20 ms of the main thread per 64 MiB
 * of input on the bench's tenant. The pool (worker-pool.ts) runs it where Node's buffer pool
 * takes 64 KiB slabs (Node 24); on Node 20 (8 KiB slabs) it freed nothing the peak shows.
 * Each one runs, even where the heap and the buffers grew little since the last: skipping those
 * took 0.13 CPU-seconds off a run of the plain bench corpus (a few milliseconds a minute in a
 * daemon), but what they give back is not in V8's heap figures, and in a soak beside the build
 * that runs them the daemon held 3-7 MB more after its bursts (the same build's soaks vary about
 * as much: the cost could not be bounded; docs/performance-rounds.md, round 35).
 *
 * Both need V8's `gc` function (core/gc-function.ts); where there is none, nothing is done.
 */
import v8 from 'node:v8';
import { collectGarbage } from '../core/gc-function.js';

export interface CopyCollectionsOptions {
  /** A minor collection after every so many bytes (0: none). */
  minorEveryBytes: number;
  /** A full collection after at least so many bytes (0: none). */
  majorEveryBytes: number;
  /** ...and at least this many times the heap used after the last one (default 4). */
  majorHeapMultiple?: number;
  /** The heap in use (default V8's `used_heap_size`); for tests. */
  usedHeapBytes?: () => number;
}

/** Counts bytes copied and runs the collections after every so many of them. */
export class CopyCollections {
  private sinceMinor = 0;
  private sinceMajor = 0;
  /** Bytes after which the next full collection is run. */
  private nextMajor: number;
  private readonly multiple: number;
  private readonly usedHeapBytes: () => number;
  /** Collections run (for tests and the bench). */
  minors = 0;
  majors = 0;

  constructor(private readonly options: CopyCollectionsOptions) {
    this.nextMajor = options.majorEveryBytes;
    this.multiple = options.majorHeapMultiple ?? 4;
    this.usedHeapBytes = options.usedHeapBytes ?? (() => v8.getHeapStatistics().used_heap_size);
  }

  copied(bytes: number): void {
    const { minorEveryBytes, majorEveryBytes } = this.options;
    if (majorEveryBytes > 0) {
      this.sinceMajor += bytes;
      if (this.sinceMajor >= this.nextMajor) {
        this.sinceMajor = 0;
        this.sinceMinor = 0;
        if (collectGarbage()) this.majors++;
        this.nextMajor = Math.max(majorEveryBytes, this.multiple * this.usedHeapBytes());
        return;
      }
    }
    if (minorEveryBytes <= 0) return;
    this.sinceMinor += bytes;
    if (this.sinceMinor < minorEveryBytes) return;
    this.sinceMinor = 0;
    if (collectGarbage({ type: 'minor' })) this.minors++;
  }
}
