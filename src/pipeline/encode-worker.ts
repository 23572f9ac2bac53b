/** Entry point of an encode worker thread: runs ChunkProcessor tasks sent by the pool. */
import { parentPort, workerData } from 'node:worker_threads';
import { ChunkProcessor, type ChunkTask, type ProcessorInit } from './chunk-processor.js';
import { coversItsBuffer, payloadOwnsItsBuffer } from './transfer.js';

const processor = new ChunkProcessor(workerData as ProcessorInit);

parentPort!.on('message', (msg: { id: number; task: ChunkTask }) => {
  try {
    const result = processor.process(msg.task);
    // hand the segment bytes back (the main thread keeps them for dead letters), without copies
    const segments = msg.task.segments.map((seg) => seg.bytes);
    const transfer = new Set<ArrayBuffer>();
    for (const p of result.payloads.flat()) if (payloadOwnsItsBuffer(p)) transfer.add(p.buffer as ArrayBuffer);
    for (const b of segments) if (coversItsBuffer(b)) transfer.add(b.buffer as ArrayBuffer);
    parentPort!.postMessage({ id: msg.id, result: { ...result, segments } }, [...transfer]);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
});
