/**
 * Writing one source's dead letters. While a write fails (disk full), wait and try again: the
 * batch holding the line stays unsettled, so the checkpoint never moves past a line whose dead
 * letter is not on disk, and reading pauses once the in-flight slots are taken.
 */
import { Backoff, BACKOFF_DEFAULTS, type BackoffPolicy } from '../core/backoff.js';
import { sleep } from '../core/sleep.js';
import { sourceInfoOf, type DeadLetter, type DeadLetterStore } from './dead-letter-store.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import type { PipelineTelemetry } from './pipeline-telemetry.js';

/** Waits between failed writes: 1 s doubling to 30 s. */
const DEAD_LETTER_WRITE_BACKOFF: BackoffPolicy = { ...BACKOFF_DEFAULTS.source, jitter: 'none' };

export class DeadLetterWriter {
  constructor(
    private readonly store: DeadLetterStore,
    private readonly sourceId: string,
    private readonly telemetry: PipelineTelemetry,
    /** A hard stop: waiting ends, the write's error is thrown. */
    private readonly signal: AbortSignal,
  ) {}

  /** One line (or the rest of an object) that cannot be delivered, with the object's uid prefix so that `replay` sends it under the same log.record.uid. */
  async line(object: string, uidPrefix: string, line: number, reason: string, raw: string, keyInfo?: ObjectKeyInfo): Promise<void> {
    const info = keyInfo ? sourceInfoOf(object, keyInfo) : undefined;
    await this.write({ kind: 'line', source: this.sourceId, object, line, reason, raw, uidPrefix, ...(info ? { info } : {}) });
    this.telemetry.lineDeadLettered(object, line, reason);
  }

  /** Write a dead letter, waiting while that fails. */
  async write(letter: DeadLetter): Promise<void> {
    const backoff = new Backoff(DEAD_LETTER_WRITE_BACKOFF);
    for (;;) {
      try {
        this.store.write(letter);
        if (backoff.attempts > 0) this.telemetry.deadLetterWriteRecovered(this.store.dir);
        return;
      } catch (err) {
        if (this.signal.aborted) throw err;
        if (backoff.attempts === 0) this.telemetry.deadLetterWriteFailed(this.store.dir, err as Error);
        await sleep(backoff.next(), this.signal);
      }
    }
  }
}
