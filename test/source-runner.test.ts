/**
 * The runner with a source whose reads fail: a transient failure never skips data (the poll
 * stops and the object is read again later from its last acknowledged line), a permanent one
 * dead-letters the rest of the object and moves on. Real OTLP receiver, real destination, the
 * encode stage in-process (workers: 0).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join } from 'node:path';
import { readFileSync, readdirSync } from 'node:fs';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';
import type { Source, SourceObject } from '../src/sources/source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../src/pipeline/dead-letter-store.js';
import { PipelineStats } from '../src/pipeline/pipeline-stats.js';
import { CheckpointSaver, DEFAULT_PIPELINE_SETTINGS, SourceReadError, SourceRunner, reasonLabel } from '../src/pipeline/source-runner.js';
import { EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import { OtlpDestination } from '../src/export/otlp/destination.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { silentLogger } from '../src/daemon/logger.js';

const KEY = 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/a.txt';
const lines = Array.from({ length: 50 }, (_, i) => JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u', testSeq: i + 1 }) + '\n');

/** Serves one object; `failAfter` lines into it the stream errors (transient or permanent), `failures` times. */
class FlakySource implements Source {
  readonly type = 'test';
  readonly id = 'flaky';
  readonly pollIntervalMs = 10;
  failures = 0;
  failAfter = 20;
  permanent = false;
  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    const p = checkpoint.objects[KEY];
    if (p?.done) return [];
    const self = this;
    return [
      {
        key: KEY,
        identity: 'test\n' + KEY,
        resumeAfterLine: p?.line ?? 0,
        async *open() {
          for (let i = 0; i < lines.length; i++) {
            if (i === self.failAfter && self.failures > 0) {
              self.failures--;
              const err = new Error(self.permanent ? 'corrupt object' : 'connection reset') as Error & { permanent?: boolean; code?: string };
              if (self.permanent) err.permanent = true;
              else err.code = 'ECONNRESET';
              throw err;
            }
            yield Buffer.from(lines[i]!);
          }
        },
      },
    ];
  }
}

let receiver: OtlpReceiver;
afterEach(async () => {
  await receiver?.close();
});

async function setup(source: FlakySource) {
  receiver = await startOtlpReceiver();
  const dir = tempDir();
  const log = silentLogger();
  const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
  const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, log);
  const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });
  const settings = { ...DEFAULT_PIPELINE_SETTINGS, batchSize: 10, objectReadAttempts: 2 };
  const runner = new SourceRunner(
    source,
    { tenantId: 't', pool, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats: new PipelineStats(), log, settings, driftSeen: new Set() },
    new AbortController().signal,
  );
  return { runner, dir, checkpoints, deadLetters };
}

const seqs = () => receiver.records().map((r) => r.attributes['tableau.test_seq'] as number);

describe('read failures', () => {
  it('transient: the poll stops without marking the object done; the next poll finishes it', async () => {
    const source = new FlakySource();
    source.failures = 5; // more than objectReadAttempts
    const { runner, checkpoints } = await setup(source);
    await expect(runner.drain(new AbortController().signal)).rejects.toBeInstanceOf(SourceReadError);
    const cp = checkpoints.source('flaky').objects[KEY]!;
    expect(cp.done).toBeFalsy();
    expect(cp.line).toBe(20); // everything before the failure was delivered and committed
    expect(seqs()).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));

    source.failures = 0;
    await runner.drain(new AbortController().signal);
    expect(checkpoints.source('flaky').objects[KEY]).toMatchObject({ line: 50, done: true });
    expect(new Set(seqs()).size).toBe(50);
    expect(seqs().length).toBe(50); // nothing sent twice
  });

  it('transient once: retried from the last line read, no loss, no duplicate', async () => {
    const source = new FlakySource();
    source.failures = 1;
    const { runner, checkpoints } = await setup(source);
    await runner.drain(new AbortController().signal);
    expect(checkpoints.source('flaky').objects[KEY]).toMatchObject({ line: 50, done: true });
    expect(seqs().sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('permanent: the rest of the object is dead-lettered and the object is done', async () => {
    const source = new FlakySource();
    source.failures = 1;
    source.permanent = true;
    const { runner, checkpoints, dir, deadLetters } = await setup(source);
    await runner.drain(new AbortController().signal);
    deadLetters.close();
    expect(checkpoints.source('flaky').objects[KEY]).toMatchObject({ done: true });
    expect(seqs().length).toBe(20);
    const letters = readdirSync(join(dir, 'dead-letter')).flatMap((f) => readFileSync(join(dir, 'dead-letter', f), 'utf8').trim().split('\n').map((l) => JSON.parse(l)));
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ kind: 'line', object: KEY, line: 21 });
    expect(letters[0].reason).toMatch(/unreadable after line 20: corrupt object/);
  });
});

