/**
 * Every thread's young generation kept at V8's initial size (1 MB semi-spaces), instead of
 * letting it grow to 16 MB (the main thread) or to its limit (a worker's).
 *
 * V8 doubles a heap's young generation when much of it survives collections; the main thread's
 * grew to 2 x 16 MB early in a run and stayed there, though what it holds between collections is
 * small (it reads, routes and copies bytes). With the growth factor at 1 the young generations
 * stay at their initial size: in the bench the peak RSS fell by some 15 MB, CPU and wall time the
 * same within the noise (docs/performance.md). The setting is a V8 flag, process-wide, read
 * each time a heap would grow, so it can be set while running (`v8.setFlagsFromString`); V8 sets
 * it back to 2 when it configures a new thread's heap (seen on Node 20), so it is set again once
 * each worker is online (`afterThreadStart`).
 *
 * An operator who gives `--semi-space-growth-factor` or a semi-space size on the node command
 * line (or in NODE_OPTIONS) keeps their setting: nothing is changed then.
 */
import v8 from 'node:v8';
import type { Worker } from 'node:worker_threads';

const FLAG = '--semi-space-growth-factor=1';
let enabled = false;

/** Whether the operator sized the young generation themselves. */
function operatorChose(): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return given.some((a) => /^--(semi-space-growth-factor|max-semi-space-size|min-semi-space-size)(=|$)/.test(a));
}

/** From now on, young generations stay at their initial size (see above). Returns whether it is on. */
export function keepYoungGenerationSmall(): boolean {
  if (!enabled && !operatorChose()) enabled = apply();
  return enabled;
}

/** A worker was started: once its heap exists, the flag is set again. */
export function afterThreadStart(worker: Worker): void {
  if (enabled) worker.once('online', apply);
}

function apply(): boolean {
  try {
    v8.setFlagsFromString(FLAG);
    return true;
  } catch {
    return false;
  }
}
