/**
 * The directory source's polls of a tree with history (settledRecheckInterval): a file of an hour
 * partition read to its end, in a folder whose names have not changed, is taken as it was without
 * a `stat` until the next recheck; a file added (its folder changes) is seen at the next poll, a
 * file grown in place at the recheck, and a file handed out for reading within the interval (a
 * copy still being written) at every poll. Real files; the checkpoint entries are the ones the
 * pipeline commits after reading a file to its end.
 */
import { describe, it, expect } from 'vitest';
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DirectorySource, directorySourceConfigSchema } from '../src/sources/directory/directory-source.js';
import { FOLDER_SETTLE_MS } from '../src/sources/directory/directory-listing.js';
import { readFileHead, fileUidIdentity } from '../src/sources/directory/file-identity.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { tempDir } from './support/activity-fixtures.js';
import { waitFor } from './support/daemon-process.js';

const FOLDER = 'y=2026/m=11/d=29/h=05/eventType=hist_access_view';
const lines = (from: number, n: number): string => Array.from({ length: n }, (_, i) => `${JSON.stringify({ eventType: 'hist_access_view', testSeq: from + i })}\n`).join('');

function put(dir: string, key: string, text: string): void {
  mkdirSync(dirname(join(dir, key)), { recursive: true });
  writeFileSync(join(dir, key), text);
}

/** The entry the pipeline commits once `key` is read to its end. */
async function readToEnd(cp: SourceCheckpoint, dir: string, key: string, lineCount: number): Promise<void> {
  const h = await readFileHead(join(dir, key), true);
  const size = readFileSync(join(dir, key)).length;
  cp.objects[key] = { line: lineCount, offset: size, done: true, size, file: { dev: h.dev, ino: h.ino, fp: h.fp!, uid: fileUidIdentity(h.dev, h.ino, h.fp!) } };
}

/** Until the folder's last change is old enough for its names to be kept between listings. */
async function folderSettled(dir: string): Promise<void> {
  const st = statSync(join(dir, FOLDER));
  const changed = Math.max(st.mtimeMs, st.ctimeMs);
  await waitFor('the folder settled', () => Date.now() - changed > FOLDER_SETTLE_MS + 10, 10_000, 20);
}

function source(dir: string, every: string): DirectorySource {
  return new DirectorySource(directorySourceConfigSchema.parse({ type: 'directory', path: dir, settledRecheckInterval: every }));
}

/** A tree with one hour file, `a`, read to its end, its folder settled; the source's first poll done (a recheck of every file). */
async function settledTree(every: string): Promise<{ dir: string; a: string; cp: SourceCheckpoint; src: DirectorySource; firstPollAt: number }> {
  const dir = tempDir('tao-settled-');
  const a = `${FOLDER}/a.txt`;
  put(dir, a, lines(0, 3));
  const cp: SourceCheckpoint = { objects: {} };
  await readToEnd(cp, dir, a, 3);
  await folderSettled(dir);
  const src = source(dir, every);
  const firstPollAt = Date.now();
  expect(await src.pending(cp)).toEqual([]);
  return { dir, a, cp, src, firstPollAt };
}

describe('the polls of a tree with history', () => {
  it('a file read to its end is taken as it was while its folder does not change; a file added is seen at the next poll', async () => {
    const { dir, a, cp, src } = await settledTree('1h');
    const sizeRead = cp.objects[a]!.size!;

    appendFileSync(join(dir, a), lines(3, 2)); // grown in place: its folder does not change
    expect(await src.pending(cp)).toEqual([]); // not stat'ed: not seen until the recheck
    expect(await src.pending(cp)).toEqual([]);

    put(dir, `${FOLDER}/b.txt`, lines(10, 2)); // a file added: the folder changes, its files are stat'ed
    const next = await src.pending(cp);
    expect(next.map((o) => o.key)).toEqual([a, `${FOLDER}/b.txt`]);
    expect(next[0]).toMatchObject({ startOffset: sizeRead, resumeAfterLine: 3, size: statSync(join(dir, a)).size });
  });

  it('a file grown in place is seen once the interval has passed', async () => {
    const { dir, a, cp, src, firstPollAt } = await settledTree('200ms');
    appendFileSync(join(dir, a), lines(3, 2));
    await waitFor('the interval passed', () => Date.now() - firstPollAt > 250, 5_000, 10);
    expect((await src.pending(cp)).map((o) => ({ key: o.key, startOffset: o.startOffset }))).toEqual([{ key: a, startOffset: cp.objects[a]!.size }]);
  });

  it('a file handed out for reading within the interval is stat\'ed at every poll (a copy still being written into its folder)', async () => {
    const dir = tempDir('tao-settled-');
    const c = `${FOLDER}/c.txt`;
    put(dir, c, lines(0, 2)); // the first part of a copy
    await folderSettled(dir);
    const src = source(dir, '1h');
    const cp: SourceCheckpoint = { objects: {} };
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([c]);
    await readToEnd(cp, dir, c, 2); // read to the end it had
    appendFileSync(join(dir, c), lines(2, 3)); // the rest of the copy: the folder does not change
    const next = await src.pending(cp);
    expect(next.map((o) => ({ key: o.key, startOffset: o.startOffset, resumeAfterLine: o.resumeAfterLine }))).toEqual([{ key: c, startOffset: cp.objects[c]!.size, resumeAfterLine: 2 }]);
  });

  it('settledRecheckInterval 0: every file at every poll', async () => {
    const { dir, a, cp, src } = await settledTree('0');
    appendFileSync(join(dir, a), lines(3, 2));
    expect((await src.pending(cp)).map((o) => o.key)).toEqual([a]);
  });
});
