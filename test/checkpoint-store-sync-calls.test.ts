/**
 * A checkpoint save on a local filesystem makes its open, write, close and rename as synchronous
 * calls and only its fsyncs through libuv's pool (src/pipeline/checkpoint-store.ts,
 * src/core/local-sync-calls.ts); elsewhere every call goes through the pool. Either way the file
 * is the state, whole, and a failed save leaves no temporary file and the state still to save.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalSyncCalls } from '../src/core/local-sync-calls.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';

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

function saved(store: CheckpointStore): { objects: Record<string, { line: number }> } {
  const parsed = JSON.parse(readFileSync(store.file, 'utf8')) as { sources: Record<string, { objects: Record<string, { line: number }> }> };
  return parsed.sources['directory:/data']!;
}

describe('checkpoint saves on a local filesystem', () => {
  it('make every call but the two fsyncs synchronously, and the file is the state, save after save', async () => {
    const { store, calls } = await storeOn(EXT4);
    const objects = store.source('directory:/data').objects;
    for (let save = 1; save <= 3; save++) {
      objects[`file-${save}.txt`] = { line: save, done: true, size: 10 * save, offset: 10 * save };
      store.markDirty();
      const before = calls.calls;
      expect(await store.saveAsync()).toBe(true);
      // open, write, close, rename; the directory's open and close
      expect(calls.calls - before).toBe(6);
      expect(Object.keys(saved(store).objects)).toHaveLength(save);
      expect(saved(store).objects[`file-${save}.txt`]).toEqual({ line: save, done: true, size: 10 * save, offset: 10 * save });
    }
    expect(store.isDirty).toBe(false);
    expect(await store.saveAsync()).toBe(false); // nothing changed: nothing written
    expect(readdirSync(store.dir)).toEqual(['checkpoints.json']);
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

  it('a save that fails leaves the old file, no temporary file, and the state to save; the next save writes it', async () => {
    const { store } = await storeOn(EXT4);
    const objects = store.source('directory:/data').objects;
    objects['a.txt'] = { line: 1 };
    store.markDirty();
    await store.saveAsync();
    const first = readFileSync(store.file, 'utf8');

    // the rename cannot replace the file: a folder with something in it stands at its name
    rmSync(store.file);
    mkdirSync(store.file);
    writeFileSync(join(store.file, 'in-the-way'), 'x');
    objects['a.txt'] = { line: 2 };
    store.markDirty();
    await expect(store.saveAsync()).rejects.toThrow(/checkpoints\.json/);
    expect(store.isDirty).toBe(true);
    expect(readdirSync(store.dir)).toEqual(['checkpoints.json']); // the temporary file removed

    rmSync(store.file, { recursive: true });
    writeFileSync(store.file, first);
    expect(await store.saveAsync()).toBe(true);
    expect(saved(store).objects).toEqual({ 'a.txt': { line: 2 } });
    expect(store.isDirty).toBe(false);
  });
});
