/**
 * The encode workers' heaps on /metrics (tao_encode_worker_heap_*, src/daemon/metrics.ts): one
 * series per worker, asked of the workers themselves at the scrape; none when the pipeline
 * encodes in the main thread (`workers: 0`). The pool's regions of shared buffers
 * (tao_encode_shared_buffer_regions) in both cases.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { metricValue, startDaemon, waitFor, stopDaemon, type DaemonProcess } from './support/daemon-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await stopDaemon(daemon);
  await receiver?.close();
  daemon = undefined;
  receiver = undefined;
});

const NAMES = ['tao_encode_worker_heap_used_bytes', 'tao_encode_worker_heap_size_bytes', 'tao_encode_worker_external_memory_bytes'] as const;

async function exportedThenScraped(workers: number): Promise<string> {
  receiver = await startOtlpReceiver();
  const work = tempDir();
  const tree = writeFixtureTree(join(work, 'logs'), 4, 500);
  const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], `batchSize: 500, workers: ${workers}`);
  daemon = await startDaemon(['--config', config]);
  await waitFor('every record exported', () => receiver!.records().length >= tree.records.length || undefined, 120_000, 200);
  return (await daemon.get('/metrics')).body;
}

/**
 * Batches went through shared buffers: a region of request bodies was made, and no more than 8
 * batches in flight need (4 bodies a region); the lines travel in an input region only to workers.
 */
function expectRegions(metrics: string, inputs: number): void {
  expect(metrics).toContain('# TYPE tao_encode_shared_buffer_regions gauge');
  const input = metricValue(metrics, 'tao_encode_shared_buffer_regions', { kind: 'input' });
  const output = metricValue(metrics, 'tao_encode_shared_buffer_regions', { kind: 'output' });
  expect(input).toBe(inputs);
  expect(output).toBeGreaterThanOrEqual(1);
  expect(output).toBeLessThanOrEqual(2);
}

describe('encode worker heap metrics', () => {
  it('one series per worker: its heap in use within the pages it took, and its external memory', async () => {
    const metrics = await exportedThenScraped(2);
    const [used, size, external] = NAMES.map((name) => (worker: string) => metricValue(metrics, name, { worker }));
    for (const name of NAMES) expect(metricValue(metrics, name, { worker: '2' }), name).toBeUndefined();
    for (const w of ['0', '1']) {
      // a worker holds the catalog and its mapping plans: more than a megabyte, well under its 192 MB limit
      expect(used!(w)).toBeGreaterThan(1e6);
      expect(used!(w)).toBeLessThanOrEqual(size!(w)!);
      expect(size!(w)).toBeLessThan(192e6);
      expect(external!(w)).toBeGreaterThanOrEqual(0);
    }
    expectRegions(metrics, 1);
  }, 180_000);

  it('none when the main thread encodes (workers: 0)', async () => {
    const metrics = await exportedThenScraped(0);
    expect(metrics).toContain('# TYPE tao_encode_worker_heap_used_bytes gauge');
    for (const name of NAMES) expect(metricValue(metrics, name), name).toBeUndefined();
    expectRegions(metrics, 0);
  }, 180_000);
});
