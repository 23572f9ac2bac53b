/**
 * DirectorySource.pending() on its own, for the identity cases that a running daemon hits only
 * in a narrow window: a copy caught while it is being made (shorter than what was read of the
 * original), and a compressed copy that appears while its original is still there.
 */
import { describe, it, expect } from 'vitest';
import { appendFileSync, copyFileSync, readFileSync, renameSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DirectorySource, directorySourceConfigSchema } from '../src/sources/directory/directory-source.js';
import { readFileHead, fileUidIdentity } from '../src/sources/directory/file-identity.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import type { SourceObject } from '../src/sources/source.js';
import { tempDir } from './support/activity-fixtures.js';
import { waitFor } from './support/daemon-process.js';

const lines = (from: number, n: number): string => Array.from({ length: n }, (_, i) => `${JSON.stringify({ eventType: 'hist_access_view', testSeq: from + i, pad: 'p'.repeat(40) })}\n`).join('');

/** A checkpoint in which `key` was read to its end (as the pipeline commits it). */
async function readToEnd(dir: string, key: string, lineCount: number): Promise<SourceCheckpoint> {
  const h = await readFileHead(join(dir, key), false);
  const size = readFileSync(join(dir, key)).length;
  return { objects: { [key]: { line: lineCount, offset: size, done: true, size, file: { dev: h.dev, ino: h.ino, fp: h.fp!, uid: fileUidIdentity(h.dev, h.ino, h.fp!) } } } };
}

function source(dir: string, extra: Record<string, unknown> = {}): DirectorySource {
  return new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: dir, ...extra }));
}

const minutesAgo = (m: number): number => (Date.now() - m * 60_000) / 1000;

