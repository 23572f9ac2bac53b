/**
 * V8's `gc` function, which Node gives only with `--expose-gc`: the flag is set for contexts
 * made from then on and the function taken from a new one (in the thread that asks). Null where
 * that is not possible; the callers then do nothing.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

export type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;

let gc: GcFunction | null | undefined;

export function gcFunction(): GcFunction | null {
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

/** The function threw: not used again. */
export function forgetGcFunction(): void {
  gc = null;
}
