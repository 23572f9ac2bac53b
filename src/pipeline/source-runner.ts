/**
 * Runs one source of one tenant through the whole path:
 *   source → decode (gunzip, lines) → parse + map → batch → every destination → checkpoint.
 *
 * Memory is bounded by `batchSize`/`maxBatchBytes` × `maxInFlightBatches` whatever the object
 * size or destination speed: when that many batches are unacknowledged, reading waits. The
 * checkpoint only moves past records every destination accepted (ordered-acks.ts), so a crash
 * re-sends at most the batches that were in flight.
 */
import type { Source, SourceObject } from '../sources/source.js';
import { uidPrefixFor } from '../sources/source.js';
import type { Destination } from '../export/destination.js';
import { deliver, sleep, type RetryPolicy } from '../export/delivery.js';
import type { RecordMapper } from '../mapping/record-mapper.js';
import type { MappedLogRecord } from '../mapping/log-record.js';
import { objectLines } from '../decoding/object-lines.js';
import { parseObjectKey } from '../decoding/object-key.js';
import type { CheckpointStore, SourceCheckpoint } from './checkpoint-store.js';
import type { DeadLetterStore } from './dead-letter-store.js';
import { OrderedAcks, type Marks } from './ordered-acks.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { Logger } from '../daemon/logger.js';

export interface PipelineSettings {
  batchSize: number;
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
  maxBatchBytes: 4 * 1024 * 1024,
  maxInFlightBatches: 4,
  maxLineBytes: 16 * 1024 * 1024,
  objectReadAttempts: 3,
  retry: { initialDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: Infinity },
  checkpointIntervalMs: 0,
};

export interface TenantContext {
  tenantId: string;
  mapper: RecordMapper;
  destinations: Destination[];
  deadLetters: DeadLetterStore;
  checkpoints: CheckpointSaver;
  stats: PipelineStats;
  log: Logger;
  settings: PipelineSettings;
}

/** A destination gave up (retry budget spent): the pipeline stops without moving the checkpoint further. */
export class DestinationUnavailableError extends Error {
  constructor(readonly destination: string, reason: string) {
    super(`destination ${destination} unavailable: ${reason}`);
    this.name = 'DestinationUnavailableError';
  }
}

