/**
 * A full collection of a thread's heap once its work has stopped for a while (a burst of
 * batches done, a backfill finished, every tenant caught up).
 *
 * V8 collects its old generation when it grows, not when a program goes quiet: after a burst,
 * what the burst left dead stays in the heap (and the pages with it) until the next burst grows
 * it again. With 100 tenants after a small load each, the main thread's heap held some 130 MB,
 * a tenth of it alive, for as long as they stayed idle. One collection `idleMs` after the last
 * batch gives those pages back; it takes some tens of milliseconds, once per quiet spell, and
 * none while batches keep coming.
 */
import { collectGarbage } from '../core/gc-function.js';

/** How long the encode pool and its workers are quiet before they collect. */
export const IDLE_COLLECTION_MS = 5_000;

export class IdleCollection {
  private timer: NodeJS.Timeout | undefined;
  /** Collections run (for tests). */
  count = 0;

  /** `idleMs` 0: never. */
  constructor(private readonly idleMs: number) {}

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
    // (no options: a full collection that gives the freed pages back at once; `{ type: 'major' }`
    // left a heap of 176 MB as it was, here, until the pages were given back later)
    if (collectGarbage()) this.count++;
  }
}
