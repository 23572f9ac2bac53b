/**
 * Runs one source of one tenant through the whole path:
 *
 *   source → bytes (gunzip by magic bytes) → line-aligned chunks            (main thread)
 *          → lines → JSON.parse → mapping → encoded request bodies          (encode workers)
 *          → every destination (retries, backoff)                           (main thread)
 *          → checkpoint: each object's progress moves past acknowledged lines only, in order
 *
 * Memory is bounded by `maxInFlightBatches` × (`maxBatchBytes` + its encodings), whatever the
 * object size or destination speed: when that many batches are unacknowledged, reading waits.
 * A crash re-sends at most the batches that were in flight (their records keep their
 * `log.record.uid`, so destinations can drop the duplicates).
 */
import type { Source, SourceObject } from '../sources/source.js';
import { uidPrefixFor } from '../sources/source.js';
import type { Destination } from '../export/destination.js';
import { encodingKey, type EncodingSpec } from '../export/encodings.js';
import { deliver, sleep, type DeliveryResult, type RetryPolicy } from '../export/delivery.js';
import { decompressed } from '../decoding/object-lines.js';
import { objectChunks, lastLineOf, type ObjectChunk } from '../decoding/object-chunks.js';
import { parseObjectKey, type ObjectKeyInfo } from '../decoding/object-key.js';
import type { CheckpointStore, ObjectProgress, SourceCheckpoint } from './checkpoint-store.js';
import type { DeadLetter, DeadLetteredRecord, DeadLetterStore } from './dead-letter-store.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { EncodeWorkerPool } from './worker-pool.js';
import type { ChunkResult, ChunkSegment } from './chunk-processor.js';
import { runSplittingOnFailure } from './batch-splitting.js';
import type { Logger } from '../daemon/logger.js';
import type { DaemonMetrics } from '../daemon/metrics.js';

export interface PipelineSettings {
  /** Most lines in one batch (one export request per destination, before size splits). */
  batchSize: number;
  /** Most raw bytes in one batch. */
  maxBatchBytes: number;
  maxInFlightBatches: number;
  maxLineBytes: number;
  /** Decompressed bytes one object may have; the rest is dead-lettered (bounds a decompression bomb). */
  maxObjectBytes: number;
  /** Lines (blank ones included) one object may have; the rest is dead-lettered. */
  maxObjectLines: number;
  /** Attempts to read one object (transient read errors) before its rest is dead-lettered. */
  objectReadAttempts: number;
  retry: RetryPolicy;
  /** Minimum milliseconds between two checkpoint writes; 0 writes after every acknowledgement (a crash then re-sends only in-flight batches). */
  checkpointIntervalMs: number;
}

export const DEFAULT_PIPELINE_SETTINGS: PipelineSettings = {
  batchSize: 1000,
  maxBatchBytes: 2 * 1024 * 1024,
  maxInFlightBatches: 8,
  maxLineBytes: 16 * 1024 * 1024,
  maxObjectBytes: 16 * 1024 ** 3,
  maxObjectLines: 50_000_000,
  objectReadAttempts: 3,
  retry: { initialDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: Infinity },
  checkpointIntervalMs: 0,
};

export interface TenantContext {
  tenantId: string;
  pool: EncodeWorkerPool;
  destinations: Destination[];
  deadLetters: DeadLetterStore;
  checkpoints: CheckpointSaver;
  stats: PipelineStats;
  log: Logger;
  settings: PipelineSettings;
  metrics?: DaemonMetrics;
  /** Unknown event types / attributes already logged for this tenant. */
  driftSeen: Set<string>;
}

/** An object could not be read after several attempts (a transient error): the poll stops, nothing is skipped. */
export class SourceReadError extends Error {
  constructor(
    readonly object: string,
    reason: string,
  ) {
    super(`cannot read ${object}: ${reason}`);
    this.name = 'SourceReadError';
  }
}

/** A destination gave up (retry budget spent): the pipeline stops without moving the checkpoint further. */
export class DestinationUnavailableError extends Error {
  constructor(
    readonly destination: string,
    reason: string,
  ) {
    super(`destination ${destination} unavailable: ${reason}`);
    this.name = 'DestinationUnavailableError';
  }
}

/**
 * Saving a tenant's checkpoint file as acknowledgements arrive: one save at a time, off the main
 * thread, each taking every change made before it started (so after a crash at most the
 * acknowledgements of the save in progress are lost: those batches are sent again). A failed
 * save (disk full) pauses reading until a save succeeds.
 */
export class CheckpointSaver {
  private saving: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  /** Set while the last save failed (e.g. disk full); reading pauses until a save succeeds. */
  lastError: Error | null = null;

