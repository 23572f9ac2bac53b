/**
 * Chunks into batches, and batches through the encode workers to the destinations: at most
 * `maxInFlightBatches` at a time and `maxInFlightBytes` of them (a full set makes reading wait), none while the checkpoint
 * cannot be written, none before the tenant's encode gate opens (TenantContext.encodeGate). A
 * delivered batch settles its pieces in their objects' trackers, so the checkpoint moves past
 * them; one that is not delivered leaves them unsettled.
 */
import { Backoff, BACKOFF_DEFAULTS, type BackoffPolicy } from '../core/backoff.js';
import { sleep } from '../core/sleep.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import { lastLineOf, type ObjectChunk } from '../decoding/object-chunks.js';
import type { ChunkResult } from './chunk-processor.js';
import { runSplittingOnFailure } from './batch-splitting.js';
import { emptyBatch, NO_BYTES, type Batch } from './batch.js';
import { DeliveryFanout } from './delivery-fanout.js';
import type { DeadLetterWriter } from './dead-letter-writer.js';
import { InFlightSlots } from './in-flight-slots.js';
import type { ObjectTracker } from './object-tracker.js';
import { DestinationUnavailableError } from './pipeline-errors.js';
import type { PipelineTelemetry } from './pipeline-telemetry.js';
import type { TenantContext } from './tenant-context.js';

/** Waits while the checkpoint cannot be written: 1 s doubling to 30 s. */
const CHECKPOINT_WRITABLE_BACKOFF: BackoffPolicy = { ...BACKOFF_DEFAULTS.source, jitter: 'none' };

export class BatchDispatcher {
  private batch: Batch = emptyBatch();
  private readonly slots: InFlightSlots;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly fanout: DeliveryFanout;
  /** Set once a destination gave up (or a batch failed unexpectedly): reading stops, the poll fails with it. */
  failure: DestinationUnavailableError | null = null;

  constructor(
    private readonly ctx: TenantContext,
    private readonly telemetry: PipelineTelemetry,
    private readonly deadLetters: DeadLetterWriter,
    /** Aborts deliveries in progress (hard stop). */
    private readonly deliverySignal: AbortSignal,
  ) {
    this.slots = new InFlightSlots(ctx.settings.maxInFlightBatches, ctx.settings.maxInFlightBytes);
    this.fanout = new DeliveryFanout(ctx, telemetry, deadLetters, deliverySignal, (err) => {
      this.failure ??= err;
    });
  }

  /** A chunk of an object joins the current batch (handed on once full). */
  async add(tracker: ObjectTracker, keyInfo: ObjectKeyInfo, uidPrefix: string, chunk: ObjectChunk, endOffset: number): Promise<void> {
    const b = this.batch;
    b.segments.push({ keyInfo, uidPrefix, firstLine: chunk.firstLine, bytes: NO_BYTES, parts: chunk.parts, partsBytes: chunk.byteLength });
    b.refs.push({ tracker, entry: tracker.add(lastLineOf(chunk), endOffset), key: tracker.obj.key });
    b.lines += chunk.lineCount;
    b.bytes += chunk.byteLength;
    if (b.lines >= this.ctx.settings.batchSize || b.bytes >= this.ctx.settings.maxBatchBytes) await this.dispatch();
  }

  /** Hand the current batch to the workers and destinations (waits for a free in-flight slot: backpressure). */
  async dispatch(): Promise<void> {
    const b = this.batch;
    if (b.segments.length === 0) return;
    this.batch = emptyBatch();
    // (its pieces left unsettled: the checkpoint does not pass them)
    if (this.ctx.encodeGate && !(await this.ctx.encodeGate)) return;
    await this.waitForCheckpointWritable();
    await this.slots.acquire(b.bytes);
    // (read no further ahead of the workers than they can take: worker-pool.ts whenReady)
    await this.ctx.pool.whenReady();
    const p = this.processAndDeliver(b)
      .then((ok) => {
        if (ok) for (const r of b.refs) r.tracker.settle(r.entry);
      })
      .catch((err: unknown) => {
        this.telemetry.batchFailed(err as Error);
        this.failure ??= new DestinationUnavailableError('pipeline', (err as Error).message);
      })
      .finally(() => {
        this.slots.release(b.bytes);
        this.inFlight.delete(p);
      });
    this.inFlight.add(p);
  }

  /** Hand on the current batch and wait until every batch in flight is settled. */
  async flush(): Promise<void> {
    await this.dispatch();
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** While the checkpoint cannot be written (disk full), do not take on more work. */
  private async waitForCheckpointWritable(): Promise<void> {
    const backoff = new Backoff(CHECKPOINT_WRITABLE_BACKOFF);
    while (this.ctx.checkpoints.lastError && !this.deliverySignal.aborted) {
      await sleep(backoff.next(), this.deliverySignal);
      await this.ctx.checkpoints.flush();
    }
  }

  private async processAndDeliver(b: Batch): Promise<boolean> {
    // a batch whose processing fails as a whole is split to find the lines at fault (dead-lettered)
    const observed = (BigInt(Date.now()) * 1_000_000n).toString();
    const task = { tenant: this.ctx.tenantId, segments: b.segments, encodings: this.fanout.encodings, observedTimeUnixNano: observed };
    const result = await runSplittingOnFailure((t) => this.ctx.pool.run(t), task, (err) => this.telemetry.batchSplitting([...new Set(b.refs.map((r) => r.key))], err));
    try {
      await this.recordFindings(b, result);
      return await this.fanout.deliver(b, result, observed);
    } finally {
      // the payloads and segment bytes may live in the pool's shared buffers: done with them now
      result.release?.();
    }
  }

  /** What the workers found: counts and drift, and the lines that are not records (dead-lettered). */
  private async recordFindings(b: Batch, result: ChunkResult): Promise<void> {
    this.telemetry.batchProcessed(result);
    for (const dl of result.deadLetters) await this.deadLetters.line(b.refs[dl.segment]!.key, b.segments[dl.segment]!.uidPrefix, dl.line, dl.reason, dl.raw, b.segments[dl.segment]!.keyInfo);
  }
}
