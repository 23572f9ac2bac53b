/**
 * Runs one source of one tenant through the whole path:
 *
 *   source → bytes (gunzip by magic bytes) → line-aligned chunks            (object-reader.ts, main thread)
 *          → lines → JSON.parse → mapping → encoded request bodies          (batch-dispatcher.ts → encode workers)
 *          → every destination (retries, backoff, 413 splits)               (delivery-fanout.ts, main thread)
 *          → checkpoint: each object's progress moves past acknowledged lines only, in order
 *                                                                           (object-tracker.ts, checkpoint-saver.ts)
 * and every event of it counted and logged once (pipeline-telemetry.ts).
 *
 * This file is the poll loop: list, read the objects (a few opened ahead), wait until what was
 * read is acknowledged, save the checkpoint.
 *
 * Memory is bounded by `maxInFlightBatches` × (`maxBatchBytes` + its encodings), and by
 * `maxInFlightBytes` (+ one batch) of raw bytes and their encodings, whatever the object size or
 * destination speed: when that many batches or bytes are unacknowledged, reading waits.
 * A crash re-sends at most the batches that were in flight (their records keep their
 * `log.record.uid`, so destinations can drop the duplicates).
 */
import type { Source, SourceObject } from '../sources/source.js';
import { sleep } from '../core/sleep.js';
import type { ObjectProgress, SourceCheckpoint } from './checkpoint-store.js';
import { BatchDispatcher } from './batch-dispatcher.js';
import { DeadLetterWriter } from './dead-letter-writer.js';
import { ObjectReader, prefetch, type ObjectBytes } from './object-reader.js';
import { DestinationUnavailableError } from './pipeline-errors.js';
import { PipelineTelemetry, type SourceProgress } from './pipeline-telemetry.js';
import type { TenantContext } from './tenant-context.js';

export { CheckpointSaver } from './checkpoint-saver.js';
export { DEFAULT_PIPELINE_SETTINGS, type PipelineSettings } from './pipeline-settings.js';
export { DestinationUnavailableError, SourceReadError } from './pipeline-errors.js';
export { reasonLabel, type SourceProgress } from './pipeline-telemetry.js';
export type { TenantContext } from './tenant-context.js';

export class SourceRunner {
  readonly progress: SourceProgress;
  private readonly telemetry: PipelineTelemetry;
  private readonly batches: BatchDispatcher;
  private readonly reader: ObjectReader;
  private readonly checkpoint: SourceCheckpoint;

  constructor(
    readonly source: Source,
    private readonly ctx: TenantContext,
    /** Aborts deliveries in progress (hard stop); reading is stopped by the signal given to drain/run. */
    deliverySignal: AbortSignal,
  ) {
    this.checkpoint = ctx.checkpoints.source(source.id);
    this.telemetry = new PipelineTelemetry({ tenantId: ctx.tenantId, sourceId: source.id, stats: ctx.stats, metrics: ctx.metrics, log: ctx.log.child({ source: source.id }), driftSeen: ctx.driftSeen });
    this.progress = this.telemetry.progress;
    const deadLetters = new DeadLetterWriter(ctx.deadLetters, source.id, this.telemetry, deliverySignal);
    this.batches = new BatchDispatcher(ctx, this.telemetry, deadLetters, deliverySignal);
    this.reader = new ObjectReader(ctx.settings, this.batches, deadLetters, this.telemetry, this.commit);
  }

  private readonly commit = (obj: SourceObject, progress: ObjectProgress): void => {
    this.checkpoint.objects[obj.key] = progress;
    this.ctx.checkpoints.changed();
    if (progress.done && this.source.objectFinished) {
      // after the checkpoint that records it is written: a crash in between re-sends, never loses
      void this.ctx.checkpoints
        .flush()
        .then(() => this.source.objectFinished!(obj))
        .catch((err: unknown) => this.telemetry.objectFinishedNotTold(obj.key, err as Error));
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
      this.telemetry.pollFailed(err as Error);
      throw err;
    }
    this.telemetry.pollSucceeded();
  }

  /** One listing and everything in it; returns the number of objects listed. */
  private async drainOnce(readSignal: AbortSignal): Promise<number> {
    // a listing may prune or move the source's state; one that changed nothing needs no save
    // (an idle tenant's poll wrote the file, two fsyncs, every time)
    // (a source that says whether it changed it is not compared: two texts of megabytes a poll)
    const before = typeof this.source.checkpointChanged === 'boolean' ? undefined : JSON.stringify(this.checkpoint);
    const objects = await this.source.pending(this.checkpoint, readSignal);
    if (before === undefined ? this.source.checkpointChanged : JSON.stringify(this.checkpoint) !== before) this.ctx.checkpoints.changed();
    else this.ctx.checkpoints.unchanged();
    this.telemetry.objectsListed(objects);
    const ahead = Math.max(1, this.source.readConcurrency ?? 1);
    const opened = new Map<number, ObjectBytes>();
    const openAt = (i: number): void => {
      if (i >= objects.length || opened.has(i)) return;
      // opened ahead, its first bytes on the way (decompression is not started ahead: a gzip
      // stream that fails drops what it had decompressed and not yet handed on, and a truncated
      // object must deliver every complete line before the cut)
      opened.set(i, prefetch(objects[i]!.open(readSignal)));
    };
    try {
      for (let i = 0; i < objects.length; i++) {
        if (readSignal.aborted || this.batches.failure) break;
        for (let j = i; j < i + ahead; j++) openAt(j);
        const stream = opened.get(i)!;
        opened.delete(i);
        await this.reader.read(objects[i]!, stream, readSignal);
      }
    } catch (err) {
      // deliver what was read before the failure, so its progress is kept
      await this.batches.flush();
      await this.ctx.checkpoints.flush();
      throw err;
    } finally {
      for (const it of opened.values()) void it.return?.();
    }
    await this.batches.flush();
    if (this.batches.failure) throw this.batches.failure;
    if (!(await this.ctx.checkpoints.flush())) throw this.ctx.checkpoints.lastError!;
    this.telemetry.objectsAcknowledged(objects.length);
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
        this.telemetry.pollRetrying(err as Error);
      }
      await sleep(this.source.pollIntervalMs, readSignal);
    }
    await this.batches.flush();
    await this.ctx.checkpoints.flush();
  }
}
