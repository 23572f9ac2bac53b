/** Entry point of an encode worker thread: runs ChunkProcessor tasks sent by the pool. */
import { parentPort, workerData } from 'node:worker_threads';
import { ChunkProcessor, type ChunkTask, type ProcessorInit } from './chunk-processor.js';

const processor = new ChunkProcessor(workerData as ProcessorInit);

parentPort!.on('message', (msg: { id: number; task: ChunkTask }) => {
  try {
    const result = processor.process(msg.task);
    const transfer = result.payloads.flat().map((p) => p.buffer as ArrayBuffer);
    parentPort!.postMessage({ id: msg.id, result }, transfer);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
});
