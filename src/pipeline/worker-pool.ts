/**
 * A fixed pool of encode workers (worker_threads): the main thread reads and routes bytes,
 * the workers parse, map and encode, so a 2-core machine uses both cores. With `size: 0` the
 * same ChunkProcessor runs in-process (small deployments, debugging).
 */
import { ALIGNMENT_SLACK, alignedLike } from '../core/byte-view.js';
import { Worker } from 'node:worker_threads';
import { ENCODE_WORKER_FILE, WORKER_LIMITS, releasePrewarmedWorkers, takePrewarmedWorker } from './encode-worker-prewarm.js';
import { ChunkProcessor, type ChunkResult, type ChunkTask, type ProcessorInit, type PublishedReference } from './chunk-processor.js';
import { SharedBufferPool, type SharedRange } from './shared-buffers.js';
import { CopyCollections } from './copy-collections.js';
import { IdleCollection, IDLE_COLLECTION_MS } from './idle-collection.js';
import { copiedOut, dropSpareReadBuffers } from '../core/buffer-release.js';

/**
 * A minor collection after every this many bytes copied into the shared buffers: 4 MiB took
 * about 25 MB off the bench corpus's peak RSS on Node 20 (10 MB on Node 24), CPU and wall time
 * the same (docs/performance.md); smaller gave no more.
 */
const MINOR_COLLECTION_BYTES = 4 << 20;
/**
 * ...and a full one after every 64 MiB (at least; copy-collections.ts), where Node's buffer pool
 * takes slabs larger than Node 20's 8 KiB (Node 24: 64 KiB): there it took 6 MiB off the bench
 * corpus's peak; on Node 20 it freed nothing the peak shows and cost 0.09 CPU-seconds
 * (docs/performance.md).
 */
const MAJOR_COLLECTION_BYTES = Buffer.poolSize > 8 * 1024 ? 64 << 20 : 0;
import type { BuffersMessage, DropBuffersMessage, HeapQuery, HeapReply, InitMessage, ReferenceMessage, ResultMessage, SharedRegion, SharedRegionCounts, TaskMessage, WorkerHeap, WorkerHeaps } from './encode-messages.js';
import type { ReferenceData, ReferenceDataSink } from '../mapping/reference-data.js';
import { buildReferenceTable } from '../mapping/reference-table-builder.js';

/**
 * A task failed while being processed: the processor threw (outside its per-line guard), or the
 * worker running it died (e.g. out of memory). The runner splits such a batch to find the lines
 * at fault (source-runner.ts). `segments` are the task's bytes, still valid (copies of their own).
 */
export class ChunkProcessingError extends Error {
  constructor(
    message: string,
    readonly segments: Uint8Array[],
    /** The worker died (rather than reporting an error). */
    readonly crashed: boolean,
  ) {
    super(message);
    this.name = 'ChunkProcessingError';
  }
}

interface Pending {
  task: ChunkTask;
  /** Segment bytes in a shared input buffer (same order as the segments), when they are. */
  input?: SharedRange[];
  /** Shared output buffer lent to the task, or -1. */
  output: number;
  /** Sent again once already, after its worker died with another task in it. */
  retried?: boolean;
  resolve(r: ChunkResult): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  busy: Map<number, Pending>;
  /** Heap queries asked and not answered yet, by id. */
  heapQueries: Map<number, (heap: WorkerHeap) => void>;
  /** The regions of shared buffers this worker has been handed (by index; once each while they live). */
  inputRegions: Set<number>;
  outputRegions: Set<number>;
}


/** Tasks queued per worker before new ones wait in the pool's own queue. */
const PER_WORKER = 2;

/**
 * Shared buffers for task input (a batch is about `maxBatchBytes`, 2 MB by default) and request
 * bodies (OTLP protobuf of such a batch is about 1.6 times its NDJSON). Up to 16 of each are
 * lent at once (batches in flight hold theirs until delivered); more, or larger, fall back to
 * moving buffers of their own.
 */