  constructor(
    readonly store: CheckpointStore,
    private readonly deadLetters: DeadLetterStore,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  source(id: string): SourceCheckpoint {
    return this.store.source(id);
  }

  changed(): void {
    this.store.markDirty();
    if (this.saving) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    if (this.intervalMs <= 0) this.start();
    else
      this.timer = setTimeout(() => {
        this.timer = null;
        this.start();
      }, this.intervalMs);
  }

  private start(): void {
    this.again = false;
    this.saving = (async () => {
      try {
        this.deadLetters.sync();
        await this.store.saveAsync();
        this.succeeded();
      } catch (err) {
        this.failed(err as Error);
      }
    })().finally(() => {
      this.saving = null;
      if (this.again) this.changed();
    });
  }

  private succeeded(): void {
    if (this.lastError) this.log.info({ file: this.store.file }, 'checkpoint saved again after failure');
    this.lastError = null;
  }

  private failed(err: Error): void {
    if (!this.lastError) this.log.error({ file: this.store.file, err: err.message }, 'cannot save checkpoint: reading paused, checkpoint not advanced');
    this.lastError = err;
  }

  /** Wait for a save in progress, then write whatever is left. Returns false when the write failed. */
  async flush(): Promise<boolean> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.saving) await this.saving;
    try {
      this.deadLetters.sync();
      await this.store.saveAsync();
      this.succeeded();
      return true;
    } catch (err) {
      this.failed(err as Error);
      return false;
    }
  }
}

class Slots {
  private free: number;
  private waiters: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

interface ProgressEntry {
  lastLine: number;
  /** Where the piece ends in the object's bytes, from `obj.startOffset` (objects read by offset). */
  endOffset: number;
  settled: boolean;
}

/**
 * One object's progress: pieces (chunks, dead-lettered lines) are registered in reading order
 * and settle in any order; the checkpoint moves to the end of the longest settled prefix, and
 * the object is done once it was read to the end and every piece settled.
 */
class ObjectTracker {
  private readonly queue: ProgressEntry[] = [];
  private committed: number;
  private committedOffset: number;
  private finalLine: number | null = null;
  private finalOffset = 0;

  constructor(
    readonly obj: SourceObject,
    private readonly commit: (obj: SourceObject, progress: ObjectProgress) => void,
  ) {
    this.committed = obj.resumeAfterLine;
    this.committedOffset = obj.startOffset ?? 0;
  }

  add(lastLine: number, endOffset: number): ProgressEntry {
    const e = { lastLine, endOffset, settled: false };
    this.queue.push(e);
    return e;
  }

  settle(e: ProgressEntry): void {
    e.settled = true;
    this.advance();
  }

  /** Reading reached the end of the object (after line `lastLine`, which ends at `lastOffset`). */
  finish(lastLine: number, lastOffset: number): void {
    this.finalLine = lastLine;
    this.finalOffset = lastOffset;
    this.advance();
  }

  private advance(): void {
    let moved = false;
    while (this.queue.length > 0 && this.queue[0]!.settled) {
      const e = this.queue.shift()!;
      this.committed = e.lastLine;
      this.committedOffset = Math.max(this.committedOffset, e.endOffset);
      moved = true;
    }
    const version = this.obj.version ? { version: this.obj.version } : {};
    if (this.finalLine !== null && this.queue.length === 0) {
      this.commit(this.obj, { line: Math.max(this.committed, this.finalLine), done: true, ...(this.obj.size !== undefined ? { size: this.obj.size } : {}), ...version, ...this.place(Math.max(this.committedOffset, this.finalOffset)) });
      this.finalLine = null;
    } else if (moved) {
      this.commit(this.obj, { line: this.committed, ...version, ...this.place(this.committedOffset) });
    }
  }

  /** A local file's byte offset and identity, for its checkpoint entry. */
  private place(offset: number): Pick<ObjectProgress, 'offset' | 'file'> {
    return { ...(this.obj.startOffset !== undefined ? { offset } : {}), ...(this.obj.file ? { file: this.obj.file } : {}) };
  }
}

interface BatchRef {
  tracker: ObjectTracker;
  entry: ProgressEntry;
  key: string;
}

interface Batch {
  segments: ChunkSegment[];
  refs: BatchRef[];
  lines: number;
  bytes: number;
}

/** A segment's bytes before the pool sets them from its parts. */
const NO_BYTES = new Uint8Array(0);
const emptyBatch = (): Batch => ({ segments: [], refs: [], lines: 0, bytes: 0 });

/** What one runner has done so far: for progress displays, `/readyz` and the lag gauges. */
export interface SourceProgress {
  /** Objects listed by the polls so far, and the sum of their sizes where the source knows them. */
  objectsListed: number;
  bytesListed: number;
  /** False once a listed object came without a size. */
  sizesKnown: boolean;
  objectsRead: number;
  bytesRead: number;
  /** Lines read (records before mapping). */
  events: number;
  /** Records every destination accepted. */
  exported: number;
  newestExportedTimeUnixNano: bigint;
  /** Date.now() at the end of the last poll that listed, read and delivered without an error (0: none yet). */
  lastPollOkAt: number;
  lastError?: string;
  lastErrorAt: number;
}

export class SourceRunner {
  readonly progress: SourceProgress = { objectsListed: 0, bytesListed: 0, sizesKnown: true, objectsRead: 0, bytesRead: 0, events: 0, exported: 0, newestExportedTimeUnixNano: 0n, lastPollOkAt: 0, lastErrorAt: 0 };
  private batch: Batch = emptyBatch();
  private readonly slots: Slots;
  private readonly inFlight = new Set<Promise<void>>();
  private failure: DestinationUnavailableError | null = null;
  private readonly checkpoint: SourceCheckpoint;
  private readonly log: Logger;
  private readonly encodings: EncodingSpec[] = [];
  /** Per destination: index into `encodings`. */
  private readonly encodingOf: number[];

