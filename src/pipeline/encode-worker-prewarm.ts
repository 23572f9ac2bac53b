/**
 * Encode workers started before the configuration is read: a worker loads its modules (a
 * quarter of a second here) while the main thread loads its own, instead of after. The pool
 * adopts them (takePrewarmedWorker) and hands each its setup in a message; those not adopted
 * are stopped when the pool has been created (releasePrewarmedWorkers). Kept free of heavy
 * imports: it runs before anything else is loaded.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { availableCores } from '../core/available-cores.js';

/**
 * Heap limits of a worker: it holds at most a couple of batches (a few MB each as objects), so
 * these are generous, and they keep each worker's heap from growing lazily to hundreds of MB.
 * The young generation is small: what a task allocates dies with the task, and 4 MB instead of
 * 16 took 10-13 MB off the peak RSS of the bench with no CPU time this machine could measure.
 */
export const WORKER_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 192 };

export const ENCODE_WORKER_FILE = fileURLToPath(new URL('./encode-worker.js', import.meta.url));

/**
 * The default number of encode workers: one core is left to the main thread (reading, sending).
 * The cores are those the process may use (a container's CPU limit counts: available-cores.ts).
 */
export function defaultEncodeWorkers(cores: number = availableCores()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

const prewarmed: Worker[] = [];

export function prewarmEncodeWorkers(count: number): void {
  for (let i = 0; i < count; i++) {
    const worker = new Worker(ENCODE_WORKER_FILE, { resourceLimits: WORKER_LIMITS });
    // not adopted yet: it must not keep the process alive, and a failure just drops it
    worker.unref();
    worker.on('error', () => drop(worker));
    worker.on('exit', () => drop(worker));
    prewarmed.push(worker);
  }
}

function drop(worker: Worker): void {
  const i = prewarmed.indexOf(worker);
  if (i !== -1) prewarmed.splice(i, 1);
}

/** A started worker waiting for its setup message, if any is left. */
export function takePrewarmedWorker(): Worker | undefined {
  const worker = prewarmed.shift();
  if (!worker) return undefined;
  worker.removeAllListeners('error');
  worker.removeAllListeners('exit');
  worker.ref();
  return worker;
}

/** Stops the started workers nobody adopted. */
export function releasePrewarmedWorkers(): void {
  for (const worker of prewarmed.splice(0)) void worker.terminate();
}
