/**
 * Synchronous file calls where they are safe (src/core/local-sync-calls.ts): only on
 * a filesystem found to be local, never on a network or FUSE one, not after a slow call, and in
 * slices that let the event loop turn; and the directory source using them for its listing and
 * small files, and the pool for big files or when `syncLocalReads` is off. The filesystem's type
 * is the one thing given (the `statfs` answer): the files are real, on the test machine's disk.
 */
import { describe, it, expect } from 'vitest';
import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { LocalSyncCalls, SLICE_MS, SLOW_CALL_MS } from '../src/core/local-sync-calls.js';
import { DirectorySource, directorySourceConfigSchema } from '../src/sources/directory/directory-source.js';
import type { SourceObject } from '../src/sources/source.js';
import { readFileHead } from '../src/sources/directory/file-identity.js';
import { fileChunks } from '../src/sources/directory/file-chunks.js';
import { FolderCache, listFiles } from '../src/sources/directory/directory-listing.js';
import { tempDir } from './support/activity-fixtures.js';

const EXT4 = 0xef53;
const NFS = 0x6969;
const FUSE = 0x65735546;

/** Blocks the thread for `ms` (a call that is slow, or a slice of work). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('LocalSyncCalls', () => {
  it('a device is allowed once its filesystem is found to be local; network, FUSE and unknown ones never', async () => {
    const types = new Map<string, number>([
      ['/local', EXT4],
      ['/nfs', NFS],
      ['/bucket', FUSE],
    ]);
    const probed: string[] = [];
    const calls = new LocalSyncCalls(true, async (path) => {
      probed.push(path);
      const t = types.get(path);
      if (t === undefined) throw new Error('ENOENT');
      return t;
    });
    // not known yet: asynchronous, and found out once
    expect([calls.allows(1, '/local'), calls.allows(2, '/nfs'), calls.allows(3, '/bucket'), calls.allows(4, '/gone')]).toEqual([false, false, false, false]);
    expect(calls.allows(1, '/local')).toBe(false);
    await Promise.all([1, 2, 3, 4].map((d) => calls.settled(d)));
    expect([calls.allows(1, '/local'), calls.allows(2, '/nfs'), calls.allows(3, '/bucket')]).toEqual([true, false, false]);
    expect(probed).toEqual(['/local', '/nfs', '/bucket', '/gone']);
    expect(calls.allows(4, '/gone')).toBe(false); // (a failed probe: asked again after a while, see below)

    const off = new LocalSyncCalls(false, async () => EXT4);
    off.allows(1, '/local');
    await off.settled(1);
    expect(off.allows(1, '/local')).toBe(false);
  });

  it('a probe that failed (its path removed meanwhile) is tried again later, not taken for a verdict', async () => {
    let fail = true;
    const calls = new LocalSyncCalls(
      true,
      async () => {
        if (fail) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
        return EXT4;
      },
      0, // (at once)
    );
    calls.allows(5, '/removed-meanwhile');
    await calls.settled(5);
    fail = false;
    expect(calls.allows(5, '/still-there')).toBe(false); // probed again now
    await calls.settled(5);
    expect(calls.allows(5, '/still-there')).toBe(true);

    let probes = 0;
    const failing = new LocalSyncCalls(true, async () => (probes++, Promise.reject(new Error('EACCES'))), 60_000);
    for (let i = 0; i < 5; i++) {
      expect(failing.allows(6, '/x')).toBe(false);
      await failing.settled(6);
    }
    expect(probes).toBe(1); // not again within the minute
  });

  it(`a call slower than ${SLOW_CALL_MS} ms sends its device back to the pool, with one warning`, async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line) as Record<string, unknown>) });
    const calls = new LocalSyncCalls(true, async () => EXT4);
    calls.allows(7, '/x');
    calls.allows(8, '/y');
    await Promise.all([calls.settled(7), calls.settled(8)]);
    expect(calls.run(7, () => 42, log)).toBe(42);
    expect(calls.allows(7, '/x')).toBe(true);
    calls.run(7, () => busy(SLOW_CALL_MS + 10), log);
    expect(calls.allows(7, '/x')).toBe(false);
    expect(calls.allows(8, '/y')).toBe(true); // another device keeps its calls
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ device: 7, msg: expect.stringContaining('slow') });
    expect(warnings[0]!.ms as number).toBeGreaterThan(SLOW_CALL_MS);
  });

  it(`after ${SLICE_MS} ms of synchronous work the event loop is let to turn before the next call`, async () => {
    const calls = new LocalSyncCalls(true, async () => EXT4);
    calls.run(1, () => busy(SLICE_MS + 1));
    let turned = false;
    setImmediate(() => (turned = true));
    await calls.breathe();
    expect(turned).toBe(true);
  });
});

const hourKey = (name: string): string => `pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view/${name}`;
const records = (n: number, pad = 30): string => Array.from({ length: n }, (_, i) => `${JSON.stringify({ eventTime: '2026-11-29T01:00:00Z', testSeq: i, pad: 'p'.repeat(pad) })}\n`).join('');

function put(root: string, key: string, text: string): void {
  mkdirSync(dirname(join(root, key)), { recursive: true });
  writeFileSync(join(root, key), text);
}

async function readAll(obj: SourceObject): Promise<string> {
  const parts: Buffer[] = [];
  for await (const b of obj.open(new AbortController().signal)) parts.push(Buffer.from(b));
  return Buffer.concat(parts).toString();
}

describe('the directory source on a local filesystem', () => {
  it('lists and reads files with synchronous calls once the device is known, a big file in several reads', async () => {
    const root = tempDir('tao-synccalls-');
    put(root, hourKey('small-1.txt'), records(5));
    put(root, hourKey('small-2.txt'), records(5));
    const big = records(2_000, 200); // over one 256 KiB read
    put(root, hourKey('big.txt'), big);
    expect(big.length).toBeGreaterThan(256 * 1024);
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const src = new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: root }), undefined, undefined, {}, calls);

    // the first listing finds the device out (its first calls through the pool)
    expect(await src.pending({ objects: {} })).toHaveLength(3);
    await calls.settled(statSync(root).dev);

    const before = calls.calls;
    const objects = await src.pending({ objects: {} });
    const listing = calls.calls;
    expect(listing - before).toBeGreaterThanOrEqual(3); // a stat per file at least
    const byName = new Map(objects.map((o) => [o.key.slice(o.key.lastIndexOf('/') + 1), o]));
    expect(await readAll(byName.get('small-1.txt')!)).toBe(records(5));
    const afterSmall = calls.calls;
    expect(afterSmall - listing).toBe(4); // open, fstat, read, close
    expect(await readAll(byName.get('big.txt')!)).toBe(big);
    // open, fstat, a read per 256 KiB, close
    expect(calls.calls - afterSmall).toBe(3 + Math.ceil(big.length / (256 * 1024)));
    expect(byName.get('small-1.txt')!.file?.ino).toBe(statSync(join(root, hourKey('small-1.txt'))).ino);
  });

  it('a head read (a file that may be a copy, a growing file) gives with synchronous calls what it gives through the pool', async () => {
    const root = tempDir('tao-synccalls-');
    put(root, 'x.log', records(3));
    const path = join(root, 'x.log');
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const dev = statSync(root).dev;
    calls.allows(dev, root);
    await calls.settled(dev);
    const pooled = await readFileHead(path, false);
    expect(calls.calls).toBe(0);
    expect(await readFileHead(path, false, { calls, dev })).toEqual(pooled);
    expect(calls.calls).toBe(4); // open, fstat, read, close
    expect(pooled.fp).not.toBeNull();
  });

  it('a long listing with synchronous calls lets the event loop turn along the way', async () => {
    const root = tempDir('tao-synccalls-');
    // (in one folder: a folder is stat'ed through the pool, which would let the loop turn anyway)
    for (let i = 0; i < 3_000; i++) writeFileSync(join(root, `x-${i}.txt`), 'x\n');
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const dev = statSync(root).dev;
    calls.allows(dev, root);
    await calls.settled(dev);
    const src = new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: root }), undefined, undefined, {}, calls);
    const before = calls.calls;
    let turns = 0; // of the loop, once the synchronous calls have begun
    let listing = true;
    const turn = (): void => {
      if (calls.calls - before > 0) turns++;
      if (listing) setImmediate(turn);
    };
    setImmediate(turn);
    const started = performance.now();
    await src.pending({ objects: {} });
    const took = performance.now() - started;
    listing = false;
    expect(calls.calls - before).toBeGreaterThanOrEqual(3_000); // every stat synchronous
    // 3 000 synchronous calls and more take longer than two slices; the loop turned in between
    expect(took).toBeGreaterThanOrEqual(2 * SLICE_MS);
    expect(turns).toBeGreaterThanOrEqual(1);
  });

  it('a file of many reads with synchronous calls lets the event loop turn along the way', async () => {
    const root = tempDir('tao-synccalls-');
    const path = join(root, 'big.log');
    const text = records(40_000, 180); // some 8 MB, read 1 KiB at a time: 8 000 synchronous reads
    writeFileSync(path, text);
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const dev = statSync(root).dev;
    calls.allows(dev, root);
    await calls.settled(dev);
    let turns = 0; // of the loop, once the synchronous reads have begun
    let reading = true;
    const turn = (): void => {
      if (calls.calls > 0) turns++;
      if (reading) setImmediate(turn);
    };
    setImmediate(turn);
    const parts: Buffer[] = [];
    const started = performance.now();
    for await (const b of fileChunks(path, { expectedSize: text.length, maxReadBytes: 1024, sync: { calls, dev } })) parts.push(Buffer.from(b));
    const took = performance.now() - started;
    reading = false;
    expect(Buffer.concat(parts).toString()).toBe(text);
    expect(calls.calls).toBe(3 + Math.ceil(text.length / 1024)); // open, fstat, every read, close
    // 8 000 synchronous reads take longer than two slices; the loop turned in between
    expect(took).toBeGreaterThanOrEqual(2 * SLICE_MS);
    expect(turns).toBeGreaterThanOrEqual(1);
  });

  it("a folder is stat'ed with a synchronous call once a listing found it on its parent's device; a symlinked one never", async () => {
    const root = tempDir('tao-synccalls-');
    put(root, 'a/b/1.txt', 'x\n');
    put(root, 'a/b/2.txt', 'x\n');
    put(root, 'a/c/3.txt', 'x\n');
    symlinkSync(join(root, 'a', 'c'), join(root, 'link')); // (the folder a/c again: walked once)
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const dev = statSync(root).dev;
    calls.allows(dev, root);
    await calls.settled(dev);
    const cache = new FolderCache(0); // (names reused at once: only the stats are counted)
    const wanted = (): boolean => true;
    // (a folder changed in the same millisecond as its names are read is read again: the clock past its last change first)
    const changed = Math.max(...[root, join(root, 'a'), join(root, 'a', 'b'), join(root, 'a', 'c')].map((d) => Math.max(statSync(d).ctimeMs, statSync(d).mtimeMs)));
    while (Date.now() <= changed + 1) await new Promise((r) => setImmediate(r));

    const first = await listFiles(root, wanted, undefined, cache, calls);
    // four folders' names read (root, a, a/b, a/c) and three files stat'ed; the folders a, a/b,
    // a/c not yet known to be on the root's device, and the link: stat'ed through the pool
    expect(calls.calls).toBe(4 + 3);
    const before = calls.calls;
    const second = await listFiles(root, wanted, undefined, cache, calls);
    expect(second).toEqual(first);
    // the three files and the three folders now; the symlinked folder still through the pool
    expect(calls.calls - before).toBe(3 + 3);
    expect(second.map((f) => f.key)).toEqual(['a/b/1.txt', 'a/b/2.txt', 'a/c/3.txt']);
  });

  it('syncLocalReads: false makes every call through the pool', async () => {
    const root = tempDir('tao-synccalls-');
    put(root, hourKey('small.txt'), records(5));
    const calls = new LocalSyncCalls(true, async () => EXT4);
    const dev = statSync(root).dev;
    calls.allows(dev, root);
    await calls.settled(dev);
    const src = new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: root, syncLocalReads: false }), undefined, undefined, {}, calls);
    const [obj] = await src.pending({ objects: {} });
    expect(await readAll(obj!)).toBe(records(5));
    expect(calls.calls).toBe(0);
  });
});
