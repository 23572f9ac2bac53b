/**
 * The encode gate (TenantContext.encodeGate): while a tenant's enrichment data loads from its
 * lookup files, the sources read ahead one batch and no batch is encoded or sent; once the gate
 * opens everything goes out once; a gate that closes for good (reading stopped before the load)
 * sends nothing and leaves the checkpoint where it was, so the next start reads those lines
 * again. Real OTLP receiver and destination, the encode stage in-process (workers: 0).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';
import type { Source, SourceObject } from '../src/sources/source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../src/pipeline/dead-letter-store.js';
import { PipelineStats } from '../src/pipeline/pipeline-stats.js';
import { CheckpointSaver, DEFAULT_PIPELINE_SETTINGS, SourceRunner, type TenantContext } from '../src/pipeline/source-runner.js';
import { EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import { OtlpDestination } from '../src/export/otlp/destination.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { silentLogger } from '../src/daemon/logger.js';
import { createEnrichmentRefresher } from '../src/daemon/enrichment-refresher.js';
import { enrichmentConfigSchema } from '../src/daemon/enrichment-config.js';

const KEY = 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/a.txt';
const LINES = 50;
const BATCH = 10;

/** One object of 50 lines, one line a chunk; counts the lines it handed out. */
class CountingSource implements Source {
  readonly type = 'test';
  readonly id = 'counting';
  readonly pollIntervalMs = 10;
  yielded = 0;
  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    const p = checkpoint.objects[KEY];
    if (p?.done) return [];
    const self = this;
    const from = p?.line ?? 0;
    return [
      {
        key: KEY,
        identity: 'test\n' + KEY,
        resumeAfterLine: from,
        async *open() {
          for (let i = 0; i < LINES; i++) {
            self.yielded++;
            yield Buffer.from(JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u', testSeq: i + 1 }) + '\n');
          }
        },
      },
    ];
  }
}

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function setup(dir: string, gate: Promise<boolean> | undefined) {
  receiver ??= await startOtlpReceiver();
  const log = silentLogger();
  const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
  const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, 0, log);
  const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });
  const ctx: TenantContext = {
    tenantId: 't',
    pool,
    destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })],
    deadLetters,
    checkpoints,
    stats: new PipelineStats(),
    log,
    settings: { ...DEFAULT_PIPELINE_SETTINGS, batchSize: BATCH },
    driftSeen: new Set(),
    ...(gate ? { encodeGate: gate } : {}),
  };
  const source = new CountingSource();
  return { runner: new SourceRunner(source, ctx, new AbortController().signal), source, checkpoints, deadLetters };
}

const seqs = (): number[] => receiver!.records().map((r) => r.attributes['tableau.test_seq'] as number);

/** Let every callback that is ready run, a number of event-loop turns (no timer involved). */
async function settleTurns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await turn();
}

describe('the encode gate', () => {
  it('reads one batch ahead while closed, sends nothing, then everything once when it opens', async () => {
    let open!: (v: boolean) => void;
    const gate = new Promise<boolean>((r) => (open = r));
    const dir = tempDir();
    const { runner, source, checkpoints } = await setup(dir, gate);
    const drained = runner.drain(new AbortController().signal);
    // the listing and the first batch's lines are read while the gate is closed...
    while (source.yielded < BATCH) await turn();
    await settleTurns();
    // ...and reading waits there: no further than the batch that waits (and the line that filled it)
    expect(source.yielded).toBeGreaterThanOrEqual(BATCH);
    expect(source.yielded).toBeLessThanOrEqual(BATCH + 1);
    expect(receiver!.records()).toHaveLength(0);
    expect(checkpoints.source('counting').objects[KEY]?.line ?? 0).toBe(0);
    open(true);
    await drained;
    expect(seqs().sort((a, b) => a - b)).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));
    expect(checkpoints.source('counting').objects[KEY]).toMatchObject({ line: LINES, done: true });
  });

  it('closed for good (reading stopped first): nothing sent, the checkpoint unmoved, the next start sends every line once', async () => {
    const dir = tempDir();
    const first = await setup(dir, Promise.resolve(false));
    const stop = new AbortController();
    const drained = first.runner.drain(stop.signal);
    while (first.source.yielded < BATCH) await turn();
    stop.abort();
    await drained;
    expect(receiver!.records()).toHaveLength(0);
    expect(first.checkpoints.source('counting').objects[KEY]?.line ?? 0).toBe(0);
    expect(first.checkpoints.source('counting').objects[KEY]?.done ?? false).toBe(false);
    first.deadLetters.close();

    // the next start, from the same state folder, with no gate
    const second = await setup(dir, undefined);
    await second.runner.drain(new AbortController().signal);
    expect(seqs().sort((a, b) => a - b)).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));
    expect(second.checkpoints.source('counting').objects[KEY]).toMatchObject({ line: LINES, done: true });
  });
});

describe('which tenants read ahead while their enrichment loads', () => {
  const refresherFor = (enrichment: Record<string, unknown>) =>
    createEnrichmentRefresher({ tenantId: 't', config: enrichmentConfigSchema.parse(enrichment), sourceConfigs: [], sources: [], baseDir: tempDir(), env: { TCM_PAT: 'x' }, log: silentLogger() });

  it('lookup files only: yes; a kind from TCM: no (its listings would add to the requests of a TCM asked for the lists)', async () => {
    const files = refresherFor({ users: { file: 'users.csv' }, sites: { file: 'sites.csv' } });
    expect(files.readAheadWhileLoading).toBe(true);
    const tcm = refresherFor({ users: 'tcm', sites: { file: 'sites.csv' }, tcm: { url: 'https://tcm.example', tenantId: '5f0b6c1e-2a43-4c7e-9d1b-7e3f8a9c0d21', patEnv: 'TCM_PAT' } });
    expect(tcm.readAheadWhileLoading).toBe(false);
    await Promise.all([files.stop(), tcm.stop()]);
  });
});
