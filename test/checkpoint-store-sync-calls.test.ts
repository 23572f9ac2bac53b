/**
 * A checkpoint save on a local filesystem makes its open, write, close and rename as synchronous
 * calls and only its fsyncs through libuv's pool (src/pipeline/checkpoint-store.ts,
 * src/core/local-sync-calls.ts); elsewhere every call goes through the pool. Either way the files
 * hold the state, and a failed save leaves no temporary file and the state still to save.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalSyncCalls } from '../src/core/local-sync-calls.js';
import { CheckpointStore, readCheckpointState } from '../src/pipeline/checkpoint-store.js';

const EXT4 = 0xef53;
const NFS = 0x6969;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tao-cksync-'));
  dirs.push(dir);
  return dir;
}

/** A store whose filesystem a probe reports as `type`, once the probe has answered. */
async function storeOn(type: number): Promise<{ store: CheckpointStore; calls: LocalSyncCalls }> {
  const dir = stateDir();
  const calls = new LocalSyncCalls(true, async () => type);
  const dev = statSync(dir).dev;
  calls.allows(dev, dir); // the probe starts
  await calls.settled(dev);
  return { store: new CheckpointStore(dir, calls), calls };
}

/** The source's state as its files hold it (checkpoints.json and its journal). */
function saved(store: CheckpointStore): { objects: Record<string, { line: number }> } {
  return { objects: { ...readCheckpointState(store.dir).sources['directory:/data']!.objects } };
}

describe('checkpoint saves on a local filesystem', () => {
  it('make every call but the fsyncs synchronously, and the files are the state, save after save', async () => {
    const { store, calls } = await storeOn(EXT4);
    const objects = store.source('directory:/data').objects;
    for (let save = 1; save <= 3; save++) {
      objects[`file-${save}.txt`] = { line: save, done: true, size: 10 * save, offset: 10 * save };
      store.markDirty();
      const before = calls.calls;
      expect(await store.saveAsync()).toBe(true);
      // the first a fold: the file's open, write and close, the new journal's open and write, the
      // rename, the directory's open and close; then a line appended to the journal: its write
      expect(calls.calls - before).toBe(save === 1 ? 8 : 1);
      expect(Object.keys(saved(store).objects)).toHaveLength(save);
      expect(saved(store).objects[`file-${save}.txt`]).toEqual({ line: save, done: true, size: 10 * save, offset: 10 * save });
    }
    expect(store.isDirty).toBe(false);
    expect(await store.saveAsync()).toBe(false); // nothing changed: nothing written
    expect(readdirSync(store.dir).sort()).toEqual(['checkpoints.journal.1', 'checkpoints.json']);
    const reread = new CheckpointStore(store.dir, calls).source('directory:/data');
    expect(Object.keys(reread.objects)).toEqual(['file-1.txt', 'file-2.txt', 'file-3.txt']);
  });

  it('go through the pool on a network filesystem, with the same file', async () => {
    const { store, calls } = await storeOn(NFS);
    const objects = store.source('directory:/data').objects;
    objects['a.txt'] = { line: 4 };
    store.markDirty();
    expect(await store.saveAsync()).toBe(true);
    expect(calls.calls).toBe(0);
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 4 } });
  });

  it('a fold that fails leaves the old files, no temporary file, and the state to save; the next save writes it', async () => {
    const { store: earlier, calls } = await storeOn(EXT4);
    earlier.source('directory:/data').objects['a.txt'] = { line: 1 };
    earlier.markDirty();
    await earlier.saveAsync();
    // a process's first save is a fold
    const store = new CheckpointStore(earlier.dir, calls);
    const objects = store.source('directory:/data').objects;
    const first = readFileSync(store.file, 'utf8');

    // the rename cannot replace the file: a folder with something in it stands at its name
    rmSync(store.file);
    mkdirSync(store.file);
    writeFileSync(join(store.file, 'in-the-way'), 'x');
    objects['a.txt'] = { line: 2 };
    store.markDirty();
    await expect(store.saveAsync()).rejects.toThrow(/checkpoints\.json/);
    expect(store.isDirty).toBe(true);
    expect(readdirSync(store.dir).sort()).toEqual(['checkpoints.journal.1', 'checkpoints.json']); // the temporary file and the new journal removed

    rmSync(store.file, { recursive: true });
    writeFileSync(store.file, first);
    expect(await store.saveAsync()).toBe(true);
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 2 } });
    expect(store.isDirty).toBe(false);
    expect(readdirSync(store.dir).sort()).toEqual(['checkpoints.journal.3', 'checkpoints.json']); // the journal before it gone (generation 2 was the failed fold's)
  });

  it('an append that fails part-way leaves the line cut short, the state to save, and the next save folds it', async () => {
    const dir = stateDir();
    const dev = statSync(dir).dev;
    // the sync-call gate of a local filesystem, with its next call made to fail after writing part of a line
    let failNext: (() => void) | undefined;
    const calls = new (class extends LocalSyncCalls {
      override run<T>(d: number, call: () => T): T {
        const fail = failNext;
        failNext = undefined;
        if (fail) {
          fail();
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }
        return super.run(d, call);
      }
    })(true, async () => EXT4);
    calls.allows(dev, dir);
    await calls.settled(dev);
    const store = new CheckpointStore(dir, calls);
    const objects = store.source('directory:/data').objects;
    objects['a.txt'] = { line: 1 };
    store.markDirty();
    await store.saveAsync(); // the fold
    objects['a.txt'] = { line: 2 };
    store.markDirty();
    await store.saveAsync(); // a line in journal 1
    objects['a.txt'] = { line: 3 };
    objects['b.txt'] = { line: 1 };
    store.markDirty();
    failNext = () => appendFileSync(join(dir, 'checkpoints.journal.1'), '{"savedAt":"x","sources":{"directory:/data":{"obj');
    await expect(store.saveAsync()).rejects.toThrow(/ENOSPC/);
    expect(store.isDirty).toBe(true);
    // what a start would read meanwhile: the last save, the line cut short left out
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 2 } });
    // the journal is not appended to after a failure: the next save is a fold
    expect(await store.saveAsync()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['checkpoints.journal.2', 'checkpoints.json']);
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 3 }, 'b.txt': { line: 1 } });
    objects['b.txt'] = { line: 2 };
    store.markDirty();
    expect(await store.saveAsync()).toBe(true);
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 3 }, 'b.txt': { line: 2 } });
  });
});
