/**
 * A fixed pool of encode workers (worker_threads): the main thread reads and routes bytes,
 * the workers parse, map and encode, so a 2-core machine uses both cores. With `size: 0` the
 * same ChunkProcessor runs in-process (small deployments, debugging).
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { ChunkProcessor, type ChunkResult, type ChunkTask, type ProcessorInit } from './chunk-processor.js';
import { coversItsBuffer } from './transfer.js';

interface Pending {
  task: ChunkTask;
  transfer: ArrayBuffer[];
  resolve(r: ChunkResult): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  busy: Map<number, Pending>;
}

/**
 * Heap limits of a worker: it holds at most PER_WORKER batches (a few MB each as objects), so
 * these are generous, and they keep each worker's heap from growing lazily to hundreds of MB.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 192 };

/** Tasks queued per worker before new ones wait in the pool's own queue. */
const PER_WORKER = 2;

export class EncodeWorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private readonly inline: ChunkProcessor | null;
  private nextId = 1;
  private closed = false;

  constructor(
    readonly size: number,
    private readonly init: ProcessorInit,
  ) {
    this.inline = size === 0 ? new ChunkProcessor(init) : null;
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const file = fileURLToPath(new URL('./encode-worker.js', import.meta.url));
    const worker = new Worker(file, { workerData: this.init, resourceLimits: WORKER_LIMITS });
    const slot: Slot = { worker, busy: new Map() };
    worker.on('message', (msg: { id: number; result?: ChunkResult; error?: string }) => {
      const p = slot.busy.get(msg.id);
      if (!p) return;
      slot.busy.delete(msg.id);
      if (msg.error) p.reject(new Error(msg.error));
      else p.resolve(msg.result!);
      this.pump();
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => {
      if (!this.closed) this.fail(slot, new Error(`encode worker exited with code ${code}`));
    });
    return slot;
  }

  /** A worker died: its tasks go back to the queue once (then fail), and a new worker replaces it. */
  private fail(slot: Slot, err: Error): void {
    const i = this.slots.indexOf(slot);
    if (i === -1) return;
    const orphans = [...slot.busy.values()];
    slot.busy.clear();
    void slot.worker.terminate();
    if (this.closed) {
      for (const p of orphans) p.reject(err);
      return;
    }
    this.slots[i] = this.spawn();
    for (const p of orphans) {
      // (a task whose bytes were transferred to the dead worker cannot be re-sent)
      if ((p as Pending & { retried?: boolean }).retried || p.transfer.length > 0) p.reject(err);
      else {
        (p as Pending & { retried?: boolean }).retried = true;
        this.queue.unshift(p);
      }
    }
    this.pump();
  }

  /**
   * Process a task in a worker. Segment bytes whose ArrayBuffer they own whole are transferred
   * (not copied); they come back in the result's `segments`.
   */
  run(task: ChunkTask): Promise<ChunkResult> {
    if (this.inline) {
      try {
        const result = this.inline.process(task);
        return Promise.resolve({ ...result, segments: task.segments.map((seg) => seg.bytes) });
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.closed) return Promise.reject(new Error('encode worker pool is closed'));
    return new Promise((resolve, reject) => {
      const transfer: ArrayBuffer[] = [];
      for (const seg of task.segments) {
        // a view into a larger buffer (e.g. a zlib output chunk shared with the next chunk) is
        // copied to a buffer of its own: cloning it would copy the whole buffer, moving it would
        // take it from under the other views
        if (!coversItsBuffer(seg.bytes)) seg.bytes = Uint8Array.prototype.slice.call(seg.bytes);
        if (!transfer.includes(seg.bytes.buffer as ArrayBuffer)) transfer.push(seg.bytes.buffer as ArrayBuffer);
      }
      this.queue.push({ task, transfer, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let best: Slot | undefined;
      for (const s of this.slots) if (s.busy.size < PER_WORKER && (!best || s.busy.size < best.busy.size)) best = s;
      if (!best) return;
      const p = this.queue.shift()!;
      const id = this.nextId++;
      best.busy.set(id, p);
      best.worker.postMessage({ id, task: p.task }, p.transfer);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new Error('encode worker pool closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
