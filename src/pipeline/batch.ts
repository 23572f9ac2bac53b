/** A batch: consecutive chunks (of one or several objects) handed to the encode workers and destinations together. */
import type { ChunkSegment } from './chunk-processor.js';
import type { ObjectTracker, ProgressEntry } from './object-tracker.js';

/** Which object's piece a segment of the batch is: settled once the batch is delivered. */
interface BatchRef {
  tracker: ObjectTracker;
  entry: ProgressEntry;
  key: string;
}

export interface Batch {
  segments: ChunkSegment[];
  refs: BatchRef[];
  lines: number;
  bytes: number;
}

/** A segment's bytes before the pool sets them from its parts. */
export const NO_BYTES = new Uint8Array(0);
export const emptyBatch = (): Batch => ({ segments: [], refs: [], lines: 0, bytes: 0 });
