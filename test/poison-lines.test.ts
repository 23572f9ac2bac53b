/**
 * Lines that used to stop a tenant for good, through the real runner, encode pool and OTLP
 * destination, decoded by the test receiver: event types and attribute names that are
 * Object.prototype's own (`constructor`, `toString`, `__proto__`, `hasOwnProperty`), a record
 * with very many fields (dead-lettered naming pipeline.maxAttributesPerRecord), and a batch
 * whose processing fails outside the per-line guard for some lines (split until exactly those
 * lines are found and dead-lettered; every other line delivered once).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join } from 'node:path';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';
import type { Source, SourceObject } from '../src/sources/source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../src/pipeline/dead-letter-store.js';
import { PipelineStats } from '../src/pipeline/pipeline-stats.js';
import { CheckpointSaver, DEFAULT_PIPELINE_SETTINGS, SourceRunner } from '../src/pipeline/source-runner.js';
import { ChunkProcessingError, EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import type { ChunkTask } from '../src/pipeline/chunk-processor.js';
import { OtlpDestination } from '../src/export/otlp/destination.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { silentLogger } from '../src/daemon/logger.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

const catalog = loadCatalog();

/** One object of the given lines (the key says nothing of the event type). */
class LinesSource implements Source {
  readonly type = 'test';
  readonly id = 'lines';
  readonly pollIntervalMs = 10;
  constructor(
    private readonly key: string,
    private readonly lines: string[],
  ) {}
  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    const p = checkpoint.objects[this.key];
    if (p?.done) return [];
    const lines = this.lines;
    return [
      {
        key: this.key,
        identity: 'test\n' + this.key,
        resumeAfterLine: p?.line ?? 0,
        async *open() {
          for (const l of lines) yield Buffer.from(l + '\n');
        },
      },
    ];
  }
}

let receiver: OtlpReceiver | undefined;
let pool: { close(): Promise<void> } | undefined;
afterEach(async () => {
  await receiver?.close();
  await pool?.close();
  receiver = undefined;
  pool = undefined;
});

interface Letter {
  kind: string;
  line: number;
  reason: string;
  raw: string;
}

/** The pipeline's modules: from src/ (in-process encoding), or the build (dist/, whose encode workers are real threads). */
const SRC = { CheckpointSaver, CheckpointStore, DeadLetterStore, EncodeWorkerPool, SourceRunner };
async function built(): Promise<typeof SRC> {
  return {
    ...((await import('../dist/pipeline/source-runner.js')) as typeof import('../src/pipeline/source-runner.js')),
    ...((await import('../dist/pipeline/checkpoint-store.js')) as typeof import('../src/pipeline/checkpoint-store.js')),
    ...((await import('../dist/pipeline/dead-letter-store.js')) as typeof import('../src/pipeline/dead-letter-store.js')),
    ...((await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js')),
  };
}

async function runLines(lines: string[], opts: { batchSize?: number; wrap?: (p: EncodeWorkerPool) => EncodeWorkerPool; maxAttributesPerRecord?: number; workers?: number; key?: string; drains?: number } = {}) {
  const key = opts.key ?? 'no/layout/poison.txt';
  const { CheckpointSaver, CheckpointStore, DeadLetterStore, EncodeWorkerPool, SourceRunner } = opts.workers ? await built() : SRC;
  receiver = await startOtlpReceiver();
  const dir = tempDir();
  const log = silentLogger();
  const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
  const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, log);
  const real = new EncodeWorkerPool(opts.workers ?? 0, { catalog, scope: { name: 't', version: '0' }, tenants: [{ id: 't' }], ...(opts.maxAttributesPerRecord ? { maxAttributesPerRecord: opts.maxAttributesPerRecord } : {}) });
  pool = real;
  const settings = { ...DEFAULT_PIPELINE_SETTINGS, batchSize: opts.batchSize ?? 1000, maxLineBytes: 64 * 1024 * 1024, retry: { initialDelayMs: 10, maxDelayMs: 50, maxElapsedMs: 5_000 } };
  const stats = new PipelineStats();
  const metrics = new DaemonMetrics();
  const runner = new SourceRunner(
    new LinesSource(key, lines),
    { tenantId: 't', pool: opts.wrap ? opts.wrap(real) : real, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats, log, settings, metrics, driftSeen: new Set() },
    new AbortController().signal,
  );
  for (let i = 0; i < (opts.drains ?? 1); i++) await runner.drain(new AbortController().signal);
  const dlDir = join(dir, 'dead-letter');
  const letters: Letter[] = existsSync(dlDir)
    ? readdirSync(dlDir).flatMap((f) =>
        readFileSync(join(dlDir, f), 'utf8')
          .trim()
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Letter),
      )
    : [];
  const checkpoint = readCheckpointState(dir) as { sources: Record<string, { objects: Record<string, { line: number; done?: boolean }> }> };
  return { records: receiver.records(), letters, stats, metrics, checkpoint: Object.getOwnPropertyDescriptor(checkpoint.sources.lines!.objects, key)?.value as { line: number; done?: boolean } };
}