describe('schema drift reporting', () => {
  it('a record with thousands of made-up attributes: every value delivered, at most a bounded number of drift log lines and metric labels', async () => {
    const { DaemonMetrics } = await import('../src/daemon/metrics.js');
    receiver = await startOtlpReceiver();
    const dir = tempDir();
    const lines: string[] = [];
    const log = {
      ...silentLogger(),
      child() {
        return this;
      },
      warn(obj: unknown, msg?: string) {
        lines.push(String(msg ?? obj));
      },
    } as unknown as ReturnType<typeof silentLogger>;
    const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
    const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, silentLogger());
    // (5003 fields: over the default pipeline.maxAttributesPerRecord, raised here)
    const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }], maxAttributesPerRecord: 10_000 });
    const wide: Record<string, unknown> = { eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u', testSeq: 1 };
    for (let i = 0; i < 5000; i++) wide[`madeUp${i}`] = i;
    const source: Source = {
      type: 'test',
      id: 'wide',
      pollIntervalMs: 10,
      async pending(cp) {
        if (cp.objects[KEY]?.done) return [];
        return [{ key: KEY, identity: 'wide', resumeAfterLine: 0, async *open() { yield Buffer.from(JSON.stringify(wide) + '\n'); } }];
      },
    };
    const metrics = new DaemonMetrics();
    const runner = new SourceRunner(
      source,
      { tenantId: 't', pool, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats: new PipelineStats(), log, settings: DEFAULT_PIPELINE_SETTINGS, driftSeen: new Set(), metrics },
      new AbortController().signal,
    );
    await runner.drain(new AbortController().signal);
    const got = receiver.records();
    expect(got).toHaveLength(1);
    expect(got[0]!.attributes['tableau.made_up4999']).toBe(4999);
    const driftLines = lines.filter((l) => /undocumented attribute|more than/.test(l));
    expect(driftLines.length).toBeLessThanOrEqual(201);
    expect(driftLines.some((l) => /more than 200/.test(l))).toBe(true);
    const text = await metrics.registry.getSingleMetricAsString('tao_unknown_attributes_total');
    const series = text.split('\n').filter((l) => l.startsWith('tao_unknown_attributes_total{'));
    expect(series.length).toBeLessThanOrEqual(201);
    // 5 001 undocumented attributes (5 000 made up + testSeq), each counted once: 200 by name, the rest together
    const value = (l: string) => Number(l.slice(l.lastIndexOf(' ') + 1));
    expect(series.reduce((n, l) => n + value(l), 0)).toBe(5001);
    expect(value(series.find((l) => l.includes('attribute="(other)"'))!)).toBe(4801);
  });
});

describe('the reason label of tao_events_dead_lettered_total', () => {
  it('keeps a reason\'s fixed words and drops the values it quotes and the numbers it gives', () => {
    const cases: Array<[string[], string]> = [
      [['unparseable eventTime "garbage"', 'unparseable eventTime "2026-13-01T00:00:00Z"'], 'unparseable eventTime'],
      [['eventTime outside what OTLP can carry (1970 to 2554): "1960-01-01T00:00:00Z"', 'eventTime outside what OTLP can carry (1970 to 2554): "2600-01-01T00:00:00Z"'], 'eventTime outside what OTLP can carry'],
      [['line of 17000000 bytes exceeds maxLineBytes 16777216', 'line of 20000001 bytes exceeds maxLineBytes 16777216'], 'line of N bytes exceeds maxLineBytes N'],
      [['object unreadable after line 12: unexpected end of file', 'object unreadable after line 99999: incorrect header check'], 'object unreadable after line N'],
      [['value of "a" nested deeper than 30 levels', 'value of "other name" nested deeper than 30 levels'], 'value of'],
      [['invalid JSON: Unexpected token } in JSON at position 7', 'invalid JSON: Unexpected end of JSON input'], 'invalid JSON'],
      [['cannot map this line (an error in the connector, please report it): TypeError: x'], 'cannot map this line'],
      [['cannot encode for splunk-hec: RangeError: y'], 'cannot encode for splunk-hec'],
      [['missing eventTime'], 'missing eventTime'],
    ];
    for (const [reasons, label] of cases) for (const r of reasons) expect(reasonLabel(r), r).toBe(label);
  });
});
