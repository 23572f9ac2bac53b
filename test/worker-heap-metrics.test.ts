/**
 * The encode workers' heaps on /metrics (tao_encode_worker_heap_*, src/daemon/metrics.ts): one
 * series per worker, asked of the workers themselves at the scrape; none when the pipeline
 * encodes in the main thread (`workers: 0`).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { startDaemon, waitFor, type DaemonProcess } from './support/daemon-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
  await receiver?.close();
  daemon = undefined;
  receiver = undefined;
});

/** The samples of one metric, by their `worker` label. */
function byWorker(metrics: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of metrics.matchAll(new RegExp(`^${name}\\{worker="(\\d+)"\\} (\\S+)$`, 'gm'))) out.set(m[1]!, Number(m[2]));
  return out;
}

async function exportedThenScraped(workers: number): Promise<string> {
  receiver = await startOtlpReceiver();
  const work = tempDir();
  const tree = writeFixtureTree(join(work, 'logs'), 4, 500);
  const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], `batchSize: 500, workers: ${workers}`);
  daemon = await startDaemon(['--config', config]);
  await waitFor('every record exported', () => receiver!.records().length >= tree.records.length || undefined, 120_000, 200);
  return (await daemon.get('/metrics')).body;
}

describe('encode worker heap metrics', () => {
  it('one series per worker: its heap in use within the pages it took, and its external memory', async () => {
    const metrics = await exportedThenScraped(2);
    const used = byWorker(metrics, 'tao_encode_worker_heap_used_bytes');
    const size = byWorker(metrics, 'tao_encode_worker_heap_size_bytes');
    const external = byWorker(metrics, 'tao_encode_worker_external_memory_bytes');
    expect([...used.keys()].sort()).toEqual(['0', '1']);
    expect([...size.keys()].sort()).toEqual(['0', '1']);
    expect([...external.keys()].sort()).toEqual(['0', '1']);
    for (const w of ['0', '1']) {
      // a worker holds the catalog and its mapping plans: more than a megabyte, well under its 192 MB limit
      expect(used.get(w)).toBeGreaterThan(1e6);
      expect(used.get(w)).toBeLessThanOrEqual(size.get(w)!);
      expect(size.get(w)).toBeLessThan(192e6);
      expect(external.get(w)).toBeGreaterThanOrEqual(0);
    }
  }, 180_000);

  it('none when the main thread encodes (workers: 0)', async () => {
    const metrics = await exportedThenScraped(0);
    expect(metrics).toContain('# TYPE tao_encode_worker_heap_used_bytes gauge');
    expect(byWorker(metrics, 'tao_encode_worker_heap_used_bytes').size).toBe(0);
    expect(byWorker(metrics, 'tao_encode_worker_heap_size_bytes').size).toBe(0);
  }, 180_000);
});