const line = (seq: number, extra: Record<string, unknown> = {}): string => JSON.stringify({ eventTime: '2026-11-29T10:00:00Z', actorUserLuid: 'u', seq, ...extra });

describe('lines named like Object.prototype members', () => {
  it('constructor, toString, __proto__, hasOwnProperty as event types and attribute names are delivered as data', async () => {
    const names = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];
    const lines = names.flatMap((n, i) => [
      // as the event type, and as an attribute name (the scanner's path)
      line(i * 3 + 1, { eventType: n, [n]: `v-${n}` }),
      // the same with an escape in it (JSON.parse's path)
      line(i * 3 + 2, { eventType: n, [n]: `v-${n}`, note: 'a"b' }),
      // a nested value (JSON.parse's path, kvlist)
      line(i * 3 + 3, { eventType: 'hist_access_view', nested: { [n]: 1 }, [n]: 2 }),
    ]);
    // `__proto__` written as a key in the text (JSON.stringify above writes it as an own key too)
    lines.push('{"eventTime":"2026-11-29T10:00:00Z","eventType":"__proto__","__proto__":{"polluted":true},"seq":99}');
    const { records, letters, stats, checkpoint, metrics } = await runLines(lines);
    expect(letters).toEqual([]);
    // counted per event type like any other
    const byType = (await metrics.registry.getSingleMetric('tao_events_by_type_total')!.get()).values;
    for (const n of names) expect(byType.find((v) => v.labels.event_type === n)?.value, n).toBe(n === '__proto__' ? 3 : 2);
    expect(records.length).toBe(lines.length);
    expect(stats.recordsExported).toBe(lines.length);
    expect(checkpoint.done).toBe(true);
    const bySeq = new Map(records.map((r) => [Number(r.attributes['tableau.seq']), r]));
    names.forEach((n, i) => {
      for (const seq of [i * 3 + 1, i * 3 + 2]) {
        const r = bySeq.get(seq)!;
        expect(r.eventName).toBe(`tableau.${n}`);
        expect(r.attributes['tableau.event_type']).toBe(n);
        const attr = Object.entries(r.attributes).find(([k]) => k === `tableau.${n === 'toString' ? 'to_string' : n === 'hasOwnProperty' ? 'has_own_property' : n === 'valueOf' ? 'value_of' : n}`);
        expect(attr?.[1], `${n} on line ${seq}`).toBe(`v-${n}`);
      }
      const nested = bySeq.get(i * 3 + 3)!;
      expect(Object.entries(nested.attributes['tableau.nested'] as object)).toEqual([[n, 1]]);
    });
    const last = bySeq.get(99)!;
    expect(last.attributes['tableau.event_type']).toBe('__proto__');
    expect(Object.entries(last.attributes['tableau.__proto__'] as object)).toEqual([['polluted', true]]);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('objects named like Object.prototype members', () => {
  for (const key of ['__proto__', 'constructor', 'hasOwnProperty']) {
    it(`an object keyed ${key} is read once and its progress kept`, async () => {
      const { records, checkpoint } = await runLines([line(1), line(2)], { key, drains: 3 });
      expect(records.map((r) => r.attributes['tableau.seq'])).toEqual([1, 2]);
      expect(checkpoint).toMatchObject({ line: 2, done: true });
    });
  }
});

describe('a record with very many fields', () => {
  it('is dead-lettered naming pipeline.maxAttributesPerRecord; the rest of its batch is delivered', async () => {
    const fields: string[] = [];
    for (let i = 0; i < 200_000; i++) fields.push(`"f${i}":${i}`);
    const huge = `{"eventTime":"2026-11-29T10:00:00Z","seq":2,${fields.join(',')}}`;
    // and one over a lower cap by nesting: the items of arrays count
    const lines = [line(1), huge, line(3), line(4, { list: Array.from({ length: 40 }, (_, i) => i) }), line(5)];
    const { records, letters, checkpoint } = await runLines(lines, { maxAttributesPerRecord: 30 });
    expect(records.map((r) => r.attributes['tableau.seq']).sort()).toEqual([1, 3, 5]);
    expect(letters.map((l) => [l.line, l.reason])).toEqual([
      [2, 'record has more than 30 fields (pipeline.maxAttributesPerRecord; nested fields and array items count too)'],
      [4, 'record has more than 30 fields (pipeline.maxAttributesPerRecord; nested fields and array items count too)'],
    ]);
    expect(letters[0]!.raw.startsWith('{"eventTime":"2026-11-29T10:00:00Z","seq":2,"f0":0')).toBe(true);
    expect(checkpoint.done).toBe(true);
  });

  it('a record of 1.7 million fields, with the default cap', async () => {
    const fields: string[] = [];
    for (let i = 0; i < 1_700_000; i++) fields.push(`"${i.toString(36)}":1`);
    const huge = `{"eventTime":"2026-11-29T10:00:00Z",${fields.join(',')}}`;
    const { records, letters } = await runLines([line(1), huge, line(3)]);
    expect(records.map((r) => r.attributes['tableau.seq']).sort()).toEqual([1, 3]);
    expect(letters.map((l) => [l.line, l.reason])).toEqual([[2, 'record has more than 5000 fields (pipeline.maxAttributesPerRecord; nested fields and array items count too)']]);
  }, 60_000);
});

describe('a batch that fails while processing', () => {
  it('is split until exactly the failing lines are found and dead-lettered; the others are delivered once', async () => {
    const poison = new Set([7, 8, 23, 40]);
    const lines = Array.from({ length: 40 }, (_, i) => line(i + 1, poison.has(i + 1) ? { marker: 'KILLS-THE-BATCH' } : {}));
    let failures = 0;
    // a processing failure outside the per-line guard, for any task holding a marked line
    // (as a worker that dies, or a processor that throws, reports it)
    const wrap = (real: EncodeWorkerPool): EncodeWorkerPool =>
      Object.assign(Object.create(real) as EncodeWorkerPool, {
        run: (task: ChunkTask) => {
          const bytes = task.segments.map((s) => (s.parts ? Buffer.concat(s.parts) : s.bytes));
          if (bytes.some((b) => Buffer.from(b).includes('KILLS-THE-BATCH'))) {
            failures++;
            return Promise.reject(new ChunkProcessingError('RangeError: injected', bytes.map((b) => Uint8Array.prototype.slice.call(b)), failures % 2 === 0));
          }
          return real.run(task);
        },
      });
    const { records, letters, checkpoint, stats } = await runLines(lines, { batchSize: 16, wrap });
    const delivered = records.map((r) => Number(r.attributes['tableau.seq']));
    expect(new Set(delivered).size).toBe(delivered.length); // each once
    expect(delivered.sort((a, b) => a - b)).toEqual([...Array(40).keys()].map((i) => i + 1).filter((n) => !poison.has(n)));
    expect(letters.map((l) => l.line).sort((a, b) => a - b)).toEqual([...poison]);
    for (const l of letters) {
      expect(l.reason).toMatch(/^cannot process this line \((processing it failed|the encode worker processing it died); an error in the connector, please report it\): RangeError: injected$/);
      expect(JSON.parse(l.raw).seq).toBe(l.line);
    }
    expect(stats.deadLetteredLines).toBe(4);
    expect(checkpoint.done).toBe(true);
    expect(failures).toBeGreaterThan(4);
  });
});

describe('a line that kills its encode worker', () => {
  it('out of memory: the worker is replaced, the batch split, that line dead-lettered and the others delivered', async () => {
    // (a cap raised far enough to let a record of a million fields through to a worker's heap)
    const fields: string[] = [];
    for (let f = 0; f < 999_000; f++) fields.push(`"attribute_${f}":"v${f}"`);
    const huge = `{"eventTime":"2026-11-29T10:00:00Z","seq":2,${fields.join(',')}}`;
    const { records, letters, checkpoint } = await runLines([line(1), huge, line(3)], { workers: 1, maxAttributesPerRecord: 1_000_000 });
    expect(records.map((r) => r.attributes['tableau.seq']).sort()).toEqual([1, 3]);
    expect(letters.map((l) => l.line)).toEqual([2]);
    expect(letters[0]!.reason).toMatch(/^cannot process this line \(the encode worker processing it died; .*\): .*memory/);
    expect(checkpoint.done).toBe(true);
  }, 180_000);
});
