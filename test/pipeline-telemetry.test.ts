/**
 * One pipeline run with every kind of event (lines read, bad lines, a record the destination
 * rejects, a retried 503, a line over maxLineBytes): the tenant's counters, the source's
 * progress, the Prometheus metrics and the log tell the same numbers, and those are what
 * the destination received and the dead-letter files hold. Real OTLP receiver, real
 * destination, encode stage in-process.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join } from 'node:path';
import { readFileSync, readdirSync } from 'node:fs';
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

const KEY = 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/a.txt';

let receiver: OtlpReceiver;
afterEach(async () => {
  await receiver?.close();
});

async function metricSum(metrics: DaemonMetrics, name: string, filter: (labels: string) => boolean = () => true): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  let sum = 0;
  for (const l of text.split('\n')) {
    if (!l.startsWith(`${name}{`) && !l.startsWith(`${name} `)) continue;
    const labels = l.slice(name.length, l.lastIndexOf(' '));
    if (filter(labels)) sum += Number(l.slice(l.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('pipeline telemetry', () => {
  it('counters, progress, metrics and log agree with each other and with what was delivered and dead-lettered', async () => {
    receiver = await startOtlpReceiver();
    const dir = tempDir();
    const logLines: Array<{ msg: string }> = [];
    const log = createLogger('info', { format: 'json', out: { print: (t: string) => logLines.push(JSON.parse(t) as { msg: string }) } });
    const record = (seq: number): string => JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u', testSeq: seq });
    const lines: string[] = [];
    for (let i = 1; i <= 40; i++) lines.push(record(i));
    lines[4] = '{not json';
    lines[17] = '[1, 2]';
    lines[25] = JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', pad: 'x'.repeat(5000) });
    const body = Buffer.from(lines.join('\n') + '\n');
    const source: Source = {
      type: 'test',
      id: 'one',
      pollIntervalMs: 10,
      async pending(cp: SourceCheckpoint): Promise<SourceObject[]> {
        if (cp.objects[KEY]?.done) return [];
        return [{ key: KEY, identity: 'one', resumeAfterLine: 0, size: body.length, async *open() { yield body; } }];
      },
    };
    // the receiver refuses the record with testSeq 33 (HTTP 400), and answers the first request 503
    receiver.rejectRecords((r) => r.attributes['tableau.test_seq'] === 33);
    receiver.respondNext({ status: 503 });

    const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
    const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, log);
    const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });
    const metrics = new DaemonMetrics();
    const stats = new PipelineStats();
    const settings = { ...DEFAULT_PIPELINE_SETTINGS, batchSize: 10, maxLineBytes: 1000, retry: { initialDelayMs: 10, maxDelayMs: 20, maxElapsedMs: 60_000 } };
    const runner = new SourceRunner(source, { tenantId: 't', pool, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats, log, settings, driftSeen: new Set(), metrics }, new AbortController().signal);
    await runner.drain(new AbortController().signal);
    deadLetters.close();
    await pool.close();

    const delivered = new Set(receiver.records().map((r) => r.attributes['tableau.test_seq']));
    // 40 lines: 2 not records, 1 over maxLineBytes, 1 rejected by the destination → 36 exported
    expect(delivered.size).toBe(36);
    const letters = readdirSync(join(dir, 'dead-letter'))
      .filter((f) => f.endsWith('.ndjson'))
      .flatMap((f) => readFileSync(join(dir, 'dead-letter', f), 'utf8').trim().split('\n'))
      .map((l) => JSON.parse(l) as { kind: string; line?: number; records?: Array<{ line: number }> });
    const lineLetters = letters.filter((l) => l.kind === 'line');
    const batchLetters = letters.filter((l) => l.kind === 'batch');
    expect(lineLetters.map((l) => l.line).sort((a, b) => a! - b!)).toEqual([5, 18, 26]);
    expect(batchLetters.flatMap((l) => l.records!.map((r) => r.line))).toEqual([33]);

    const p = runner.progress;
    // lines read (the oversize line is dead-lettered by the reader, not read as a record)
    expect(stats.linesRead).toBe(39);
    expect(p.events).toBe(stats.linesRead);
    expect(await metricSum(metrics, 'tao_events_read_total')).toBe(stats.linesRead);
    // exported
    expect(stats.recordsExported).toBe(delivered.size);
    expect(p.exported).toBe(stats.recordsExported);
    expect(await metricSum(metrics, 'tao_events_exported_total')).toBe(stats.recordsExported);
    // dead letters
    expect(stats.deadLetteredLines).toBe(lineLetters.length);
    expect(await metricSum(metrics, 'tao_events_dead_lettered_total', (l) => !l.includes('rejected by destination'))).toBe(stats.deadLetteredLines);
    expect(logLines.filter((l) => l.msg === 'line dead-lettered')).toHaveLength(stats.deadLetteredLines);
    expect(stats.deadLetteredBatches).toBe(batchLetters.length);
    expect(await metricSum(metrics, 'tao_batches_dead_lettered_total')).toBe(stats.deadLetteredBatches);
    expect(await metricSum(metrics, 'tao_events_dead_lettered_total', (l) => l.includes('rejected by destination'))).toBe(1);
    expect(logLines.filter((l) => l.msg.startsWith('records rejected by destination'))).toHaveLength(stats.deadLetteredBatches);
    // retries: the one 503
    expect(stats.retries).toBe(1);
    expect(await metricSum(metrics, 'tao_export_retries_total')).toBe(stats.retries);
    expect(logLines.filter((l) => l.msg === 'export failed; retrying')).toHaveLength(stats.retries);
    // bytes and objects
    expect(stats.bytesRead).toBeGreaterThan(0);
    expect(p.bytesRead).toBe(stats.bytesRead);
    expect(await metricSum(metrics, 'tao_bytes_read_total')).toBe(stats.bytesRead);
    expect(stats.objectsRead).toBe(1);
    expect(p.objectsRead).toBe(stats.objectsRead);
    expect(await metricSum(metrics, 'tao_objects_read_total')).toBe(stats.objectsRead);
    expect(p.objectsListed).toBe(1);
    expect(p.bytesListed).toBe(body.length);
    expect(p.lastPollOkAt).toBeGreaterThan(0);
  }, 60_000);
});
