/**
 * A young-generation collection of the main thread after every so many bytes of input were
 * copied into the shared buffers (worker-pool.ts).
 *
 * The main thread reads and decompresses objects into buffers that are dead once their bytes
 * are in a shared input buffer, but it allocates so few JavaScript objects that V8 seldom
 * collects its young generation: those dead buffers (their memory outside the JavaScript heap)
 * piled up to some 40 MB between collections and made most of a run's peak RSS. A minor
 * collection frees them; with little alive in the young generation it takes well under a
 * millisecond. It needs V8's `gc` function (core/gc-function.ts); where there is none, nothing
 * is done.
 */
import { collectGarbage } from '../core/gc-function.js';

/** Counts bytes copied and runs a minor collection after every `everyBytes` of them (0: never). */
export class MinorCollection {
  private since = 0;
  /** Collections run (for tests and the bench). */
  count = 0;

  constructor(private readonly everyBytes: number) {}

  copied(bytes: number): void {
    if (this.everyBytes <= 0) return;
    this.since += bytes;
    if (this.since < this.everyBytes) return;
    this.since = 0;
    if (collectGarbage({ type: 'minor' })) this.count++;
  }
}