describe('DirectorySource identities', () => {
  it('a compressed copy waits while its original is there, then takes over its progress (nothing read again)', async () => {
    const dir = tempDir('tao-dirsrc-');
    writeFileSync(join(dir, 'x.log.1'), lines(0, 10));
    const cp = await readToEnd(dir, 'x.log.1', 10);
    const uid = cp.objects['x.log.1']!.file!.uid;
    const src = source(dir);
    writeFileSync(join(dir, 'x.log.2.gz'), gzipSync(readFileSync(join(dir, 'x.log.1'))));
    // logrotate's compress has written the .gz, not yet removed the original
    expect(await src.pending(cp)).toEqual([]);
    expect(cp.objects['x.log.2.gz']).toBeUndefined();
    rmSync(join(dir, 'x.log.1'));
    const next = await src.pending(cp);
    expect(cp.objects['x.log.2.gz']).toMatchObject({ line: 10, file: { uid } });
    // read by line count from line 10: the 10 lines are skipped, records keep their uids
    expect(next.map((o) => ({ key: o.key, resumeAfterLine: o.resumeAfterLine, identity: o.identity, startOffset: o.startOffset }))).toEqual([{ key: 'x.log.2.gz', resumeAfterLine: 10, identity: uid, startOffset: undefined }]);
  });

  it("a new file given a deleted file's inode, beginning as it did but shorter, is read from its start; the deleted file's entry waits for a copy", async () => {
    // (ext4 hands a freed inode to the next file made: here the inode is kept aside on purpose,
    // outside the folder read, so that the new file surely gets it)
    const dir = tempDir('tao-dirsrc-');
    const aside = `${dir}-aside`;
    writeFileSync(join(dir, 'x.log'), lines(0, 5));
    const cp = await readToEnd(dir, 'x.log', 5);
    const old = cp.objects['x.log']!.file!;
    const offset = cp.objects['x.log']!.offset!;
    const src = source(dir, { finishAfter: 0 });
    renameSync(join(dir, 'x.log'), aside); // gone from the folder
    expect(await src.pending(cp)).toEqual([]);
    expect(Object.values(cp.gone ?? {})).toMatchObject([{ offset, line: 5, file: { uid: old.uid, ino: old.ino } }]);
    writeFileSync(aside, lines(0, 3)); // the same inode, the same first line, shorter than what was read
    renameSync(aside, join(dir, 'y.log'));
    expect(statSync(join(dir, 'y.log')).ino).toBe(old.ino);
    const next = await src.pending(cp);
    expect(next.map((o) => ({ key: o.key, startOffset: o.startOffset, resumeAfterLine: o.resumeAfterLine }))).toEqual([{ key: 'y.log', startOffset: 0, resumeAfterLine: 0 }]);
    expect(next[0]!.identity).not.toBe(old.uid);
    expect(Object.keys(cp.gone ?? {})).toEqual([old.uid]);
    // a copy of the deleted file turns up: it takes the entry and is read on from where that was
    writeFileSync(join(dir, 'x.log.1'), lines(0, 7));
    const later = await src.pending(cp);
    expect(cp.gone).toBeUndefined();
    expect(later.filter((o) => o.key === 'x.log.1').map((o) => ({ identity: o.identity, resumeAfterLine: o.resumeAfterLine }))).toEqual([{ identity: old.uid, resumeAfterLine: 5 }]);
  });

  it('a copy shorter than what was read of its original waits until it is quiet, then counts as read', async () => {
    const dir = tempDir('tao-dirsrc-');
    writeFileSync(join(dir, 'x.log'), lines(0, 20));
    const cp = await readToEnd(dir, 'x.log', 20);
    const src = source(dir, { finishAfter: '1m' });
    // copytruncate caught half-way through the copy: 5 lines copied so far, the original already truncated
    writeFileSync(join(dir, 'x.log.1'), lines(0, 5));
    truncateSync(join(dir, 'x.log'), 0);
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([]);
    expect(cp.objects['x.log.1']).toBeUndefined();
    // quiet for longer than finishAfter, and a newer file beside it: it is what it is, and was read already
    utimesSync(join(dir, 'x.log.1'), minutesAgo(5), minutesAgo(5));
    appendFileSync(join(dir, 'x.log'), lines(100, 2));
    const next = await src.pending(cp);
    expect(cp.objects['x.log.1']).toMatchObject({ done: true, offset: readFileSync(join(dir, 'x.log.1')).length });
    expect(next.map((o) => o.key)).toEqual(['x.log']);
    expect(next[0]).toMatchObject({ startOffset: 0, resumeAfterLine: 0, growing: true });
  });

  it('a copy that completes before it is quiet is read on from the offset', async () => {
    const dir = tempDir('tao-dirsrc-');
    writeFileSync(join(dir, 'x.log'), lines(0, 20));
    const cp = await readToEnd(dir, 'x.log', 20);
    const offset = cp.objects['x.log']!.offset!;
    const src = source(dir);
    const copy = join(dir, 'x.log.1');
    writeFileSync(copy, lines(0, 5));
    truncateSync(join(dir, 'x.log'), 0);
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([]);
    // the copy goes on: the original's 20 lines and 3 more that were not read yet
    writeFileSync(copy, lines(0, 23));
    const next = await src.pending(cp);
    expect(next.map((o) => ({ key: o.key, startOffset: o.startOffset, startLine: o.startLine }))).toEqual([{ key: 'x.log.1', startOffset: offset, startLine: 20 }]);
  });

  it('a file that begins like one still in place waits a moment for it to be truncated; then it is a file of its own', async () => {
    const dir = tempDir('tao-dirsrc-');
    writeFileSync(join(dir, 'x.log'), lines(0, 20));
    const cp = await readToEnd(dir, 'x.log', 20);
    const src = source(dir, { pollInterval: '1ms' }); // a copy settles in 2 poll intervals + 1 s
    // a copy made just now (the original not truncated yet): not read as a new file
    copyFileSync(join(dir, 'x.log'), join(dir, 'x.log.1'));
    // another file whose first line is the same, and that goes on differently
    writeFileSync(join(dir, 'y.log'), lines(0, 1) + lines(500, 3));
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([]);
    // the original is truncated: the copy takes over its progress
    truncateSync(join(dir, 'x.log'), 0);
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([]);
    expect(cp.objects['x.log.1']).toMatchObject({ line: 20, offset: readFileSync(join(dir, 'x.log.1')).length });
    // y.log still begins like a file in place (x.log.1), but it has settled: a file of its own
    const created = Date.now();
    await waitFor('the settling time', () => Date.now() - created > 1100, 5000);
    const next = await src.pending(cp);
    expect(next.map((o) => ({ key: o.key, startOffset: o.startOffset }))).toEqual([{ key: 'y.log', startOffset: 0 }]);
  });

  it('a crash before a file\'s first checkpoint, then copytruncate: the copy\'s records get the uids they were sent with', async () => {
    const dir = tempDir('tao-dirsrc-');
    const active = join(dir, 'backgrounder_0-cepp-canonical-events.log');
    writeFileSync(active, lines(0, 10));
    const identityOf = async (objects: SourceObject[], key: string): Promise<string | undefined> => {
      const o = objects.find((x) => x.key === key);
      if (o) for await (const _ of o.open(new AbortController().signal)); // (named when read)
      return o?.identity;
    };
    const sent = await identityOf(await source(dir).pending({ objects: {} }), 'backgrounder_0-cepp-canonical-events.log');
    expect(sent).toBeDefined();
    // the daemon is killed before it saved anything of the file; meanwhile logrotate copies and truncates it
    copyFileSync(active, `${active}.1`);
    truncateSync(active, 0);
    appendFileSync(active, lines(10, 3));
    const objects = await source(dir).pending({ objects: {} });
    expect(await identityOf(objects, 'backgrounder_0-cepp-canonical-events.log.1')).toBe(sent);
    expect(await identityOf(objects, 'backgrounder_0-cepp-canonical-events.log')).not.toBe(sent);
  });

  it('hidden folders are not walked; a file in a folder linked twice is listed once', async () => {
    const dir = tempDir('tao-dirsrc-');
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, '.hidden'));
    writeFileSync(join(dir, 'a', 'one.log'), lines(0, 2));
    writeFileSync(join(dir, '.hidden', 'two.log'), lines(2, 2));
    copyFileSync(join(dir, 'a', 'one.log'), join(dir, 'a', 'one.log.tmp'));
    const { symlinkSync } = await import('node:fs');
    symlinkSync(join(dir, 'a'), join(dir, 'b'));
    const out = await source(dir).pending({ objects: {} });
    expect(out.map((o) => o.key)).toEqual(['a/one.log']);
  });
});

