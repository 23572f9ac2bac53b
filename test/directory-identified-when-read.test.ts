/**
 * A finished file the directory source had not read before is opened once: its identity comes
 * from the handle and the first bytes its read starts with (SourceObject.open), not from a head
 * read at listing. These tests hold that to what the head read gave (the same identity, offsets,
 * gzip read to its end) and to what happens when the file changes between the listing and the
 * read: removed or replaced, it is skipped with no progress and read at the next listing.
 * Real files, a real OTLP receiver, the encode stage in-process.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { join, dirname } from 'node:path';
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { DirectorySource, directorySourceConfigSchema } from '../src/sources/directory/directory-source.js';
import { contentUidIdentity, readFileHead } from '../src/sources/directory/file-identity.js';
import type { Source, SourceObject } from '../src/sources/source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../src/pipeline/dead-letter-store.js';
import { PipelineStats } from '../src/pipeline/pipeline-stats.js';
import { CheckpointSaver, DEFAULT_PIPELINE_SETTINGS, SourceRunner } from '../src/pipeline/source-runner.js';
import { EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import { OtlpDestination } from '../src/export/otlp/destination.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { silentLogger } from '../src/daemon/logger.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';

const hourKey = (name: string): string => `pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/${name}`;
const records = (from: number, n: number): string =>
  Array.from({ length: n }, (_, i) => `${JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u', testSeq: from + i, pad: 'p'.repeat(30) })}\n`).join('');

function put(root: string, key: string, bytes: string | Buffer): string {
  const full = join(root, key);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, bytes);
  return full;
}

async function readAll(obj: SourceObject): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of obj.open(new AbortController().signal)) parts.push(Buffer.from(b));
  return Buffer.concat(parts);
}

const source = (root: string): DirectorySource => new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: root }));

describe('a finished file named when it is read', () => {
  it('gets the identity a head read gives; plain by byte offset to the size listed, gzip by line count', async () => {
    const root = tempDir('tao-idread-');
    const plain = put(root, hourKey('a.txt'), records(0, 7));
    const gz = put(root, hourKey('b.txt'), gzipSync(records(100, 5)));
    const empty = put(root, hourKey('c.txt'), '');
    const cp: SourceCheckpoint = { objects: {} };
    const objects = await source(root).pending(cp);
    expect(objects.map((o) => o.key)).toEqual([hourKey('a.txt'), hourKey('b.txt')]); // the empty file: nothing to read yet

    expect(await readAll(objects[0]!)).toEqual(readFileSync(plain));
    const hp = await readFileHead(plain, true);
    expect(objects[0]).toMatchObject({
      identity: contentUidIdentity(hp.fp!),
      file: { dev: hp.dev, ino: hp.ino, fp: hp.fp, uid: contentUidIdentity(hp.fp!) },
      startOffset: 0,
      startLine: 0,
      size: readFileSync(plain).length,
    });
    expect(objects[0]!.skipped).toBeUndefined();

    expect(await readAll(objects[1]!)).toEqual(readFileSync(gz)); // the raw gzip bytes: the pipeline gunzips them
    const hg = await readFileHead(gz, true);
    expect(hg.gzip).toBe(true);
    expect(objects[1]).toMatchObject({ identity: contentUidIdentity(hg.fp!), file: { fp: hg.fp }, size: readFileSync(gz).length });
    expect(objects[1]!.startOffset).toBeUndefined();
    expect(existsSync(empty)).toBe(true);
  });

  it('a gzip file still being written when listed is read to its end, not to the size listed', async () => {
    const root = tempDir('tao-idread-');
    const whole = gzipSync(records(0, 400));
    const full = put(root, hourKey('a.txt'), whole.subarray(0, 200));
    const [obj] = await source(root).pending({ objects: {} });
    writeFileSync(full, whole); // the copy completes before the read
    expect(await readAll(obj!)).toEqual(whole);
  });

  it('two files that begin alike (a file truncated and written again before) get uids of their own', async () => {
    const root = tempDir('tao-idread-');
    put(root, hourKey('a.txt'), records(0, 3));
    put(root, hourKey('b.txt'), records(0, 3));
    const objects = await source(root).pending({ objects: {} });
    for (const o of objects) await readAll(o);
    const [a, b] = objects;
    expect(a!.file!.fp).toBe(b!.file!.fp);
    expect(a!.identity).not.toBe(b!.identity);
  });
});

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

/** The directory source, with something done to the tree between its listing and the reads. */
class ChangedAfterListing implements Source {
  readonly type = 'directory';
  readonly id: string;
  readonly pollIntervalMs = 10;
  readonly readConcurrency = 1;
  afterListing: (() => void) | undefined;
  constructor(private readonly inner: DirectorySource) {
    this.id = inner.id;
  }
  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    const objects = await this.inner.pending(checkpoint);
    this.afterListing?.();
    this.afterListing = undefined;
    return objects;
  }
}

describe('a file changed between its listing and its read', () => {
  it('removed or replaced: skipped with no progress, read at the next listing; nothing lost, nothing twice', async () => {
    receiver = await startOtlpReceiver();
    const root = tempDir('tao-idread-');
    const state = tempDir('tao-idread-state-');
    const [ka, kb, kc] = [hourKey('a.txt'), hourKey('b.txt'), hourKey('c.txt')];
    put(root, ka, records(0, 5));
    const b = put(root, kb, records(100, 5));
    const c = put(root, kc, records(200, 5));
    const src = new ChangedAfterListing(source(root));
    src.afterListing = () => {
      renameSync(b, `${b}.moved-away`); // gone under its name (not a wanted name any more)
      const fresh = `${c}.tmp`;
      writeFileSync(fresh, records(300, 4)); // another file renamed over it: another inode
      renameSync(fresh, c);
    };
    const log = silentLogger();
    const deadLetters = new DeadLetterStore(join(state, 'dead-letter'));
    const checkpoints = new CheckpointSaver(new CheckpointStore(state), deadLetters, 0, log);
    const pool = new EncodeWorkerPool(0, { catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });
    const runner = new SourceRunner(
      src,
      { tenantId: 't', pool, destinations: [new OtlpDestination({ type: 'otlp', endpoint: receiver.url })], deadLetters, checkpoints, stats: new PipelineStats(), log, settings: { ...DEFAULT_PIPELINE_SETTINGS, batchSize: 3 }, driftSeen: new Set() },
      new AbortController().signal,
    );
    const seqs = (): number[] => receiver!.records().map((r) => r.attributes['tableau.test_seq'] as number).sort((x, y) => x - y);
    try {
      await runner.drain(new AbortController().signal);
      expect(seqs()).toEqual([0, 1, 2, 3, 4]);
      const objects = checkpoints.source(src.id).objects;
      expect(Object.keys(objects)).toEqual([ka]);

      renameSync(`${b}.moved-away`, b); // back under its name
      await runner.drain(new AbortController().signal);
      expect(seqs()).toEqual([0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 300, 301, 302, 303]);
      const after = checkpoints.source(src.id).objects;
      expect(Object.keys(after).sort()).toEqual([ka, kb, kc]);
      expect(after[kc]).toMatchObject({ line: 4, done: true, offset: readFileSync(c).length });

      await runner.drain(new AbortController().signal); // nothing new
      expect(seqs()).toHaveLength(14);
      const letters = join(state, 'dead-letter');
      expect(existsSync(letters) ? readdirSync(letters) : []).toEqual([]);
    } finally {
      await pool.close();
      deadLetters.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
