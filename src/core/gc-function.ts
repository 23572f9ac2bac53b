/**
 * V8's `gc` function, which Node gives only with `--expose-gc`: the flag is set for contexts
 * made from then on and the function taken from a new one (in the thread that asks). Null where
 * that is not possible; collectGarbage then does nothing.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

export type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;

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

/** Runs a collection (`options` as V8's `gc` takes them); false where there is no `gc` or it threw (then it is not tried again). */
export function collectGarbage(options?: Parameters<GcFunction>[0]): boolean {
  const f = gcFunction();
  if (f === null) return false;
  try {
    // (no argument at all, not `undefined`: V8 reads any argument as options, and Node 24's then
    // runs a collection that keeps the freed pages)
    if (options) f(options);
    else f();
    return true;
  } catch {
    gc = null;
    return false;
  }
}