describe('DirectorySource.checkpointChanged', () => {
  /** Reads every object and commits it done, as the pipeline does once every record is acknowledged. */
  async function readAndCommit(objects: SourceObject[], cp: SourceCheckpoint): Promise<void> {
    for (const o of objects) {
      const parts: Buffer[] = [];
      for await (const b of o.open(new AbortController().signal)) parts.push(Buffer.from(b));
      if (o.skipped) continue;
      const bytes = Buffer.concat(parts);
      const lineCount = bytes.toString().split('\n').length - 1;
      cp.objects[o.key] = {
        line: o.resumeAfterLine + lineCount,
        done: true,
        ...(o.size !== undefined ? { size: o.size } : {}),
        ...(o.startOffset !== undefined ? { offset: o.startOffset + bytes.length } : {}),
        ...(o.file ? { file: o.file } : {}),
      };
    }
  }

  it('says whether a listing changed the checkpoint, exactly when its text changed', async () => {
    const dir = tempDir('tao-dirsrc-');
    // each hour file begins with a line of its own: one that began as x.log does could be taken
    // for a copy of x.log.1's entry set aside in `gone` (and whether it is depends on whether the
    // filesystem gives it x.log.1's freed inode, which a copy never has)
    let hourFiles = 0;
    const hour = (mdh: string, name: string): string => {
      const key = `pod=p/siteLuid=s/y=2026/m=${mdh.slice(0, 2)}/d=${mdh.slice(2, 4)}/h=${mdh.slice(4)}/eventType=hist_access_view/${name}`;
      mkdirSync(join(dir, key, '..'), { recursive: true });
      writeFileSync(join(dir, key), lines(1000 * ++hourFiles, 3));
      return key;
    };
    const src = source(dir, { finishAfter: 0 });
    const cp: SourceCheckpoint = { objects: {} };
    const said: boolean[] = [];
    const step = async (change: () => void, commit = true): Promise<SourceObject[]> => {
      change();
      const before = JSON.stringify(cp);
      const objects = await src.pending(cp);
      expect(src.checkpointChanged).toBe(JSON.stringify(cp) !== before);
      said.push(src.checkpointChanged);
      if (commit) await readAndCommit(objects, cp);
      return objects;
    };

    await step(() => {
      hour('112901', 'a.txt');
      writeFileSync(join(dir, 'x.log'), lines(0, 5));
    }); // the first watermark
    await step(() => undefined); // nothing new
    await step(() => appendFileSync(join(dir, 'x.log'), lines(5, 2))); // grown: read on, the entry as it was
    await step(() => {
      renameSync(join(dir, 'x.log'), join(dir, 'x.log.1')); // rotation: the entry moves
      writeFileSync(join(dir, 'x.log'), lines(100, 2));
    });
    await step(() => undefined);
    await step(() => rmSync(join(dir, 'x.log.1'))); // gone: kept aside for a copy
    await step(() => undefined);
    await step(() => hour('112902', 'b.txt')); // a newer hour: the watermark moves an hour (48 h back)
    await step(() => hour('112802', 'late.txt')); // a late file in an older hour, within the lookback: read, nothing else
    await step(() => hour('120502', 'c.txt')); // days later: the watermark passes the finished hours, whose entries go
    cp.gone = {}; // as a checkpoint file may hold it
    await step(() => undefined, false);
    delete cp.objects['x.log']!.file; // an entry from before identities were kept
    await step(() => undefined, false);
    expect(said).toEqual([true, false, false, true, false, true, false, true, false, true, true, true]);
    expect(Object.keys(cp.objects).filter((k) => k.includes('d=29'))).toEqual([]);
  });
});

