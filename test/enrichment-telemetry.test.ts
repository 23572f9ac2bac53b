/**
 * Records mapped while a tenant's reference data is still pending go out unenriched and are
 * counted (`tao_records_unenriched_total{tenant}` and the tenant's stats); once the data is
 * loaded they carry the names and are not counted. A real pipeline run: source runner, encode
 * stage in-process, real OTLP destination and receiver (protobuf decoded by the receiver).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';
import type { Source, SourceObject } from '../src/sources/source.js';
import { CheckpointStore, type SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../src/pipeline/dead-letter-store.js';
import { PipelineStats } from '../src/pipeline/pipeline-stats.js';
import { CheckpointSaver } from '../src/pipeline/checkpoint-saver.js';
import { DEFAULT_PIPELINE_SETTINGS } from '../src/pipeline/pipeline-settings.js';
import { SourceRunner } from '../src/pipeline/source-runner.js';
import { EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import { OtlpDestination } from '../src/export/otlp/destination.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { createLogger } from '../src/daemon/logger.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { join } from 'node:path';

const ADA = '585b0e4c-1111-4a5e-9f00-000000000001';

let receiver: OtlpReceiver;
afterEach(async () => {
  await receiver?.close();
});

async function metricValue(metrics: DaemonMetrics, name: string, labels: string): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('unenriched records', () => {
  it('pending data: records delivered without names and counted; loaded data: names, not counted', async () => {
    receiver = await startOtlpReceiver();
    const dir = tempDir();
    const log = createLogger('error', { format: 'json', out: { print: () => undefined } });
    const objectOf = (key: string, n: number, from: number): SourceObject => {
      const body = Buffer.from(Array.from({ length: n }, (_, i) => JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: ADA, testSeq: from + i })).join('\n') + '\n');
      return { key, identity: key, resumeAfterLine: 0, size: body.length, async *open() { yield body; } };
    };
    let objects: SourceObject[] = [];
    const source: Source = {
      type: 'test',
      id: 'one',
      pollIntervalMs: 10,
      async pending(cp: SourceCheckpoint): Promise<SourceObject[]> {
        return objects.filter((o) => !cp.objects[o.key]?.done);
      },
    };
    const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
    const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, log);
    const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });
    const metrics = new DaemonMetrics();
    const stats = new PipelineStats();
    const settings = { ...DEFAULT_PIPELINE_SETTINGS, batchSize: 10 };
    const runner = new SourceRunner(source, { tenantId: 't', pool, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats, log, settings, driftSeen: new Set(), metrics }, new AbortController().signal);
    try {
      pool.publishReferenceData('t', { status: 'pending', users: [], sites: [], loadedAtMs: 0 });
      objects = [objectOf('pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/a.txt', 25, 0)];
      await runner.drain(new AbortController().signal);
      expect(receiver.records()).toHaveLength(25);
      expect(receiver.records().every((r) => !('user.full_name' in r.attributes))).toBe(true);
      expect(stats.recordsUnenriched).toBe(25);
      expect(await metricValue(metrics, 'tao_records_unenriched_total', 'tenant="t"')).toBe(25);

      pool.publishReferenceData('t', { status: 'loaded', users: [{ id: ADA, fullName: 'Ada Lovelace' }], sites: [], loadedAtMs: Date.now() });
      objects = [...objects, objectOf('pod=p/siteLuid=s/y=2026/m=11/d=29/h=02/eventType=hist_access_view/b.txt', 12, 100)];
      await runner.drain(new AbortController().signal);
      const later = receiver.records().filter((r) => Number(r.attributes['tableau.test_seq']) >= 100);
      expect(later).toHaveLength(12);
      expect(later.every((r) => r.attributes['user.full_name'] === 'Ada Lovelace' && String(r.body).startsWith('Ada Lovelace accessed view'))).toBe(true);
      expect(stats.recordsUnenriched).toBe(25);
      expect(await metricValue(metrics, 'tao_records_unenriched_total', 'tenant="t"')).toBe(25);
    } finally {
      deadLetters.close();
      await pool.close();
    }
  }, 60_000);
});