const INPUT_BUFFER_BYTES = 4 << 20;
const OUTPUT_BUFFER_BYTES = 8 << 20;
const MAX_SHARED_BUFFERS = 16;
/** A region of shared buffers that no batch used for this long is dropped at the next quiet spell (its pages given back). */
export const REGION_IDLE_MS = 60_000;

export interface EncodePoolOptions {
  /** How long the pool is quiet before it collects (IDLE_COLLECTION_MS; tests). */
  idleMs?: number;
  /** REGION_IDLE_MS (tests). */
  regionIdleMs?: number;
  /** The clock the shared buffers' regions are timed by (tests). */
  now?: () => number;
}
const EMPTY = new Uint8Array(0);

export class EncodeWorkerPool implements ReferenceDataSink {
  private readonly slots: Slot[] = [];
  /** Each tenant's reference data as published (a loaded table is one SharedArrayBuffer all workers read). */
  private readonly references = new Map<string, PublishedReference>();
  private readonly queue: Pending[] = [];
  /** Callers of whenReady() waiting until a worker can take a task at once. */
  private readonly readyWaiters: Array<() => void> = [];
  /** Callers woken by whenReady() that have not handed their task on yet (each was promised a place). */
  private promised = 0;
  /** A look at the waiters again once those woken have had their turn (setImmediate). */
  private recheck: NodeJS.Immediate | undefined;
  private readonly inline: ChunkProcessor | null;
  private nextId = 1;
  private closed = false;
  private readonly inputs: SharedBufferPool;
  /** The input copied into the shared buffers is garbage in this thread: collected every so often (copy-collections.ts). */
  private readonly collections = new CopyCollections({ minorEveryBytes: MINOR_COLLECTION_BYTES, majorEveryBytes: MAJOR_COLLECTION_BYTES });
  /** What the batches left dead is collected once they stop for a while (idle-collection.ts), and the spare read buffers freed. */
  readonly idleCollection: IdleCollection;
  private readonly outputs: SharedBufferPool;

  constructor(
    readonly size: number,
    private readonly init: ProcessorInit,
    options: EncodePoolOptions = {},
  ) {
    this.inputs = new SharedBufferPool(INPUT_BUFFER_BYTES, MAX_SHARED_BUFFERS, options.now);
    this.outputs = new SharedBufferPool(OUTPUT_BUFFER_BYTES, MAX_SHARED_BUFFERS, options.now);
    const regionIdleMs = options.regionIdleMs ?? REGION_IDLE_MS;
    this.idleCollection = new IdleCollection(options.idleMs ?? IDLE_COLLECTION_MS, undefined, undefined, () => {
      dropSpareReadBuffers();
      return this.dropIdleRegions(regionIdleMs);
    });
    this.inline = size === 0 ? new ChunkProcessor(init) : null;
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
    releasePrewarmedWorkers();
  }