  constructor(
    readonly source: Source,
    private readonly ctx: TenantContext,
    /** Aborts deliveries in progress (hard stop); reading is stopped by the signal given to drain/run. */
    private readonly deliverySignal: AbortSignal,
  ) {
    this.checkpoint = ctx.checkpoints.source(source.id);
    this.slots = new Slots(ctx.settings.maxInFlightBatches);
    this.log = ctx.log.child({ source: source.id });
    const keys: string[] = [];
    this.encodingOf = ctx.destinations.map((d) => {
      const k = encodingKey(d.encoding);
      let i = keys.indexOf(k);
      if (i === -1) {
        i = keys.push(k) - 1;
        this.encodings.push(d.encoding);
      }
      return i;
    });
  }

  private readonly commit = (obj: SourceObject, progress: ObjectProgress): void => {
    this.checkpoint.objects[obj.key] = progress;
    this.ctx.checkpoints.changed();
    if (progress.done && this.source.objectFinished) {
      // after the checkpoint that records it is written: a crash in between re-sends, never loses
      void this.ctx.checkpoints
        .flush()
        .then(() => this.source.objectFinished!(obj))
        .catch((err: unknown) => this.log.error({ object: obj.key, err: (err as Error).message }, 'source could not be told the object is finished'));
    }
  };

  /** Read everything available now (several listings when the source has a backlog), deliver it, and wait until it is acknowledged. */
  async drain(readSignal: AbortSignal): Promise<void> {
    let read: number;
    try {
      do {
        read = await this.drainOnce(readSignal);
      } while (this.source.hasMore && read > 0 && !readSignal.aborted);
    } catch (err) {
      this.progress.lastError = (err as Error).message;
      this.progress.lastErrorAt = Date.now();
      throw err;
    }
    this.progress.lastPollOkAt = Date.now();
  }

  /** One listing and everything in it; returns the number of objects listed. */
  private async drainOnce(readSignal: AbortSignal): Promise<number> {
    const objects = await this.source.pending(this.checkpoint, readSignal);
    this.ctx.checkpoints.changed(); // listing may have pruned the state
    this.progress.objectsListed += objects.length;
    for (const o of objects) if (o.size === undefined) this.progress.sizesKnown = false; else this.progress.bytesListed += o.size - (o.startOffset ?? 0);
    const ahead = Math.max(1, this.source.readConcurrency ?? 1);
    const opened = new Map<number, AsyncIterator<Buffer | Uint8Array>>();
    const openAt = (i: number): void => {
      if (i >= objects.length || opened.has(i)) return;
      // opened ahead, its first bytes on the way (decompression is not started ahead: a gzip
      // stream that fails drops what it had decompressed and not yet handed on, and a truncated
      // object must deliver every complete line before the cut)
      opened.set(i, prefetch(objects[i]!.open(readSignal)));
    };
    try {
      for (let i = 0; i < objects.length; i++) {
        if (readSignal.aborted || this.failure) break;
        for (let j = i; j < i + ahead; j++) openAt(j);
        const stream = opened.get(i)!;
        opened.delete(i);
        await this.readObject(objects[i]!, stream, readSignal);
      }
    } catch (err) {
      // deliver what was read before the failure, so its progress is kept
      await this.dispatch();
      await this.settle();
      await this.ctx.checkpoints.flush();
      throw err;
    } finally {
      for (const it of opened.values()) void it.return?.();
    }
    await this.dispatch();
    await this.settle();
    if (this.failure) throw this.failure;
    if (!(await this.ctx.checkpoints.flush())) throw this.ctx.checkpoints.lastError!;
    if (objects.length > 0) {
      const s = this.ctx.stats;
      this.log.info({ objects: objects.length, exportedTotal: s.recordsExported, deadLetteredTotal: s.deadLetteredLines }, 'objects read and acknowledged');
    }
    return objects.length;
  }

  /** Poll until the read signal aborts; in-flight batches are settled before it returns. */
  async run(readSignal: AbortSignal): Promise<void> {
    while (!readSignal.aborted) {
      try {
        await this.drain(readSignal);
      } catch (err) {
        if (err instanceof DestinationUnavailableError) throw err;
        if (readSignal.aborted) break;
        this.log.error({ err: (err as Error).message }, 'source poll failed; retrying after the poll interval');
      }
      await sleep(this.source.pollIntervalMs, readSignal);
    }
    await this.dispatch();
    await this.settle();
    await this.ctx.checkpoints.flush();
  }

