/**
 * The checkpoint's journal (src/pipeline/checkpoint-store.ts, checkpoint-changes.ts,
 * checkpoint-file.ts): between folds a save appends only the entries that changed; read back,
 * checkpoints.json with its journal is the state that was saved, whatever changed (entries
 * added, replaced and removed, a source's position and gone, keys named like Object.prototype's
 * members); a line cut short is left out, a damaged one stops the tenant naming file and line.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointFileError, CheckpointStore, JOURNAL_FOLD_BYTES, readCheckpointState, type ObjectProgress } from '../src/pipeline/checkpoint-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tao-journal-'));
  dirs.push(dir);
  return dir;
}

const SOURCE = 'directory:/data';

/** The state as plain JSON (no prototype-less objects), to compare. */
function plain(sources: unknown): unknown {
  return JSON.parse(JSON.stringify(sources));
}

function journalLines(dir: string): string[] {
  const name = readdirSync(dir).find((n) => n.startsWith('checkpoints.journal.'));
  if (!name) return [];
  return readFileSync(join(dir, name), 'utf8').split('\n').slice(1, -1);
}

async function save(store: CheckpointStore): Promise<void> {
  store.markDirty();
  expect(await store.saveAsync()).toBe(true);
}

/** A store whose entry `a` was saved at lines 1 (the fold) to `last` (the journal's lines). */
async function savedThrough(last: number): Promise<{ dir: string; store: CheckpointStore }> {
  const dir = stateDir();
  const store = new CheckpointStore(dir);
  const cp = store.source(SOURCE);
  for (let line = 1; line <= last; line++) {
    cp.objects['a'] = { line };
    await save(store);
  }
  return { dir, store };
}

