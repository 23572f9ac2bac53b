/** Messages between the encode worker pool (main thread) and its workers. */
import type { ChunkResult, ChunkTask, ProcessorInit, PublishedReference } from './chunk-processor.js';
import type { SharedRange } from './shared-buffers.js';

/** The setup of a worker started before the configuration was read (it has no workerData). */
export interface InitMessage {
  kind: 'init';
  init: ProcessorInit;
}

/** A region of a pool of shared buffers (shared-buffers.ts): it holds buffers `index` x `perRegion` on, each `bufferBytes` long. */
export interface SharedRegion {
  region: SharedArrayBuffer;
  index: number;
  perRegion: number;
  bufferBytes: number;
}

/** Regions of shared buffers, handed to a worker once each (before the first task that uses one). */
export interface BuffersMessage {
  kind: 'buffers';
  inputs: SharedRegion[];
  outputs: SharedRegion[];
}

/** Regions the pool dropped (by index): the worker forgets its handles on them and collects. */
export interface DropBuffersMessage {
  kind: 'drop-buffers';
  inputs: number[];
  outputs: number[];
}

/** A tenant's reference data for the tasks after this message (`data` absent: withdrawn). */
export interface ReferenceMessage {
  kind: 'reference';
  tenant: string;
  data?: PublishedReference;
}

export interface TaskMessage {
  kind: 'task';
  id: number;
  /** With `input`, the segments' bytes are empty here and live at those ranges instead. */
  task: ChunkTask;
  input?: SharedRange[];
  /** Shared output buffer to put the bodies in, or -1. */
  output: number;
}

/** A body placed in the shared output buffer comes back as its range. */
export type WirePayload = Uint8Array | SharedRange;

export interface ResultMessage {
  id: number;
  result?: Omit<ChunkResult, 'payloads'> & { payloads: WirePayload[][] };
  error?: string;
}

/** Asks a worker for its V8 heap's figures (it answers between tasks). */
export interface HeapQuery {
  kind: 'heap';
  id: number;
}

/** One encode worker's V8 heap: in use, its size (pages taken), and the memory outside it that V8 accounts. */
export interface WorkerHeap {
  usedBytes: number;
  totalBytes: number;
  externalBytes: number;
}

/** The workers' heaps as the pool reads them, by worker index (a worker that did not answer is left out). */
export type WorkerHeaps = Array<{ worker: number; heap: WorkerHeap }>;

/** Regions of the pool's shared buffers alive now, by kind (worker-pool.ts `sharedRegions`). */
export interface SharedRegionCounts {
  inputs: number;
  outputs: number;
}

export interface HeapReply {
  kind: 'heap';
  id: number;
  heap: WorkerHeap;
}
