/** Entry point of an encode worker thread: runs ChunkProcessor tasks sent by the pool. */
import v8 from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { ChunkProcessor, type ProcessorInit } from './chunk-processor.js';
import { coversItsBuffer, payloadOwnsItsBuffer } from './transfer.js';
import { SharedRegionViews } from './shared-buffers.js';
import { IdleCollection, IDLE_COLLECTION_MS } from './idle-collection.js';
import { collectGarbage } from '../core/gc-function.js';
import { isViewWithin } from '../core/byte-view.js';
import type { BuffersMessage, DropBuffersMessage, HeapQuery, HeapReply, InitMessage, ReferenceMessage, ResultMessage, TaskMessage, WirePayload } from './encode-messages.js';

// set up from workerData, or by the first message when started early (encode-worker-prewarm.ts)
let processor: ChunkProcessor | null = workerData ? new ChunkProcessor(workerData as ProcessorInit) : null;
const inputs = new SharedRegionViews();
const outputs = new SharedRegionViews();
/** What the tasks left dead is collected once they stop for a while (idle-collection.ts). */
const idleCollection = new IdleCollection(IDLE_COLLECTION_MS);

parentPort!.on('message', (msg: TaskMessage | BuffersMessage | DropBuffersMessage | InitMessage | ReferenceMessage | HeapQuery) => {
  if (msg.kind === 'heap') {
    const s = v8.getHeapStatistics();
    const reply: HeapReply = { kind: 'heap', id: msg.id, heap: { usedBytes: s.used_heap_size, totalBytes: s.total_heap_size, externalBytes: s.external_memory } };
    parentPort!.postMessage(reply);
    return;
  }
  if (msg.kind === 'init') {
    processor = new ChunkProcessor(msg.init);
    return;
  }
  if (msg.kind === 'reference') {
    // (the pool sends it after the setup; the table's buffer is shared, not copied)
    processor?.setReference(msg.tenant, msg.data);
    return;
  }
  if (msg.kind === 'buffers') {
    inputs.add(msg.inputs);
    outputs.add(msg.outputs);
    return;
  }
  if (msg.kind === 'drop-buffers') {
    // (the handles are the last ones once both threads have collected: the region's memory goes then)
    inputs.drop(msg.inputs);
    outputs.drop(msg.outputs);
    collectGarbage();
    return;
  }
  idleCollection.busy();
  try {
    const task = msg.task;
    if (msg.input) {
      task.segments.forEach((seg, i) => {
        const r = msg.input![i]!;
        seg.bytes = inputs.buffer(r.buffer).subarray(r.offset, r.offset + r.length);
      });
    }
    const output = msg.output >= 0 ? outputs.buffer(msg.output) : undefined;
    if (output) task.output = output;
    if (!processor) throw new Error('encode worker: task before setup');
    const result = processor.process(task);
    const transfer = new Set<ArrayBuffer>();
    const payloads: WirePayload[][] = result.payloads.map((ps) =>
      ps.map((p) => {
        // (the region holds the other buffers too: a body placed in this task's own buffer, by its offset in that buffer)
        if (output && isViewWithin(p, output)) {
          return { buffer: msg.output, offset: p.byteOffset - output.byteOffset, length: p.length };
        }
        if (payloadOwnsItsBuffer(p)) transfer.add(p.buffer as ArrayBuffer);
        return p;
      }),
    );
    // segment bytes that were moved here go back (the main thread keeps them for dead letters)
    let segments: Uint8Array[] | undefined;
    if (!msg.input) {
      segments = task.segments.map((seg) => seg.bytes);
      for (const b of segments) if (coversItsBuffer(b)) transfer.add(b.buffer as ArrayBuffer);
    }
    const reply: ResultMessage = { id: msg.id, result: { ...result, payloads, ...(segments ? { segments } : {}) } };
    parentPort!.postMessage(reply, [...transfer]);
  } catch (err) {
    const reply: ResultMessage = { id: msg.id, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
    parentPort!.postMessage(reply);
  }
});