  private spawn(): Slot {
    // a worker started early (encode-worker-prewarm.ts) gets its setup now; else a new one
    const prewarmed = takePrewarmedWorker();
    const worker = prewarmed ?? new Worker(ENCODE_WORKER_FILE, { workerData: this.init, resourceLimits: WORKER_LIMITS });
    if (prewarmed) {
      const setup: InitMessage = { kind: 'init', init: this.init };
      prewarmed.postMessage(setup);
    }
    // a worker started later (a replacement) reads the current reference data too
    for (const [tenant, data] of this.references) {
      const msg: ReferenceMessage = { kind: 'reference', tenant, data };
      worker.postMessage(msg);
    }
    const slot: Slot = { worker, busy: new Map(), heapQueries: new Map(), inputRegions: new Set(), outputRegions: new Set() };
    worker.on('message', (msg: ResultMessage | HeapReply) => {
      if ('kind' in msg) {
        slot.heapQueries.get(msg.id)?.(msg.heap);
        slot.heapQueries.delete(msg.id);
        return;
      }
      const p = slot.busy.get(msg.id);
      if (!p) return;
      slot.busy.delete(msg.id);
      if (msg.error !== undefined || !msg.result) p.reject(processingError(p.task, msg.error ?? 'encode worker: empty result', false));
      else {
        // bodies placed in the shared output buffer come back as ranges: views of our own handle on it
        const payloads = msg.result.payloads.map((ps) => ps.map((x) => (x instanceof Uint8Array ? x : this.outputs.buffers[x.buffer]!.subarray(x.offset, x.offset + x.length))));
        p.resolve({ ...msg.result, payloads, segments: msg.result.segments ?? p.task.segments.map((seg) => seg.bytes) });
      }
      this.pump();
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => {
      if (!this.closed) this.fail(slot, new Error(`encode worker exited with code ${code}`));
    });
    return slot;
  }

  /**
   * A worker died (e.g. out of memory): a new one replaces it. A task it was running alone
   * fails (a ChunkProcessingError: the runner splits its batch to find the lines that kill
   * workers); tasks it was running together go back to the queue once (one of them may be
   * innocent), then fail the same way.
   */
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
      if (p.retried || orphans.length === 1) p.reject(processingError(p.task, err.message, true));
      else {
        p.retried = true;
        this.queue.unshift(p);
      }
    }
    this.pump();
  }

  /**
   * Process a task in a worker. The segments are copied into a shared input buffer and the
   * bodies come back in a shared output buffer when the pool has them free; otherwise segment
   * bytes are copied into a shared buffer of their own (never moved: a task whose worker dies is
   * retried with them) and bodies come in buffers of their own. Call the result's `release()`
   * when the batch is done with: the shared buffers go back to the pool (until then the result's
   * payloads and segments stay valid). A task that fails while processed rejects with a
   * ChunkProcessingError.
   */
  run(task: ChunkTask): Promise<ChunkResult> {
    if (this.promised > 0) this.promised--;
    this.idleCollection.busy();
    let total = 0;
    for (const seg of task.segments) {
      if (seg.parts) for (const p of seg.parts) total += p.length;
      else total += seg.bytes.length;
    }
    const output = this.outputs.acquire();
    let input = -1;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.idleCollection.busy();
      if (output >= 0) this.outputs.release(output);
      if (input >= 0) this.inputs.release(input);
      // (a caller may queue behind a busy worker again: used buffers are free)
      if (output >= 0 || input >= 0) this.wakeReadyWaiters();
    };
    if (this.inline) {
      joinParts(task);
      try {
        const result = this.inline.process(output >= 0 ? { ...task, output: this.outputs.buffers[output]! } : task);
        return Promise.resolve({ ...result, segments: task.segments.map((seg) => seg.bytes), release });
      } catch (err) {
        release();
        return Promise.reject(processingError(task, describeError(err), false));
      }
    }
    if (this.closed) {
      release();
      return Promise.reject(new Error('encode worker pool is closed'));
    }
    if (total + ALIGNMENT_SLACK * task.segments.length <= INPUT_BUFFER_BYTES) input = this.inputs.acquire();
    let ranges: SharedRange[] | undefined;
    try {
      ranges = this.copyIn(task, input);
    } catch (err) {
      release();
      return Promise.reject(new Error(`encode pool: ${(err as Error).message}`));
    }
    if (ranges) this.collections.copied(total);
    return new Promise<ChunkResult>((resolve, reject) => {
      this.queue.push({ task, ...(ranges ? { input: ranges } : {}), output, resolve, reject });
      this.pump();
    }).then(
      (result) => ({ ...result, release }),
      (err: unknown) => {
        // (a ChunkProcessingError holds copies of the bytes: the shared buffers can go back)
        release();
        throw err;
      },
    );
  }

  /**
   * The task's bytes into the shared input buffer `input` (its ranges returned), or, with -1,
   * into shared buffers of their own (not moved: should the worker die, they are still here to
   * retry with). Then the read buffers the parts came from may be freed (buffer-release.ts). A
   * segment copied short of the reader's chunk (a read buffer freed too early would do that)
   * throws instead of losing lines silently: the batch is not delivered, its objects are read
   * again.
   */
  private copyIn(task: ChunkTask, input: number): SharedRange[] | undefined {
    let ranges: SharedRange[] | undefined;
    const parts = task.segments.map((seg) => seg.parts);
    if (input >= 0) {
      const buf = this.inputs.buffers[input]!;
      ranges = [];
      let at = 0;
      for (const seg of task.segments) {
        // (a whole read buffer in the parts keeps the alignment the first part starts with: see byte-view.ts)
        at = alignedLike(at, buf, seg.parts ? seg.parts[0]! : seg.bytes);
        const from = at;
        if (seg.parts) {
          for (const p of seg.parts) {
            buf.set(p, at);
            at += p.length;
          }
          delete seg.parts;
        } else {
          buf.set(seg.bytes, at);
          at += seg.bytes.length;
        }
        seg.bytes = buf.subarray(from, at);
        ranges.push({ buffer: input, offset: from, length: at - from });
      }
    } else {
      joinParts(task);
      for (const seg of task.segments) {
        const shared = new Uint8Array(new SharedArrayBuffer(seg.bytes.length));
        shared.set(seg.bytes);
        seg.bytes = shared;
      }
    }
    task.segments.forEach((seg, i) => {
      if (seg.partsBytes !== undefined && seg.bytes.length !== seg.partsBytes) {
        throw new Error(`a chunk of ${seg.partsBytes} bytes was copied as ${seg.bytes.length} (line ${seg.firstLine} on)`);
      }
      for (const p of parts[i] ?? []) copiedOut(p);
    });
    return ranges;
  }

  /**
   * Resolves once a task would go to a worker at once (a worker holds fewer than `PER_WORKER`,
   * none waits in the pool's own queue, and the place is not promised to a caller woken before):
   * the batch dispatcher waits for it before handing a batch on (and hands it on at once after),
   * so the reader runs ahead of the workers by what they hold, not by every in-flight slot. (A worker holding two tasks always has the next one at hand; batches waiting beyond
   * that held a shared input and output buffer each for nothing: with a near destination the
   * in-flight batches were nearly all waiting for the workers.)
   *
   * A task queued behind a busy worker (its second place) must find a shared input and output
   * buffer that a task used before free: a page of a shared buffer, once written, stays resident
   * for the life of its region, so new buffers are taken only for a worker that would otherwise
   * wait. The buffers in use grow to what the destination's answers need (each step costs a
   * worker one wait of a hand-over), not to what one slow moment put in flight.
   */
  whenReady(): Promise<void> {
    if (this.inline || this.closed) return Promise.resolve();
    // (behind those already waiting, if any: they are woken first)
    if (this.readyWaiters.length === 0 && this.freePlaces() > 0) {
      this.promise(1);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /**
   * Tasks the workers could take at once, less those promised to callers already woken: one for
   * each idle worker, and a place behind a busy one for each pair of used shared buffers free
   * beyond what the idle ones take (they take the lowest free, which are the used ones). Once
   * every shared buffer of a kind is lent, a task brings its own of that kind, which goes when
   * the task is done: that takes no place away.
   */
  private freePlaces(): number {
    if (this.queue.length > 0) return 0;
    let idle = 0;
    let behind = 0;
    for (const s of this.slots) {
      if (s.busy.size === 0) idle++;
      behind += Math.max(0, PER_WORKER - Math.max(1, s.busy.size));
    }
    const used = Math.min(this.inputs.lendableWithoutNew, this.outputs.lendableWithoutNew);
    return idle + Math.min(behind, Math.max(0, used - idle)) - this.promised;
  }

  /**
   * Wakes as many whenReady() callers as the workers have places for, not all of them: with
   * many tenants on one pool, waking every waiter put a batch of each tenant in the queue at
   * once, each holding a shared input and output buffer (all 16 of each were created, about
   * 190 MB, resident once touched) while the workers worked through them two at a time.
   */
  private wakeReadyWaiters(): void {
    if (this.readyWaiters.length === 0) return;
    if (this.closed) {
      for (const resolve of this.readyWaiters.splice(0)) resolve();
      return;
    }
    const free = this.freePlaces();
    if (free <= 0) return;
    const woken = this.readyWaiters.splice(0, free);
    this.promise(woken.length);
    for (const resolve of woken) resolve();
  }

  /**
   * `n` callers were told a worker has a place: each hands its task on in the continuation of
   * its await (a microtask). One that hands nothing on (its tenant stopped meanwhile) would keep
   * its place promised for ever: once every woken caller has had its turn, the promises lapse
   * and the waiters are looked at again.
   */
  private promise(n: number): void {
    this.promised += n;
    this.recheck ??= setImmediate(() => {
      this.recheck = undefined;
      this.promised = 0;
      this.wakeReadyWaiters();
    });
  }

  private pump(): void {
    this.pumpQueue();
    this.wakeReadyWaiters();
  }

  private pumpQueue(): void {
    while (this.queue.length > 0) {
      let best: Slot | undefined;
      for (const s of this.slots) if (s.busy.size < PER_WORKER && (!best || s.busy.size < best.busy.size)) best = s;
      if (!best) return;
      const p = this.queue.shift()!;
      const id = this.nextId++;
      best.busy.set(id, p);
      // hand the worker the regions of shared buffers it has not been handed yet (once per worker and region)
      const add: BuffersMessage = { kind: 'buffers', inputs: [], outputs: [] };
      for (const r of p.input ?? []) handOver(this.inputs, this.inputs.regionOf(r.buffer), best.inputRegions, add.inputs);
      if (p.output >= 0) handOver(this.outputs, this.outputs.regionOf(p.output), best.outputRegions, add.outputs);
      if (add.inputs.length > 0 || add.outputs.length > 0) best.worker.postMessage(add);
      const msg: TaskMessage = {
        kind: 'task',
        id,
        // shared segments travel as ranges, not as views (a view would be a new handle on the buffer)
        task: p.input ? { ...p.task, segments: p.task.segments.map((seg) => ({ ...seg, bytes: EMPTY })) } : p.task,
        ...(p.input ? { input: p.input } : {}),
        output: p.output,
      };
      best.worker.postMessage(msg);
    }
  }

  /**
   * A tenant's reference data (users, sites) for the tasks that start after this call: a loaded
   * copy is built into one compact table in a SharedArrayBuffer that every worker reads in place
   * (mapping/reference-table.ts); `undefined` withdraws it (the pool and the workers keep no
   * reference to the table: its memory is freed). A tenant this pool was not set up for is ignored.
   */
  publishReferenceData(tenantId: string, data: ReferenceData | undefined): void {
    if (this.closed || !this.init.tenants.some((t) => t.id === tenantId)) return;
    const published: PublishedReference | undefined =
      data === undefined ? undefined : data.status === 'pending' ? { status: 'pending' } : { status: 'loaded', buffer: buildReferenceTable(data) };
    if (published) this.references.set(tenantId, published);
    else this.references.delete(tenantId);
    this.inline?.setReference(tenantId, published);
    const msg: ReferenceMessage = { kind: 'reference', tenant: tenantId, ...(published ? { data: published } : {}) };
    for (const s of this.slots) s.worker.postMessage(msg);
  }

  /** Bytes of reference tables the pool holds now (shared by its workers). */
  get referenceBytes(): number {
    let n = 0;
    for (const r of this.references.values()) if (r.status === 'loaded') n += r.buffer.byteLength;
    return n;
  }

  /** Tasks waiting in the pool's own queue, and tasks the workers hold (for tests and the bench). */
  get tasks(): { queued: number; running: number } {
    let running = 0;
    for (const s of this.slots) running += s.busy.size;
    return { queued: this.queue.length, running };
  }

  /**
   * Each worker's V8 heap, by worker index: asked now, answered between tasks; a worker that does
   * not answer within `timeoutMs` (a long task, a replacement starting) is left out.
   */
  async workerHeaps(timeoutMs = 1000): Promise<WorkerHeaps> {
    const answers = await Promise.all(
      this.slots.map(
        (slot, worker) =>
          new Promise<WorkerHeaps[number] | undefined>((resolve) => {
            const id = this.nextId++;
            const timer = setTimeout(() => {
              slot.heapQueries.delete(id);
              resolve(undefined);
            }, timeoutMs);
            timer.unref();
            slot.heapQueries.set(id, (heap) => {
              clearTimeout(timer);
              resolve({ worker, heap });
            });
            const query: HeapQuery = { kind: 'heap', id };
            slot.worker.postMessage(query);
          }),
      ),
    );
    return answers.filter((a) => a !== undefined);
  }

  /**
   * Drops the regions of shared buffers that no batch used for `idleMs` (shared-buffers.ts) and
   * tells the workers holding them to forget them. True when one was dropped: the caller collects
   * this thread's heap, which lets their memory go.
   */
  private dropIdleRegions(idleMs: number): boolean {
    const inputs = this.inputs.dropIdleRegions(idleMs);
    const outputs = this.outputs.dropIdleRegions(idleMs);
    if (inputs.length === 0 && outputs.length === 0) return false;
    for (const slot of this.slots) {
      const told: DropBuffersMessage = { kind: 'drop-buffers', inputs: inputs.filter((r) => slot.inputRegions.delete(r)), outputs: outputs.filter((r) => slot.outputRegions.delete(r)) };
      if (told.inputs.length > 0 || told.outputs.length > 0) slot.worker.postMessage(told);
    }
    return true;
  }

  /** Regions of shared buffers alive now (input, output). */
  get sharedRegions(): SharedRegionCounts {
    return { inputs: this.inputs.regionCount, outputs: this.outputs.regionCount };
  }

  /** Shared buffers lent at least once (input, output): what their pages may hold resident. */
  get sharedBuffersUsed(): { inputs: number; outputs: number } {
    return { inputs: this.inputs.inUse + this.inputs.freeUsed, outputs: this.outputs.inUse + this.outputs.freeUsed };
  }

  /** Shared buffers lent out now (input, output): back to 0 once every result is released. */
  get sharedBuffersInUse(): { inputs: number; outputs: number } {
    return { inputs: this.inputs.inUse, outputs: this.outputs.inUse };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.idleCollection.stop();
    if (this.recheck) clearImmediate(this.recheck);
    this.recheck = undefined;
    this.wakeReadyWaiters();
    this.references.clear();
    for (const p of this.queue.splice(0)) p.reject(new Error('encode worker pool closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

/** Adds region `index` of `pool` to `message` unless the worker was handed it already (`handed`). */
function handOver(pool: SharedBufferPool, index: number, handed: Set<number>, message: SharedRegion[]): void {
  if (handed.has(index)) return;
  const region = pool.region(index);
  if (!region) throw new Error(`encode pool: shared buffer region ${index} is not there`);
  handed.add(index);
  message.push({ region, index, perRegion: pool.perRegion, bufferBytes: pool.bufferBytes });
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The failure of a task, with copies of its bytes (they may live in a shared buffer that is about to be lent again). */
function processingError(task: ChunkTask, message: string, crashed: boolean): ChunkProcessingError {
  return new ChunkProcessingError(
    message,
    task.segments.map((seg) => (seg.parts ? Buffer.concat(seg.parts) : Uint8Array.prototype.slice.call(seg.bytes))),
    crashed,
  );
}

/** Segments given as parts get their bytes joined into one buffer (in-process, or not in a shared buffer). */
function joinParts(task: ChunkTask): void {
  for (const seg of task.segments) {
    if (!seg.parts) continue;
    seg.bytes = seg.parts.length === 1 ? seg.parts[0]! : Buffer.concat(seg.parts);
    delete seg.parts;
  }
}