/** Throttled, failure-aware saving of a tenant's checkpoint file. */
export class CheckpointSaver {
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
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
    if (this.timer || this.immediate) return;
    if (this.intervalMs <= 0) {
      // save after every acknowledgement, coalescing those of the same tick
      this.immediate = setImmediate(() => {
        this.immediate = null;
        this.saveNow();
      });
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.saveNow();
    }, this.intervalMs);
  }

  /** Returns false (and logs once per failure streak) when the write failed. */
  saveNow(): boolean {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.immediate) {
      clearImmediate(this.immediate);
      this.immediate = null;
    }
    try {
      this.deadLetters.sync();
      this.store.save();
      if (this.lastError) this.log.info({ file: this.store.file }, 'checkpoint saved again after failure');
      this.lastError = null;
      return true;
    } catch (err) {
      if (!this.lastError) {
        this.log.error({ file: this.store.file, err: (err as Error).message }, 'cannot save checkpoint: reading paused, checkpoint not advanced');
      }
      this.lastError = err as Error;
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

export class SourceRunner {
  private current: MappedLogRecord[] = [];
  private currentBytes = 0;
  private marks: Marks = new Map();
  private readonly acks: OrderedAcks;
  private readonly slots: Slots;
  private readonly inFlight = new Set<Promise<void>>();
  private failure: DestinationUnavailableError | null = null;
  private readonly checkpoint: SourceCheckpoint;
  private readonly log: Logger;

  constructor(
    readonly source: Source,
    private readonly ctx: TenantContext,
    /** Aborts deliveries in progress (hard stop); reading is stopped by the signal given to drain/run. */
    private readonly deliverySignal: AbortSignal,
  ) {
    this.checkpoint = ctx.checkpoints.source(source.id);
    this.slots = new Slots(ctx.settings.maxInFlightBatches);
    this.log = ctx.log.child({ source: source.id });
    this.acks = new OrderedAcks((marks) => {
      for (const [key, progress] of marks) this.checkpoint.objects[key] = progress;
      ctx.checkpoints.changed();
    });
  }

  /** Read everything pending now, deliver it, and wait until it is acknowledged. */
  async drain(readSignal: AbortSignal): Promise<void> {
    const objects = await this.source.pending(this.checkpoint, readSignal);
    this.ctx.checkpoints.changed(); // listing may have pruned the state
    for (const obj of objects) {
      if (readSignal.aborted || this.failure) break;
      await this.readObject(obj, readSignal);
    }
    await this.flush();
    await this.settle();
    if (this.failure) throw this.failure;
    if (!this.ctx.checkpoints.saveNow()) throw this.ctx.checkpoints.lastError!;
    if (objects.length > 0) {
      const s = this.ctx.stats;
      this.log.info({ objects: objects.length, exportedTotal: s.recordsExported, deadLetteredTotal: s.deadLetteredLines }, 'objects read and acknowledged');
    }
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
    await this.flush();
    await this.settle();
    this.ctx.checkpoints.saveNow();
  }

  private async readObject(obj: SourceObject, signal: AbortSignal): Promise<void> {
    const { settings, mapper, stats } = this.ctx;
    const mctx = { keyInfo: parseObjectKey(obj.key), uidPrefix: uidPrefixFor(obj.identity) };
    let lastLine = obj.resumeAfterLine;
    const progress = (line: number) => this.marks.set(obj.key, obj.version ? { line, version: obj.version } : { line });
    for (let attempt = 1; ; attempt++) {
      try {
        for await (const items of objectLines(obj.open(signal), { maxLineBytes: settings.maxLineBytes, skipLines: lastLine })) {
          const observed = BigInt(Date.now()) * 1_000_000n;
          for (const item of items) {
            lastLine = item.line;
            stats.linesRead++;
            if (item.kind === 'oversize') {
              this.deadLetterLine(obj, item.line, `line of ${item.bytes} bytes exceeds maxLineBytes ${settings.maxLineBytes}`, item.head);
              progress(item.line);
              continue;
            }
            stats.bytesRead += item.text.length + 1;
            let value: unknown;
            try {
              value = JSON.parse(item.text);
            } catch (err) {
              this.deadLetterLine(obj, item.line, `invalid JSON: ${(err as Error).message}`, item.text);
              progress(item.line);
              continue;
            }
            const result = mapper.map(value, item.line, mctx, observed);
            if (!result.ok && result.dropped) {
              stats.droppedByOverride++;
              progress(item.line);
              continue;
            }
            if (!result.ok) {
              this.deadLetterLine(obj, item.line, result.reason, item.text);
              progress(item.line);
              continue;
            }
            stats.recordsMapped++;
            this.current.push(result.record);
            this.currentBytes += item.text.length;
            progress(item.line);
            if (this.current.length >= settings.batchSize || this.currentBytes >= settings.maxBatchBytes) await this.flush();
          }
          if (signal.aborted) return; // stop mid-object: progress so far is in the marks
        }
        break;
      } catch (err) {
        if (signal.aborted) return;
        const message = (err as Error).message;
        if (attempt < settings.objectReadAttempts && !isPermanentReadError(err)) {
          this.log.warn({ object: obj.key, line: lastLine, attempt, err: message }, 'object read failed; retrying from the last line read');
          await sleep(Math.min(10_000, 500 * 2 ** (attempt - 1)), signal);
          continue;
        }
        this.log.error({ object: obj.key, line: lastLine + 1, err: message }, 'object unreadable; the rest of it is dead-lettered');
        this.deadLetterLine(obj, lastLine + 1, `object unreadable after line ${lastLine}: ${message}`, '');
        break;
      }
    }
    stats.objectsRead++;
    this.marks.set(obj.key, { line: lastLine, done: true, ...(obj.size !== undefined ? { size: obj.size } : {}), ...(obj.version ? { version: obj.version } : {}) });
  }

  private deadLetterLine(obj: SourceObject, line: number, reason: string, raw: string): void {
    this.ctx.stats.deadLetteredLines++;
    this.ctx.deadLetters.write({ kind: 'line', source: this.source.id, object: obj.key, line, reason, raw });
    if (this.ctx.stats.deadLetteredLines <= 100 || this.ctx.stats.deadLetteredLines % 1000 === 0) {
      this.log.warn({ object: obj.key, line, reason, deadLettered: this.ctx.stats.deadLetteredLines }, 'line dead-lettered');
    }
  }

  /** Send the current batch (waiting for a free in-flight slot: backpressure). */
  private async flush(): Promise<void> {
    const records = this.current;
    const marks = this.marks;
    this.current = [];
    this.currentBytes = 0;
    this.marks = new Map();
    if (records.length === 0) {
      if (marks.size > 0) this.acks.enqueue(marks)();
      return;
    }
    await this.waitForCheckpointWritable();
    await this.slots.acquire();
    const ack = this.acks.enqueue(marks);
    const p = this.deliverAll(records)
      .then((ok) => {
        if (ok) ack();
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
      this.ctx.checkpoints.saveNow();
    }
  }

  private async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private async deliverAll(records: MappedLogRecord[]): Promise<boolean> {
    const { destinations, settings, stats, deadLetters } = this.ctx;
    const results = await Promise.all(
      destinations.map((d) =>
        deliver(d, records, settings.retry, this.deliverySignal, {
          onRetry: (reason, delayMs, attempt) => {
            stats.retries++;
            this.log.warn({ destination: d.name, reason, delayMs, attempt, records: records.length }, 'export failed; retrying');
          },
        }),
      ),
    );
    let ok = true;
    results.forEach((r, i) => {
      const d = destinations[i]!;
      if (r.kind === 'rejected') {
        stats.deadLetteredBatches++;
        this.log.error({ destination: d.name, status: r.outcome.status, reason: r.outcome.reason, records: records.length }, 'batch rejected by destination; dead-lettered');
        deadLetters.write({
          kind: 'batch',
          destination: d.name,
          reason: r.outcome.reason,
          ...(r.outcome.status !== undefined ? { status: r.outcome.status } : {}),
          ...(r.outcome.response !== undefined ? { response: r.outcome.response } : {}),
          records,
        });
      } else if (r.kind === 'gave-up') {
        ok = false;
        this.failure ??= new DestinationUnavailableError(d.name, r.lastReason);
        this.log.error({ destination: d.name, reason: r.lastReason, attempts: r.attempts }, 'destination unreachable; giving up, checkpoint not advanced');
      } else if (r.kind === 'aborted') {
        ok = false;
      }
    });
    if (ok) {
      stats.batchesExported++;
      stats.recordsExported += records.length;
      for (const r of records) if (r.timeUnixNano > stats.newestExportedTimeUnixNano) stats.newestExportedTimeUnixNano = r.timeUnixNano;
    }
    return ok;
  }
}

function isPermanentReadError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR' || code === 'ENOENT' || code === 'EISDIR';
}