  private async readObject(obj: SourceObject, first: AsyncIterator<Buffer | Uint8Array>, signal: AbortSignal): Promise<void> {
    const { settings, stats, metrics, tenantId } = this.ctx;
    const started = Date.now();
    const tracker = new ObjectTracker(obj, this.commit);
    const keyInfo = parseObjectKey(obj.key);
    const uidPrefix = uidPrefixFor(obj.identity);
    let lastLine = obj.resumeAfterLine;
    // objects read from a byte offset: lines are numbered on from `startLine`, offsets counted from `startOffset`
    const base = obj.startOffset ?? 0;
    const firstLine = obj.startOffset !== undefined ? (obj.startLine ?? obj.resumeAfterLine) : 0;
    let lastOffset = base;
    let iterator: AsyncIterator<Buffer | Uint8Array> | null = first;
    for (let attempt = 1; ; attempt++) {
      try {
        const bytes = decompressed(iterator ? fromIterator(iterator) : obj.open(signal));
        iterator = null;
        const chunks = objectChunks(bytes, {
          maxLines: settings.batchSize,
          maxBytes: settings.maxBatchBytes,
          maxLineBytes: settings.maxLineBytes,
          skipLines: lastLine - firstLine,
          firstLine,
          holdUnterminated: obj.growing === true,
          maxObjectBytes: settings.maxObjectBytes,
          maxObjectLines: settings.maxObjectLines,
        });
        let limited = false;
        for await (const item of chunks) {
          if (item.kind === 'limit') {
            // the rest of the object is one dead letter; the object counts as read (the checkpoint moves past it)
            this.log.warn({ object: obj.key, line: item.limit.line, reason: item.limit.reason }, 'object over a limit; the rest of it is dead-lettered');
            await this.deadLetterLine(obj.key, uidPrefix, item.limit.line, item.limit.reason, '');
            limited = true;
            break;
          }
          if (item.kind === 'oversize') {
            const o = item.oversize;
            await this.deadLetterLine(obj.key, uidPrefix, o.line, `line of ${o.bytes} bytes exceeds maxLineBytes ${settings.maxLineBytes}`, o.head);
            lastOffset = base + o.endOffset;
            tracker.settle(tracker.add(o.line, lastOffset));
            lastLine = o.line;
          } else {
            lastLine = lastLineOf(item.chunk);
            lastOffset = base + item.chunk.endOffset;
            stats.bytesRead += item.chunk.byteLength;
            this.progress.bytesRead += item.chunk.byteLength;
            metrics?.bytesRead.inc({ tenant: tenantId, source: this.source.id }, item.chunk.byteLength);
            await this.addToBatch(tracker, keyInfo, uidPrefix, item.chunk, lastOffset);
          }
          if (signal.aborted) return; // stop mid-object: what was read is in batches
        }
        break;
      } catch (err) {
        if (signal.aborted) return;
        const message = (err as Error).message;
        if (isPermanentReadError(err)) {
          this.log.error({ object: obj.key, line: lastLine + 1, err: message }, 'object unreadable; the rest of it is dead-lettered');
          await this.deadLetterLine(obj.key, uidPrefix, lastLine + 1, `object unreadable after line ${lastLine}: ${message}`, '');
          break;
        }
        if (attempt < settings.objectReadAttempts) {
          this.log.warn({ object: obj.key, line: lastLine, attempt, err: message }, 'object read failed; retrying from the last line read');
          await sleep(Math.min(10_000, 500 * 2 ** (attempt - 1)), signal);
          continue;
        }
        // transient, and still failing: stop this poll; the object is read again next time
        // from its last acknowledged line (what was read so far is delivered meanwhile)
        throw new SourceReadError(obj.key, message);
      }
    }
    tracker.finish(lastLine, lastOffset);
    stats.objectsRead++;
    this.progress.objectsRead++;
    metrics?.objectsRead.inc({ tenant: tenantId, source: this.source.id });
    metrics?.objectDuration.observe({ tenant: tenantId, source: this.source.id }, (Date.now() - started) / 1000);
  }

  private async addToBatch(tracker: ObjectTracker, keyInfo: ObjectKeyInfo, uidPrefix: string, chunk: ObjectChunk, endOffset: number): Promise<void> {
    const b = this.batch;
    b.segments.push({ keyInfo, uidPrefix, firstLine: chunk.firstLine, bytes: NO_BYTES, parts: chunk.parts });
    b.refs.push({ tracker, entry: tracker.add(lastLineOf(chunk), endOffset), key: tracker.obj.key });
    b.lines += chunk.lineCount;
    b.bytes += chunk.byteLength;
    if (b.lines >= this.ctx.settings.batchSize || b.bytes >= this.ctx.settings.maxBatchBytes) await this.dispatch();
  }

  private async deadLetterLine(object: string, uidPrefix: string, line: number, reason: string, raw: string): Promise<void> {
    const { stats, metrics, tenantId } = this.ctx;
    // with the object's uid prefix, so that `replay` sends the line under the same log.record.uid
    await this.writeDeadLetter({ kind: 'line', source: this.source.id, object, line, reason, raw, uidPrefix });
    stats.deadLetteredLines++;
    metrics?.eventsDeadLettered.inc({ tenant: tenantId, source: this.source.id, reason: reasonLabel(reason) });
    if (stats.deadLetteredLines <= 100 || stats.deadLetteredLines % 1000 === 0) {
      this.log.warn({ object, line, reason, deadLettered: stats.deadLetteredLines }, 'line dead-lettered');
    }
  }

