/**
 * Batches are delivered concurrently but a checkpoint may only move past records that were
 * acknowledged, and past everything before them. Each batch carries the progress marks it
 * completes; marks are applied strictly in batch order, once the batch and all batches before
 * it are acknowledged.
 */
import type { ObjectProgress } from './checkpoint-store.js';

export type Marks = Map<string, ObjectProgress>;

interface Entry {
  marks: Marks;
  settled: boolean;
}

export class OrderedAcks {
  private readonly queue: Entry[] = [];

  constructor(private readonly apply: (marks: Marks) => void) {}

  /** Register the next batch; call the returned function once every destination accepted it. */
  enqueue(marks: Marks): () => void {
    const entry: Entry = { marks, settled: false };
    this.queue.push(entry);
    return () => {
      entry.settled = true;
      this.drain();
    };
  }

  get pending(): number {
    return this.queue.length;
  }

  private drain(): void {
    while (this.queue.length > 0 && this.queue[0]!.settled) {
      this.apply(this.queue.shift()!.marks);
    }
  }
}
