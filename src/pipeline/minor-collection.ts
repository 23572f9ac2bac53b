/**
 * A young-generation collection of the main thread after every so many bytes of input were
 * copied into the shared buffers (worker-pool.ts).
 *
 * The main thread reads and decompresses objects into buffers that are dead once their bytes
 * are in a shared input buffer, but it allocates so few JavaScript objects that V8 seldom
 * collects its young generation: those dead buffers (their memory outside the JavaScript heap)
 * piled up to some 40 MB between collections and made most of a run's peak RSS. A minor
 * collection frees them; with little alive in the young generation it takes well under a
 * millisecond. It needs V8's `gc` function, which Node only gives with `--expose-gc`: the flag
 * is set for contexts made from then on and the function taken from a new one. Where that is
 * not possible, nothing is done.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;

let gc: GcFunction | null | undefined;

function gcFunction(): GcFunction | null {
  if (gc === undefined) {
    gc = null;
    try {
      const own = (globalThis as { gc?: unknown }).gc;
      if (typeof own === 'function') gc = own as GcFunction;
      else {
        v8.setFlagsFromString('--expose-gc');
        const f = vm.runInNewContext('typeof gc === "function" ? gc : undefined') as unknown;
        if (typeof f === 'function') gc = f as GcFunction;
      }
    } catch {
      gc = null;
    }
  }
  return gc;
}

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
    const f = gcFunction();
    if (f === null) return;
    try {
      f({ type: 'minor' });
      this.count++;
    } catch {
      gc = null;
    }
  }
}
