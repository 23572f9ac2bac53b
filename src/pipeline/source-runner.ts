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
import { deliver, sleep, type RetryPolicy } from '../export/delivery.js';
import { decompressed } from '../decoding/object-lines.js';
import { objectChunks, lastLineOf, type ObjectChunk } from '../decoding/object-chunks.js';
import { parseObjectKey, type ObjectKeyInfo } from '../decoding/object-key.js';
import type { CheckpointStore, ObjectProgress, SourceCheckpoint } from './checkpoint-store.js';
import type { DeadLetter, DeadLetterStore } from './dead-letter-store.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { EncodeWorkerPool } from './worker-pool.js';
import type { ChunkResult, ChunkSegment } from './chunk-processor.js';
import type { Logger } from '../daemon/logger.js';
import type { DaemonMetrics } from '../daemon/metrics.js';

export interface PipelineSettings {
  /** Most lines in one batch (one export request per destination, before size splits). */
  batchSize: number;
  /** Most raw bytes in one batch. */
  maxBatchBytes: number;
  maxInFlightBatches: number;
  maxLineBytes: number;
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
        const chunks = objectChunks(bytes, { maxLines: settings.batchSize, maxBytes: settings.maxBatchBytes, maxLineBytes: settings.maxLineBytes, skipLines: lastLine - firstLine, firstLine, holdUnterminated: obj.growing === true });
        for await (const item of chunks) {
          if (item.kind === 'oversize') {
            const o = item.oversize;
            await this.deadLetterLine(obj.key, o.line, `line of ${o.bytes} bytes exceeds maxLineBytes ${settings.maxLineBytes}`, o.head);
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
          await this.deadLetterLine(obj.key, lastLine + 1, `object unreadable after line ${lastLine}: ${message}`, '');
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

  private async deadLetterLine(object: string, line: number, reason: string, raw: string): Promise<void> {
    const { stats, metrics, tenantId } = this.ctx;
    await this.writeDeadLetter({ kind: 'line', source: this.source.id, object, line, reason, raw });
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
    const result = await this.ctx.pool.run({
      tenant: this.ctx.tenantId,
      segments: b.segments,
      encodings: this.encodings,
      observedTimeUnixNano: (BigInt(Date.now()) * 1_000_000n).toString(),
    });
    try {
      return await this.deliverResult(b, result);
    } finally {
      // the payloads and segment bytes may live in the pool's shared buffers: done with them now
      result.release?.();
    }
  }

  private async deliverResult(b: Batch, result: ChunkResult): Promise<boolean> {
    const { destinations, settings, stats, metrics, tenantId } = this.ctx;
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

    const outcomes = await Promise.all(
      destinations.map(async (d, di) => {
        const started = Date.now();
        // a batch split into several bodies is dead-lettered (all its lines) at most once per destination
        let deadLettered = false;
        for (const payload of result.payloads[this.encodingOf[di]!]!) {
          const r = await deliver(d, payload, result.records, settings.retry, this.deliverySignal, {
            onRetry: (reason, delayMs, attempt) => {
              stats.retries++;
              metrics?.exportRetries.inc({ tenant: tenantId, destination: d.name });
              this.log.warn({ destination: d.name, reason, delayMs, attempt, records: result.records }, 'export failed; retrying');
            },
          });
          if (r.kind === 'rejected') {
            if (deadLettered) continue;
            deadLettered = true;
            stats.deadLetteredBatches++;
            metrics?.batchesDeadLettered.inc({ tenant: tenantId, destination: d.name });
            this.log.error({ destination: d.name, status: r.outcome.status, reason: r.outcome.reason, records: result.records }, 'batch rejected by destination; dead-lettered');
            await this.writeDeadLetter({
              kind: 'batch',
              destination: d.name,
              reason: r.outcome.reason,
              ...(r.outcome.status !== undefined ? { status: r.outcome.status } : {}),
              ...(r.outcome.response !== undefined ? { response: r.outcome.response } : {}),
              objects: b.refs.map((ref, i) => ({ object: ref.key, firstLine: b.segments[i]!.firstLine, lastLine: ref.entry.lastLine })),
              lines: (result.segments ?? [])
                .map((bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'))
                .join('\n')
                .split('\n')
                .filter((l) => l.trim() !== ''),
            });
          } else if (r.kind === 'gave-up') {
            this.failure ??= new DestinationUnavailableError(d.name, r.lastReason);
            this.log.error({ destination: d.name, reason: r.lastReason, attempts: r.attempts }, 'destination unreachable; giving up, checkpoint not advanced');
            return false;
          } else if (r.kind === 'aborted') {
            return false;
          }
        }
        metrics?.exportLatency.observe({ tenant: tenantId, destination: d.name }, (Date.now() - started) / 1000);
        metrics?.eventsExported.inc({ tenant: tenantId, destination: d.name }, result.records);
        return true;
      }),
    );
    if (!outcomes.every(Boolean)) return false;
    stats.batchesExported++;
    stats.recordsExported += result.records;
    const newest = BigInt(result.newestTimeUnixNano);
    if (newest > stats.newestExportedTimeUnixNano) stats.newestExportedTimeUnixNano = newest;
    this.progress.exported += result.records;
    if (newest > this.progress.newestExportedTimeUnixNano) this.progress.newestExportedTimeUnixNano = newest;
    return true;
  }

  /** What the workers found: dead letters, drops, counts and schema drift. */
  private async record(b: Batch, result: ChunkResult): Promise<void> {
    const { stats, metrics, tenantId } = this.ctx;
    stats.linesRead += result.linesRead;
    this.progress.events += result.linesRead;
    stats.recordsMapped += result.records;
    metrics?.eventsRead.inc({ tenant: tenantId, source: this.source.id }, result.linesRead);
    for (const dl of result.deadLetters) await this.deadLetterLine(b.refs[dl.segment]!.key, dl.line, dl.reason, dl.raw);
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
