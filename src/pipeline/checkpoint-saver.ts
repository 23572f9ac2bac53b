/**
 * Saving a tenant's checkpoint file as acknowledgements arrive: one save at a time, off the main
 * thread, each taking every change made before it started (so after a crash at most the
 * acknowledgements of the save in progress are lost: those batches are sent again). A failed
 * save (disk full) pauses reading until a save succeeds.
 */
import type { Logger } from '../core/logger.js';
import type { CheckpointStore, SourceCheckpoint } from './checkpoint-store.js';
import type { DeadLetterStore } from './dead-letter-store.js';

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

  /**
   * A poll found nothing to change: no save (the file holds the state), but the checkpoint's age
   * counts from now, as after a save. Nothing while a save is pending, running or failed; before
   * the process's first save, a save all the same (the file exists, its age is known).
   */
  unchanged(): void {
    if (this.store.lastSavedAtMs === 0) return this.changed();
    if (this.saving || this.timer || this.lastError) return;
    this.store.confirmCurrent();
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
  flush(): Promise<boolean> {
    return this.last(() => this.store.saveAsync());
  }

  /** At the tenant's stop: as flush, then the store folds its journal into the file and closes it. */
  close(): Promise<boolean> {
    return this.last(() => this.store.close());
  }

  private async last(save: () => Promise<unknown>): Promise<boolean> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.saving) await this.saving;
    try {
      this.deadLetters.sync();
      await save();
      this.succeeded();
      return true;
    } catch (err) {
      this.failed(err as Error);
      return false;
    }
  }
}
