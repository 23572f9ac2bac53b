/** The settings of a tenant's pipeline (from the `pipeline:` section), and their defaults. */
import type { RetryPolicy } from '../export/delivery.js';

export interface PipelineSettings {
  /** Most lines in one batch (one export request per destination, before size splits). */
  batchSize: number;
  /** Most raw bytes in one batch. */
  maxBatchBytes: number;
  maxInFlightBatches: number;
  /** Most raw bytes of the batches in flight together (a larger batch goes alone). */
  maxInFlightBytes: number;
  maxLineBytes: number;
  /** Decompressed bytes one object may have; the rest is dead-lettered (bounds a decompression bomb). */
  maxObjectBytes: number;
  /** Lines (blank ones included) one object may have; the rest is dead-lettered. */
  maxObjectLines: number;
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
  maxInFlightBytes: 16 * 1024 * 1024,
  maxLineBytes: 16 * 1024 * 1024,
  maxObjectBytes: 16 * 1024 ** 3,
  maxObjectLines: 50_000_000,
  objectReadAttempts: 3,
  retry: { initialDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: Infinity },
  checkpointIntervalMs: 0,
};
