/**
 * A full collection of a thread's heap once its work has stopped for a while (a burst of
 * batches done, a backfill finished, every tenant caught up), when that work left enough behind.
 *
 * V8 collects its old generation when it grows, not when a program goes quiet: after a burst,
 * what the burst left dead stays in the heap (and the pages with it) until the next burst grows
 * it again. With 100 tenants after a small load each, the main thread's heap held some 130 MB,
 * a tenth of it alive, for as long as they stayed idle. One collection `idleMs` after the last
 * batch gives those pages back; it takes some tens of milliseconds, once per quiet spell, and
 * none while batches keep coming.
 *
 * Only when the heap grew: a quiet spell after a little work (a daemon fed an object every few
 * seconds) is not worth a collection. In a soak at 1 000 events/s (an object every 10 s), each
 * such collection freed 0.4-1.7 MB, and it cost far more than its own time: a full collection
 * lets V8 drop the hidden classes that only the finished work's objects had, which throws away
 * the optimized code built on them, so each object's work started again in the interpreter and
 * was compiled again (about 55 optimizing compiles a minute 15-20 minutes in; 13 without these
 * collections, most of them functions compiled for the first time). Each compile's memory is
 * malloc'd and freed in its thread's arena, and those arenas grew all along. So the collection
 * runs only once the heap in use (V8's heap and the memory outside it that V8 accounts,
 * ArrayBuffers included) is `minGrowthBytes` above what it was after the last one.
 */
import v8 from 'node:v8';
import { collectGarbage } from '../core/gc-function.js';

/** How long the encode pool and its workers are quiet before they collect. */
export const IDLE_COLLECTION_MS = 5_000;
/** How much the heap in use grows after a collection before a quiet spell is worth another. */
export const IDLE_COLLECTION_MIN_GROWTH_BYTES = 8 * 1024 * 1024;
/** After this long without a collection, a quiet spell collects for less growth (STALE_MIN_GROWTH_BYTES). */
export const IDLE_COLLECTION_STALE_MS = 10 * 60_000;
export const IDLE_COLLECTION_STALE_MIN_GROWTH_BYTES = 1024 * 1024;

/** This thread's V8 heap in use plus the external memory V8 accounts (ArrayBuffers and the like). */
export function heapInUse(): number {
  const s = v8.getHeapStatistics();
  return s.used_heap_size + s.external_memory;
}

export class IdleCollection {
  private timer: NodeJS.Timeout | undefined;
  /** The heap in use after the last collection (or when this was made), or lower since (V8 collected by itself). */
  private floor: number;
  /** Collections run (for tests). */
  count = 0;
  /** Quiet spells that ended without a collection: the heap had not grown enough (for tests). */
  skipped = 0;

  /**
   * `idleMs` 0: never. `inUse` measures the heap (a parameter for tests). `onQuiet` runs at every
   * quiet spell, before the heap is measured (the main thread frees its spare read buffers and
   * drops idle regions of shared buffers); when it returns true (it let go of memory that only a
   * collection frees), the collection runs whatever the heap's growth.
   */
  constructor(
    private readonly idleMs: number,
    private readonly minGrowthBytes: number = IDLE_COLLECTION_MIN_GROWTH_BYTES,
    private readonly inUse: () => number = heapInUse,
    private readonly onQuiet?: () => boolean | void,
    private readonly staleMs: number = IDLE_COLLECTION_STALE_MS,
    private readonly staleMinGrowthBytes: number = IDLE_COLLECTION_STALE_MIN_GROWTH_BYTES,
    private readonly now: () => number = Date.now,
  ) {
    this.floor = idleMs > 0 ? inUse() : 0;
    this.lastAt = now();
  }

  /** When the last collection ran (or when this was made). */
  private lastAt: number;

  /** Work was done now: a collection is due `idleMs` after the last of it. */
  busy(): void {
    if (this.idleMs <= 0) return;
    if (this.timer) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => this.collect(), this.idleMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private collect(): void {
    this.timer = undefined;
    const released = this.onQuiet?.() === true;
    const now = this.inUse();
    const grown = now - this.floor;
    const stale = this.now() - this.lastAt >= this.staleMs;
    if (!released && grown < (stale ? this.staleMinGrowthBytes : this.minGrowthBytes)) {
      this.floor = Math.min(this.floor, now);
      this.skipped++;
      return;
    }
    // (no options: a full collection that gives the freed pages back at once; `{ type: 'major' }`
    // left a heap of 176 MB as it was, here, until the pages were given back later)
    if (collectGarbage()) this.count++;
    this.floor = this.inUse();
    this.lastAt = this.now();
  }
}
