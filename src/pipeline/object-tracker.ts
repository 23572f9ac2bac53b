/** Object ordering: batches settle in any order, an object's checkpoint moves in reading order only. */
import type { SourceObject } from '../sources/source.js';
import type { ObjectProgress } from './checkpoint-store.js';

export interface ProgressEntry {
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
export class ObjectTracker {
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