describe('DirectorySource: hours behind the watermark', () => {
  it('are not walked, unless a file there is still being read; nothing is lost, fewer calls are made', async () => {
    const { LocalSyncCalls } = await import('../src/core/local-sync-calls.js');
    const dir = tempDir('tao-dirsrc-');
    const keyOf = (h: number, i: number): string => `pod=p/siteLuid=s/y=2026/m=11/d=29/h=${String(h).padStart(2, '0')}/eventType=hist_access_view/f${i}.txt`;
    for (let h = 0; h < 10; h++)
      for (let i = 0; i < 3; i++) {
        mkdirSync(join(dir, keyOf(h, i), '..'), { recursive: true });
        writeFileSync(join(dir, keyOf(h, i)), lines(h * 10 + i, 2));
      }
    const calls = new LocalSyncCalls(true, async () => 0xef53);
    const make = (): DirectorySource => new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: dir, lookbackHours: 2 }), undefined, undefined, {}, calls);
    const src = make();
    const cp: SourceCheckpoint = { objects: {} };
    const first = await src.pending(cp);
    expect(cp.position).toEqual({ watermark: '2026-11-29T07' });
    expect(first.map((o) => o.key)).toEqual([7, 8, 9].flatMap((h) => [0, 1, 2].map((i) => keyOf(h, i))));
    await calls.settled(statSync(dir).dev);

    // h=03's f1 was read one line in when the watermark passed it (a restart mid-file)
    const partial = keyOf(3, 1);
    const firstLine = lines(31, 1).length;
    const h = await readFileHead(join(dir, partial), true);
    cp.objects[partial] = { line: 1, offset: firstLine, file: { dev: h.dev, ino: h.ino, fp: h.fp!, uid: fileUidIdentity(h.dev, h.ino, h.fp!) } };
    for (const o of first) {
      const f = await readFileHead(join(dir, o.key), true);
      cp.objects[o.key] = { line: 2, done: true, size: o.size!, offset: o.size!, file: { dev: f.dev, ino: f.ino, fp: f.fp!, uid: fileUidIdentity(f.dev, f.ino, f.fp!) } };
    }
    writeFileSync(join(dir, keyOf(1, 9)), lines(999, 1)); // lands late in an hour long done: not read (as before)

    const fullWalk = make(); // the same tree listed without the watermark
    const before = calls.calls;
    await fullWalk.pending({ objects: {} });
    const everything = calls.calls - before;
    const again = calls.calls;
    const next = await src.pending(cp);
    const pruned = calls.calls - again;
    expect(next.map((o) => ({ key: o.key, startOffset: o.startOffset, resumeAfterLine: o.resumeAfterLine }))).toEqual([{ key: partial, startOffset: firstLine, resumeAfterLine: 1 }]);
    expect(cp.objects[partial]).toBeDefined(); // not taken for gone
    expect(cp.gone).toBeUndefined();
    // the 6 hours left out held 19 files (3 each, and the late one)
    expect(everything - pruned).toBeGreaterThanOrEqual(19);
  });
});