  /**
   * Write a dead letter. While that fails (disk full), wait and try again: the batch holding the
   * line stays unsettled, so the checkpoint never moves past a line whose dead letter is not on
   * disk, and reading pauses once the in-flight slots are taken.
   */
  private async writeDeadLetter(letter: DeadLetter): Promise<void> {
    let delay = 1000;
    let failing = false;
    for (;;) {
      try {
        this.ctx.deadLetters.write(letter);
        if (failing) this.log.info({ dir: this.ctx.deadLetters.dir }, 'dead-letter file written again after failure');
        return;
      } catch (err) {
        if (this.deliverySignal.aborted) throw err;
        if (!failing) this.log.error({ dir: this.ctx.deadLetters.dir, err: (err as Error).message }, 'cannot write the dead-letter file: the batch waits, checkpoint not advanced');
        failing = true;
        await sleep(delay, this.deliverySignal);
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }

  /** Hand the current batch to the workers and destinations (waits for a free in-flight slot: backpressure). */
  private async dispatch(): Promise<void> {
    const b = this.batch;
    if (b.segments.length === 0) return;
    this.batch = emptyBatch();
    await this.waitForCheckpointWritable();
    await this.slots.acquire();
    const p = this.processAndDeliver(b)
      .then((ok) => {
        if (ok) for (const r of b.refs) r.tracker.settle(r.entry);
      })
      .catch((err: unknown) => {
        this.log.error({ err: (err as Error).message }, 'batch failed unexpectedly; its records will be read again');
        this.failure ??= new DestinationUnavailableError('pipeline', (err as Error).message);
      })
      .finally(() => {
        this.slots.release();
        this.inFlight.delete(p);
      });
    this.inFlight.add(p);
  }

  /** While the checkpoint cannot be written (disk full), do not take on more work. */
  private async waitForCheckpointWritable(): Promise<void> {
    let delay = 1000;
    while (this.ctx.checkpoints.lastError && !this.deliverySignal.aborted) {
      await sleep(delay, this.deliverySignal);
      delay = Math.min(delay * 2, 30_000);
      await this.ctx.checkpoints.flush();
    }
  }

  private async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private async processAndDeliver(b: Batch): Promise<boolean> {
    // a batch whose processing fails as a whole is split to find the lines at fault (dead-lettered)
    const observed = (BigInt(Date.now()) * 1_000_000n).toString();
    const task = { tenant: this.ctx.tenantId, segments: b.segments, encodings: this.encodings, observedTimeUnixNano: observed };
    const result = await runSplittingOnFailure((t) => this.ctx.pool.run(t), task, (err) =>
      this.log.error({ objects: [...new Set(b.refs.map((r) => r.key))], err: err.message, workerDied: err.crashed }, 'batch failed while processing; splitting it to find the lines at fault'),
    );
    try {
      return await this.deliverResult(b, result, observed);
    } finally {
      // the payloads and segment bytes may live in the pool's shared buffers: done with them now
      result.release?.();
    }
  }

  private async deliverResult(b: Batch, result: ChunkResult, observed: string): Promise<boolean> {
    const { destinations, stats, metrics, tenantId } = this.ctx;
    await this.record(b, result);
    if (result.records === 0) return true;
    if (result.truncated) {
      destinations.forEach((d, di) => {
        const n = result.truncated![this.encodingOf[di]!] ?? 0;
        if (n === 0) return;
        stats.truncatedEntries += n;
        metrics?.entriesTruncated.inc({ tenant: tenantId, destination: d.name }, n);
        this.log.warn({ destination: d.name, entries: n }, 'entries over the destination size limit were truncated');
      });
    }

    // per destination, the records it rejected for their content (dead-lettered, not exported)
    const outcomes = await Promise.all(destinations.map((d, di) => this.deliverTo(d, di, b, result, observed)));
    if (!outcomes.every((o) => o !== null)) return false;
    // a record counts as exported when every destination accepted it
    const rejected = new Set<string>();
    for (const faults of outcomes) for (const f of faults!) rejected.add(`${f.segment}:${f.line}`);
    const exported = result.records - rejected.size;
    stats.batchesExported++;
    stats.recordsExported += exported;
    const newest = BigInt(result.newestTimeUnixNano);
    if (newest > stats.newestExportedTimeUnixNano) stats.newestExportedTimeUnixNano = newest;
    this.progress.exported += exported;
    if (newest > this.progress.newestExportedTimeUnixNano) this.progress.newestExportedTimeUnixNano = newest;
    return true;
  }

  /**
   * Deliver a batch's bodies to one destination. A body whose content the destination rejects
   * (400, 413, …) is split (re-encoded in halves) until the records at fault are found; only
   * those are dead-lettered. Returns the records at fault, or null when the destination is
   * unavailable (retry budget spent) or the delivery was aborted: the batch is not settled.
   */
  private async deliverTo(d: Destination, di: number, b: Batch, result: ChunkResult, observed: string): Promise<RecordFault[] | null> {
    const { stats, metrics, tenantId } = this.ctx;
    const started = Date.now();
    const enc = this.encodingOf[di]!;
    const faults: RecordFault[] = [];
    let text: BatchText | undefined;
    const bodies = result.payloads[enc]!;
    for (let k = 0; k < bodies.length; k++) {
      const r = await this.deliverBody(d, bodies[k]!, result.records);
      if (r === null) return null;
      if (r.kind === 'done') continue;
      text ??= batchText(b, result.segments ?? []);
      const range = bodyRange(text.lines, { from: 0, to: text.lines.length }, result.bodyStarts?.[enc] ?? null, k, (seg) => seg);
      if (!(await this.isolate(d, enc, b, text, range, r.outcome, observed, faults))) return null;
    }
    metrics?.exportLatency.observe({ tenant: tenantId, destination: d.name }, (Date.now() - started) / 1000);
    metrics?.eventsExported.inc({ tenant: tenantId, destination: d.name }, result.records - faults.length);
    if (faults.length > 0) {
      // one letter per distinct answer (usually one): the records at fault, with their object, uid prefix and line
      const byAnswer = new Map<string, RecordFault[]>();
      for (const f of faults) {
        const key = `${f.outcome.status ?? ''} ${f.outcome.reason}`;
        const group = byAnswer.get(key);
        if (group) group.push(f);
        else byAnswer.set(key, [f]);
      }
      for (const group of byAnswer.values()) {
        const o = group[0]!.outcome;
        stats.deadLetteredBatches++;
        metrics?.batchesDeadLettered.inc({ tenant: tenantId, destination: d.name });
        metrics?.eventsDeadLettered.inc({ tenant: tenantId, source: this.source.id, reason: 'rejected by destination' }, group.length);
        this.log.error({ destination: d.name, status: o.status, reason: o.reason, records: group.length, batchRecords: result.records }, 'records rejected by destination; dead-lettered, the rest of the batch delivered');
        const records: DeadLetteredRecord[] = group.map((f) => ({ object: b.refs[f.segment]!.key, uidPrefix: b.segments[f.segment]!.uidPrefix, line: f.line, raw: f.raw }));
        await this.writeDeadLetter({
          kind: 'batch',
          destination: d.name,
          reason: o.reason,
          ...(o.status !== undefined ? { status: o.status } : {}),
          ...(o.response !== undefined ? { response: o.response } : {}),
          objects: objectRanges(records),
          lines: records.map((r) => r.raw),
          records,
        });
      }
    }
    return faults;
  }

  /** One body to one destination with the retry policy; null when it gave up (the pipeline stops) or was aborted. */
  private async deliverBody(d: Destination, payload: Uint8Array, records: number): Promise<Extract<DeliveryResult, { kind: 'done' | 'rejected' }> | null> {
    const { settings, stats, metrics, tenantId } = this.ctx;
    const r = await deliver(d, payload, records, settings.retry, this.deliverySignal, {
      onRetry: (reason, delayMs, attempt, outcome) => {
        stats.retries++;
        metrics?.exportRetries.inc({ tenant: tenantId, destination: d.name });
        if (outcome.kind === 'hold') {
          this.log.error({ destination: d.name, status: outcome.status, reason, delayMs, attempt, records }, 'destination refuses the request (credentials or URL): holding the batch, checkpoint not advanced; retrying');
        } else {
          this.log.warn({ destination: d.name, reason, delayMs, attempt, records }, 'export failed; retrying');
        }
      },
    });
    if (r.kind === 'gave-up') {
      this.failure ??= new DestinationUnavailableError(d.name, r.lastReason);
      this.log.error({ destination: d.name, ...(r.status !== undefined ? { status: r.status } : {}), reason: r.lastReason, attempts: r.attempts }, 'destination unavailable; giving up, checkpoint not advanced');
      return null;
    }
    if (r.kind === 'aborted') return null;
    return r;
  }

  /**
   * Lines `range` of the batch were rejected for their content with `outcome`: a single record
   * is at fault; several are split in halves, each re-encoded for this destination and sent,
   * and a rejected half is split again. Returns false when the destination became unavailable.
   */
  private async isolate(d: Destination, enc: number, b: Batch, text: BatchText, range: LineRange, outcome: RejectedOutcome, observed: string, faults: RecordFault[]): Promise<boolean> {
    const { lines } = text;
    const candidates: number[] = [];
    for (let i = range.from; i < range.to; i++) if (!lines[i]!.blank) candidates.push(i);
    if (candidates.length === 0) return true;
    if (candidates.length === 1) {
      const l = lines[candidates[0]!]!;
      faults.push({ segment: l.segment, line: l.line, raw: rawLine(text, l), outcome });
      return true;
    }
    const mid = candidates[candidates.length >> 1]!;
    for (const half of [{ from: range.from, to: mid }, { from: mid, to: range.to }]) {
      const { segments, segmentOf } = subSegments(b, text, half);
      const sub = await this.ctx.pool.run({ tenant: this.ctx.tenantId, segments, encodings: [this.encodings[enc]!], observedTimeUnixNano: observed });
      try {
        // (lines that are not records were dead-lettered or dropped by the first pass already)
        if (sub.records === 0) continue;
        const bodies = sub.payloads[0]!;
        for (let k = 0; k < bodies.length; k++) {
          const r = await this.deliverBody(d, bodies[k]!, sub.records);
          if (r === null) return false;
          if (r.kind === 'done') continue;
          const part = bodyRange(lines, half, sub.bodyStarts?.[0] ?? null, k, (seg) => segmentOf[seg]!);
          if (!(await this.isolate(d, enc, b, text, part, r.outcome, observed, faults))) return false;
        }
      } finally {
        sub.release?.();
      }
    }
    return true;
  }

  /** What the workers found: dead letters, drops, counts and schema drift. */
  private async record(b: Batch, result: ChunkResult): Promise<void> {
    const { stats, metrics, tenantId } = this.ctx;
    stats.linesRead += result.linesRead;
    this.progress.events += result.linesRead;
    stats.recordsMapped += result.records;
    metrics?.eventsRead.inc({ tenant: tenantId, source: this.source.id }, result.linesRead);
    for (const dl of result.deadLetters) await this.deadLetterLine(b.refs[dl.segment]!.key, b.segments[dl.segment]!.uidPrefix, dl.line, dl.reason, dl.raw);
    for (const [type, n] of Object.entries(result.droppedByType)) {
      stats.droppedByOverride += n;
      metrics?.eventsDroppedByOverride.inc({ tenant: tenantId, event_type: type }, n);
    }
    if (metrics) for (const [type, n] of Object.entries(result.byType)) metrics.eventsByType.inc({ tenant: tenantId, event_type: type }, n);
    for (const [type, n] of Object.entries(result.unknownEventTypes)) {
      const known = this.driftName(`t:${type}`);
      metrics?.unknownEventTypes.inc({ tenant: tenantId, event_type: known ? type : DRIFT_OVERFLOW_LABEL }, n);
      if (known === 'new') this.log.warn({ eventType: type }, 'unknown event type seen: exported with the default mapping');
    }
    for (const [name, n] of Object.entries(result.unknownAttributes)) {
      const dot = name.indexOf('.');
      const known = this.driftName(`a:${name}`);
      metrics?.unknownAttributes.inc({ tenant: tenantId, event_type: name.slice(0, dot), attribute: known ? name.slice(dot + 1) : DRIFT_OVERFLOW_LABEL }, n);
      if (known === 'new') this.log.warn({ attribute: name }, 'undocumented attribute seen: exported with the default mapping');
    }
  }

  /**
   * Schema drift is reported per name, but a flood of names (one record with 100 000 made-up
   * attributes) must not become 100 000 log lines or metric label values: past
   * MAX_DRIFT_NAMES names per tenant, further ones are counted under one label and logged once.
   */
  private driftName(key: string): 'new' | 'known' | null {
    const seen = this.ctx.driftSeen;
    if (seen.has(key)) return 'known';
    if (seen.size < MAX_DRIFT_NAMES) {
      seen.add(key);
      return 'new';
    }
    if (!seen.has(DRIFT_OVERFLOW_KEY)) {
      seen.add(DRIFT_OVERFLOW_KEY);
      this.log.warn({ names: MAX_DRIFT_NAMES }, `more than ${MAX_DRIFT_NAMES} unknown event types and attributes: further ones are counted as "${DRIFT_OVERFLOW_LABEL}" and not logged`);
    }
    return null;
  }
}

/** Unknown names logged and labelled per tenant before they are lumped together. */
const MAX_DRIFT_NAMES = 200;
const DRIFT_OVERFLOW_KEY = '\u0000overflow';
const DRIFT_OVERFLOW_LABEL = '(other)';

type RejectedOutcome = Extract<DeliveryResult, { kind: 'rejected' }>['outcome'];

/** A record a destination rejected for its content: segment of the batch, line in its object, raw text. */
interface RecordFault {
  segment: number;
  line: number;
  raw: string;
  outcome: RejectedOutcome;
}

/** One line of a batch, numbered the way the chunk processor numbers them (blank lines count). */
interface BatchLine {
  segment: number;
  line: number;
  /** Byte range in the segment, without the newline (and a CR before it). */
  from: number;
  end: number;
  blank: boolean;
}

/** A batch's segment bytes (as the pool handed them back) and its lines. */
interface BatchText {
  bytes: readonly Uint8Array[];
  lines: BatchLine[];
}

/** Lines [from, to) of a batch's line list. */
interface LineRange {
  from: number;
  to: number;
}

/**
 * Every line of a batch in order: lines end at LF, a CR before it is not part of the line, a
 * last line needs no LF, blank (spaces, tabs) lines are numbered but hold no record; the first
 * line of an object loses its byte order mark. Exactly as chunk-processor.ts counts them, so
 * a line number here is the record's line in its object (and its `log.record.uid`).
 */
function batchText(b: Batch, segmentBytes: readonly Uint8Array[]): BatchText {
  const out: BatchLine[] = [];
  segmentBytes.forEach((u8, segment) => {
    const bytes = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
    let line = b.segments[segment]!.firstLine;
    let start = 0;
    while (start < bytes.length) {
      let nl = bytes.indexOf(0x0a, start);
      if (nl === -1) nl = bytes.length;
      let end = nl;
      if (end > start && bytes[end - 1] === 13) end--;
      let blank = true;
      for (let i = start; i < end && blank; i++) {
        const c = bytes[i]!;
        if (c !== 0x20 && c !== 0x09 && c !== 0x0d) blank = false;
      }
      out.push({ segment, line, from: start, end, blank });
      line++;
      start = nl + 1;
    }
  });
  return { bytes: segmentBytes, lines: out };
}

/** A line's text (the first line of an object without its byte order mark). */
function rawLine(text: BatchText, l: BatchLine): string {
  const u8 = text.bytes[l.segment]!;
  const raw = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('utf8', l.from, l.end);
  return l.line === 1 && raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
}

/**
 * The lines body `k` of an encoding holds, within `range`: from its first record to the next
 * body's first record. Without body starts (one body) it is the whole range. `segmentOf` maps
 * the segment numbers of the task that produced the bodies to the batch's.
 */
function bodyRange(lines: BatchLine[], range: LineRange, starts: Array<{ segment: number; line: number }> | null, k: number, segmentOf: (seg: number) => number): LineRange {
  if (!starts || starts.length < 2) return range;
  const at = (s: { segment: number; line: number } | undefined, fallback: number): number => {
    if (!s) return fallback;
    const seg = segmentOf(s.segment);
    for (let i = range.from; i < range.to; i++) if (lines[i]!.segment === seg && lines[i]!.line === s.line) return i;
    return fallback;
  };
  return { from: at(starts[k], range.from), to: at(starts[k + 1], range.to) };
}

/** Lines `range` of the batch as segments of their own (same objects, same first lines), for re-encoding. */
function subSegments(b: Batch, text: BatchText, range: LineRange): { segments: ChunkSegment[]; segmentOf: number[] } {
  const { lines } = text;
  const segments: ChunkSegment[] = [];
  const segmentOf: number[] = [];
  let i = range.from;
  while (i < range.to) {
    const seg = lines[i]!.segment;
    let j = i;
    while (j + 1 < range.to && lines[j + 1]!.segment === seg) j++;
    const src = b.segments[seg]!;
    const whole = text.bytes[seg]!;
    segments.push({
      keyInfo: src.keyInfo,
      uidPrefix: src.uidPrefix,
      firstLine: lines[i]!.line,
      // a copy: the pool may move (transfer) the bytes it is given
      bytes: Uint8Array.prototype.slice.call(whole, lines[i]!.from, lines[j]!.end),
    });
    segmentOf.push(seg);
    i = j + 1;
  }
  return { segments, segmentOf };
}

/** Per object, the first and last line of the records. */
function objectRanges(records: DeadLetteredRecord[]): Array<{ object: string; firstLine: number; lastLine: number }> {
  const out = new Map<string, { object: string; firstLine: number; lastLine: number }>();
  for (const r of records) {
    const o = out.get(r.object);
    if (!o) out.set(r.object, { object: r.object, firstLine: r.line, lastLine: r.line });
    else {
      o.firstLine = Math.min(o.firstLine, r.line);
      o.lastLine = Math.max(o.lastLine, r.line);
    }
  }
  return [...out.values()];
}

/** Starts reading an object (so its first bytes are on the way) without consuming them. */
function prefetch<T>(source: AsyncIterable<T>): AsyncIterator<T> {
  const it = source[Symbol.asyncIterator]();
  const first = it.next();
  first.catch(() => undefined); // surfaced when iterated
  let used = false;
  return {
    next: () => {
      if (!used) {
        used = true;
        return first;
      }
      return it.next();
    },
    return: async () => {
      await it.return?.();
      return { done: true, value: undefined };
    },
  };
}

function fromIterator<T>(it: AsyncIterator<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => it };
}

function isPermanentReadError(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException & { permanent?: boolean };
  if (e.permanent === true) return true;
  const code = e.code;
  return code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR' || code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES';
}

/**
 * A dead letter's reason as a metric label: its opening words, before any value it quotes or
 * details it adds, and with numbers as N (`unparseable eventTime "…"` → `unparseable eventTime`,
 * `line of 17000000 bytes exceeds maxLineBytes 16777216` → `line of N bytes exceeds maxLineBytes
 * N`), so that the data cannot create label values without bound.
 */
export function reasonLabel(reason: string): string {
  return reason.split(/[:("]/)[0]!.replace(/\d+/g, 'N').trim().slice(0, 48);
}
