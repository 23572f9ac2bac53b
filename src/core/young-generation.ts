/**
 * The main thread's young generation capped: at 2 x 2 MB while the daemon runs one tenant, at
 * 2 x 4 MB with more (it grew to 2 x 16 MB), though Node sizes it only from the command line.
 *
 * V8 doubles a heap's young generation when much of it survives collections; the main thread's
 * grew to 2 x 16 MB early in every run and stayed there, though what it holds between
 * collections is small (it reads, routes and copies bytes): in the bench that was some 15 MB of
 * the peak RSS. Kept at its initial 2 x 1 MB it cost 20-25 % more CPU with 100 busy tenants
 * (more objects promoted, more full collections); 2 x 4 MB kept nearly all of the memory saved
 * with CPU as before. One tenant holds little across its awaits: 2 x 2 MB took 4-7 MB more off
 * the bench's peak with the same CPU, while 100 tenants peaked 40-60 MB higher with it
 * (docs/performance.md). Until the daemon knows its tenants (youngGenerationFor) the young
 * generation does not grow at all: while the modules loaded, a start-up of many collections in a
 * row doubled it twice before the first collection was observed. A young generation that has
 * grown is not made smaller again.
 *
 * How, at run time: V8 reads the growth factor flag (`--semi-space-growth-factor`, process-wide)
 * each time a heap would grow, and `v8.setFlagsFromString` may set it while running. It is 1
 * (no growth) from the start, then after every minor collection of this thread it is 2 while
 * the young generation is under the cap (0 until sized) and 1 otherwise. (Setting it again after
 * every collection also undoes Node 20's setting it back to 2 when a worker's heap is created.)
 * The workers' young generations are capped by their own `resourceLimits` and stay within them.
 * (Node 24's V8 also grows a young generation a page or so at a time, which the factor does not
 * govern: there the cap holds for the daemon's own load but can be passed by a heavier one.)
 *
 * An operator who sizes the young generation on the node command line (or in NODE_OPTIONS)
 * keeps their setting: nothing is changed then.
 */
import v8 from 'node:v8';
import { PerformanceObserver, constants } from 'node:perf_hooks';

/** Both semi-spaces together, as `v8.getHeapSpaceStatistics()` reports the young generation: one tenant. */
const ONE_TENANT_CAP_BYTES = 4 << 20;
/** The same, with more than one tenant. */
const TENANTS_CAP_BYTES = 8 << 20;

/** 0 until the daemon knows its tenants (youngGenerationFor): no growth at start-up, 2 x 1 MB. */
let capBytes = 0;

let observer: PerformanceObserver | null = null;
let growing = false;

/** Whether the operator sized the young generation themselves. */
function operatorChose(): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  // (V8 takes its flags with dashes or underscores)
  return given.some((a) => /^--(semi[-_]space[-_]growth[-_]factor|max[-_]semi[-_]space[-_]size|min[-_]semi[-_]space[-_]size)(=|$)/.test(a));
}

/** From now on the young generation stays under the cap (see above). Returns whether it does. */
export function capYoungGeneration(): boolean {
  if (observer) return true;
  if (operatorChose() || !setGrowth(false)) return false;
  try {
    observer = new PerformanceObserver((list) => {
      if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)) adjust();
    });
    observer.observe({ entryTypes: ['gc'] });
  } catch {
    observer = null;
    return false;
  }
  return true;
}

/** The cap for a configuration of `tenants` tenants (from the next minor collection on). */
export function youngGenerationFor(tenants: number): void {
  capBytes = tenants > 1 ? TENANTS_CAP_BYTES : ONE_TENANT_CAP_BYTES;
}

/** The young generation's size now (both semi-spaces), in bytes. */
function youngGenerationBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

function adjust(): void {
  const under = youngGenerationBytes() < capBytes;
  // (at the cap: set again every time, in case a new worker's heap set it back)
  if (under !== growing || !under) setGrowth(under);
}

function setGrowth(grow: boolean): boolean {
  try {
    v8.setFlagsFromString(grow ? '--semi-space-growth-factor=2' : '--semi-space-growth-factor=1');
    growing = grow;
    return true;
  } catch {
    return false;
  }
}