describe('the checkpoint journal', () => {
  it('appends only what changed, and the files read back are the state, through every kind of change', async () => {
    const dir = stateDir();
    const store = new CheckpointStore(dir);
    const cp = store.source(SOURCE);
    for (let i = 0; i < 50; i++) cp.objects[`file-${i}.log`] = { line: 10, done: true, size: 100, offset: 100 };
    await save(store); // the first save of a process: a fold
    expect(journalLines(dir)).toEqual([]);

    // one entry replaced: the line holds it alone
    cp.objects['file-7.log'] = { line: 11, offset: 120 };
    await save(store);
    const lines = journalLines(dir);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ sources: { [SOURCE]: { objects: { 'file-7.log': { line: 11, offset: 120 } } } } });
    expect(Object.keys(JSON.parse(lines[0]!).sources[SOURCE].objects)).toEqual(['file-7.log']);
    expect(JSON.parse(lines[0]!).sources[SOURCE]).not.toHaveProperty('position');

    // added, removed, keys like Object.prototype's members, a position and a gone set in place
    cp.objects['__proto__'] = { line: 1 };
    cp.objects['constructor'] = { line: 2, done: true };
    delete cp.objects['file-3.log'];
    cp.position = { watermark: '2026-12-07' };
    cp.gone = { 'uid-1': { line: 5, file: { dev: 1, ino: 2, fp: 'ab', uid: 'uid-1', goneAt: 1 } } };
    await save(store);
    cp.position.watermark = '2026-12-08'; // (changed in place: compared as text)
    store.source('s3://bucket/').objects['k'] = { line: 3, version: 'v1' }; // a second source, new
    await save(store);
    delete cp.gone;
    delete cp.objects['constructor'];
    await save(store);
    expect(journalLines(dir)).toHaveLength(4);

    const read = readCheckpointState(dir);
    expect(plain(read.sources)).toEqual(plain({ [SOURCE]: cp, 's3://bucket/': store.source('s3://bucket/') }));
    expect(Object.getOwnPropertyDescriptor(read.sources[SOURCE]!.objects, '__proto__')?.value).toEqual({ line: 1 });
    expect(read.sources[SOURCE]!.objects['file-3.log']).toBeUndefined();
    expect(read.sources[SOURCE]!.gone).toBeUndefined();
    // and a store opened on them has that state
    const reopened = new CheckpointStore(dir).source(SOURCE);
    expect(plain(reopened)).toEqual(plain(cp));
  });

  it('a save with nothing changed since the last writes nothing', async () => {
    const dir = stateDir();
    const store = new CheckpointStore(dir);
    store.source(SOURCE).objects['a'] = { line: 1 };
    await save(store);
    await save(store); // marked changed, the same entries
    expect(journalLines(dir)).toEqual([]);
    expect(store.isDirty).toBe(false);
  });

  it('is folded into checkpoints.json once it is as large as a fold, and its predecessor removed', async () => {
    const dir = stateDir();
    const store = new CheckpointStore(dir);
    const cp = store.source(SOURCE);
    cp.objects['small'] = { line: 0 };
    await save(store);
    expect(readdirSync(dir).sort()).toEqual(['checkpoints.journal.1', 'checkpoints.json']);
    const value = 'x'.repeat(1000);
    let saves = 0;
    while (readdirSync(dir).includes('checkpoints.journal.1')) {
      cp.objects['small'] = { line: ++saves, version: value };
      await save(store);
      expect(saves).toBeLessThan(1000);
    }
    // about JOURNAL_FOLD_BYTES of lines of some 1 100 bytes each went into journal 1
    expect(saves).toBeGreaterThan(JOURNAL_FOLD_BYTES / 1200);
    expect(readdirSync(dir).sort()).toEqual(['checkpoints.journal.2', 'checkpoints.json']);
    expect(journalLines(dir)).toEqual([]);
    const base = JSON.parse(readFileSync(join(dir, 'checkpoints.json'), 'utf8')) as { journal: number; sources: Record<string, { objects: Record<string, ObjectProgress> }> };
    expect(base.journal).toBe(2);
    expect(base.sources[SOURCE]!.objects['small']!.line).toBe(saves);
  });

  it('a stop folds it: checkpoints.json alone holds the state', async () => {
    const { dir, store } = await savedThrough(2);
    expect(journalLines(dir)).toHaveLength(1);
    await store.close();
    expect(readdirSync(dir)).toEqual(['checkpoints.json']);
    const base = JSON.parse(readFileSync(join(dir, 'checkpoints.json'), 'utf8')) as { sources: Record<string, { objects: Record<string, ObjectProgress> }> };
    expect(base.sources[SOURCE]!.objects['a']).toEqual({ line: 2 });
    expect(plain(readCheckpointState(dir).sources)).toEqual(plain(base.sources));
  });

  it('a last line cut short (a crash while it was written) is left out; the next process folds and goes on', async () => {
    const { dir } = await savedThrough(2);
    const journal = join(dir, 'checkpoints.journal.1');
    appendFileSync(journal, `{"savedAt":"2026-12-07T00:00:00Z","sources":{"${SOURCE}":{"objects":{"a":{"line":3`);
    expect(readCheckpointState(dir).sources[SOURCE]!.objects['a']).toEqual({ line: 2 });

    const next = new CheckpointStore(dir);
    next.source(SOURCE).objects['b'] = { line: 1 };
    await save(next);
    expect(readdirSync(dir).sort()).toEqual(['checkpoints.journal.2', 'checkpoints.json']);
    expect(plain(readCheckpointState(dir).sources[SOURCE]!.objects)).toEqual({ a: { line: 2 }, b: { line: 1 } });
  });

  it('a damaged line before the last stops the tenant naming the journal and the line', async () => {
    const { dir } = await savedThrough(4);
    const journal = join(dir, 'checkpoints.journal.1');
    const lines = readFileSync(journal, 'utf8').split('\n');
    lines[2] = lines[2]!.replace('"line":3', '"line":"three"');
    writeFileSync(journal, lines.join('\n'));
    expect(() => new CheckpointStore(dir)).toThrow(CheckpointFileError);
    expect(() => new CheckpointStore(dir)).toThrow(/checkpoints\.journal\.1: line 3: not a checkpoint save: .*line/);
    lines[2] = '{"savedAt": oops';
    writeFileSync(journal, lines.join('\n'));
    expect(() => new CheckpointStore(dir)).toThrow(/checkpoints\.journal\.1: line 3 is not valid JSON/);
  });

  it('a journal of another generation (a crash during a fold) is not read, and goes at the next fold', async () => {
    const { dir } = await savedThrough(1);
    // what a fold that crashed before its rename leaves: the next generation's journal, with a save in it
    writeFileSync(join(dir, 'checkpoints.journal.2'), `{"version":1,"journal":2}\n{"savedAt":"x","sources":{"${SOURCE}":{"objects":{"a":{"line":99}}}}}\n`);
    expect(readCheckpointState(dir).sources[SOURCE]!.objects['a']).toEqual({ line: 1 });
    const next = new CheckpointStore(dir);
    next.source(SOURCE).objects['b'] = { line: 1 };
    await save(next);
    expect(readdirSync(dir).sort()).toEqual(['checkpoints.journal.2', 'checkpoints.json']);
    expect(journalLines(dir)).toEqual([]);
    expect(plain(readCheckpointState(dir).sources[SOURCE]!.objects)).toEqual({ a: { line: 1 }, b: { line: 1 } });
  });

  it('a journal whose header names another generation than checkpoints.json is refused', () => {
    const dir = stateDir();
    writeFileSync(join(dir, 'checkpoints.json'), JSON.stringify({ version: 1, savedAt: '', journal: 3, sources: {} }));
    writeFileSync(join(dir, 'checkpoints.journal.3'), '{"version":1,"journal":4}\n');
    expect(() => new CheckpointStore(dir)).toThrow(/checkpoints\.journal\.3: line 1: journal 4, where checkpoints\.json names journal 3/);
  });
});
