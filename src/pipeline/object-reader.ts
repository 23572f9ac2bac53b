/**
 * Reading one object: bytes (gunzipped by magic bytes) into line-aligned chunks handed to the
 * batches, from the line after its checkpoint. A transient read error is retried from the last
 * line read; a permanent one (bad gzip, object gone) and an object over a limit dead-letter the
 * rest of it; a transient error that persists stops the poll (SourceReadError), nothing skipped.
 */
import type { SourceObject } from '../sources/source.js';
import { uidPrefixFor } from '../sources/source.js';
import { Backoff, type BackoffPolicy } from '../core/backoff.js';
import { sleep } from '../core/sleep.js';
import { decompressed } from '../decoding/object-lines.js';
import { objectChunks, lastLineOf } from '../decoding/object-chunks.js';
import { parseObjectKey } from '../decoding/object-key.js';
import type { ObjectProgress } from './checkpoint-store.js';
import type { BatchDispatcher } from './batch-dispatcher.js';
import type { DeadLetterWriter } from './dead-letter-writer.js';
import { ObjectTracker } from './object-tracker.js';
import { SourceReadError } from './pipeline-errors.js';
import type { PipelineSettings } from './pipeline-settings.js';
import type { PipelineTelemetry } from './pipeline-telemetry.js';

/** Waits before reading an object again after a transient error: 0.5 s doubling to 10 s. */
const OBJECT_READ_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 10_000, multiplier: 2, jitter: 'none' };

export type ObjectBytes = AsyncIterator<Buffer | Uint8Array>;

export class ObjectReader {
  constructor(
    private readonly settings: PipelineSettings,
    private readonly batches: BatchDispatcher,
    private readonly deadLetters: DeadLetterWriter,
    private readonly telemetry: PipelineTelemetry,
    /** Where an object's progress goes (its checkpoint entry). */
    private readonly commit: (obj: SourceObject, progress: ObjectProgress) => void,
  ) {}

  /** Read `obj` to its end (or until `signal` aborts), its first bytes from `first` (opened ahead). */
  async read(obj: SourceObject, first: ObjectBytes, signal: AbortSignal): Promise<void> {
    const { settings, telemetry } = this;
    const started = Date.now();
    const tracker = new ObjectTracker(obj, this.commit);
    const keyInfo = obj.info ? { ...parseObjectKey(obj.key), ...obj.info } : parseObjectKey(obj.key);
    // (from the identity open() may set with the first bytes: see SourceObject.open)
    let prefix: string | undefined;
    const uidPrefix = (): string => (prefix ??= uidPrefixFor(obj.identity));
    let lastLine = obj.resumeAfterLine;
    // objects read from a byte offset: lines are numbered on from `startLine`, offsets counted from `startOffset`
    const base = obj.startOffset ?? 0;
    const firstLine = obj.startOffset !== undefined ? (obj.startLine ?? obj.resumeAfterLine) : 0;
    let lastOffset = base;
    let iterator: ObjectBytes | null = first;
    const backoff = new Backoff(OBJECT_READ_BACKOFF);
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
        for await (const item of chunks) {
          if (item.kind === 'limit') {
            // the rest of the object is one dead letter; the object counts as read (the checkpoint moves past it)
            telemetry.objectOverLimit(obj.key, item.limit.line, item.limit.reason);
            await this.deadLetters.line(obj.key, uidPrefix(), item.limit.line, item.limit.reason, '', keyInfo);
            break;
          }
          if (item.kind === 'oversize') {
            const o = item.oversize;
            await this.deadLetters.line(obj.key, uidPrefix(), o.line, `line of ${o.bytes} bytes exceeds maxLineBytes ${settings.maxLineBytes}`, o.head, keyInfo);
            lastOffset = base + o.endOffset;
            tracker.settle(tracker.add(o.line, lastOffset));
            lastLine = o.line;
          } else {
            lastLine = lastLineOf(item.chunk);
            lastOffset = base + item.chunk.endOffset;
            telemetry.bytesRead(item.chunk.byteLength);
            await this.batches.add(tracker, keyInfo, uidPrefix(), item.chunk, lastOffset);
          }
          if (signal.aborted) return; // stop mid-object: what was read is in batches
        }
        break;
      } catch (err) {
        if (signal.aborted) return;
        const message = (err as Error).message;
        if (isPermanentReadError(err)) {
          telemetry.objectUnreadable(obj.key, lastLine + 1, message);
          await this.deadLetters.line(obj.key, uidPrefix(), lastLine + 1, `object unreadable after line ${lastLine}: ${message}`, '', keyInfo);
          break;
        }
        if (attempt < settings.objectReadAttempts) {
          telemetry.objectReadRetry(obj.key, lastLine, attempt, message);
          await sleep(backoff.next(), signal);
          continue;
        }
        // transient, and still failing: stop this poll; the object is read again next time
        // from its last acknowledged line (what was read so far is delivered meanwhile)
        throw new SourceReadError(obj.key, message);
      }
    }
    if (obj.skipped) return; // nothing was read: no progress (listed again next poll)
    tracker.finish(lastLine, lastOffset);
    telemetry.objectRead(started);
  }
}

/** Starts reading an object (so its first bytes are on the way) without consuming them. */
export function prefetch<T>(source: AsyncIterable<T>): AsyncIterator<T> {
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
