/**
 * listFiles, the directory source's listing, on real trees: what it lists (and under which
 * path) when folders hold more entries than it reads at once, are deep, are reached twice
 * through symlinks or loop back up the tree; and, on trees built at random, that its answer
 * is the one the documented rules give when the tree is walked one entry at a time; and that
 * the folder names kept between listings (FolderCache) are reused only while a folder is
 * unchanged and settled, so a changing tree is still listed as the rules say.
 */
import { describe, it, expect } from 'vitest';
import { appendFileSync, linkSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FolderCache, listFiles } from '../src/sources/directory/directory-listing.js';
import { waitFor } from './support/daemon-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { Rng } from '../scripts/bench/rng.js';

const logs = (name: string): boolean => name.endsWith('.log') || /\.log\.\d+$/.test(name);

/**
 * The rules, one entry at a time, in name order: hidden names and `.tmp` skipped, symlinks
 * followed, each folder walked once (the first path to it), each file listed once (the first
 * path to it), the result sorted by key. Written from listFiles' contract, not its code.
 */
function referenceListing(root: string, wanted: (name: string) => boolean): Array<{ key: string; size: number }> {
  const out: Array<{ key: string; size: number }> = [];
  const seenDirs = new Set<string>();
  const seenFiles = new Set<string>();
  const id = (p: string): string => {
    const st = statSync(p);
    return `${st.dev}:${st.ino}`;
  };
  seenDirs.add(id(root));
  const walk = (dir: string, prefix: string): void => {
    for (const name of readdirSync(dir).sort()) {
      if (name.startsWith('.')) continue;
      const full = join(dir, name);
      let st;
      try {
        st = statSync(full);
      } catch {
        continue; // dangling
      }
      const key = prefix + name;
      if (st.isDirectory()) {
        if (seenDirs.has(id(full))) continue;
        seenDirs.add(id(full));
        walk(full, `${key}/`);
      } else if (st.isFile() && !name.endsWith('.tmp') && wanted(name) && !seenFiles.has(id(full))) {
        seenFiles.add(id(full));
        out.push({ key, size: st.size });
      }
    }
  };
  walk(root, '');
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

describe('listFiles', () => {
  it('a folder of many more files than it reads at once, and a deep one: every wanted file, in key order, with its size', async () => {
    const root = tempDir('tao-listing-');
    const many = 200;
    mkdirSync(join(root, 'flat'));
    for (let i = 0; i < many; i++) writeFileSync(join(root, 'flat', `f${String(i).padStart(4, '0')}.log`), 'x'.repeat(i));
    writeFileSync(join(root, 'flat', 'README.md'), 'not data');
    writeFileSync(join(root, 'flat', 'half.log.tmp'), 'being written');
    let deep = join(root, 'deep');
    for (let level = 0; level < 30; level++) deep = join(deep, `l${level}`);
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(deep, 'bottom.log'), 'abc');

    const listed = await listFiles(root, logs);
    expect(listed.length).toBe(many + 1);
    const flat = listed.filter((f) => f.folder === 'flat/');
    expect(flat.map((f) => f.key)).toEqual(Array.from({ length: many }, (_, i) => `flat/f${String(i).padStart(4, '0')}.log`));
    expect(flat.map((f) => f.size)).toEqual(Array.from({ length: many }, (_, i) => i));
    const bottom = listed.find((f) => f.key.endsWith('bottom.log'))!;
    expect(bottom.key).toBe(`deep/${Array.from({ length: 30 }, (_, l) => `l${l}`).join('/')}/bottom.log`);
    expect(bottom.full).toBe(join(deep, 'bottom.log'));
    expect(bottom.ino).toBe(statSync(join(deep, 'bottom.log')).ino);
  });

  it('symlinks: a second path to a folder lists its files once, under the first path in key order; loops and dangling links are skipped', async () => {
    const root = tempDir('tao-listing-');
    mkdirSync(join(root, 'm', 'real'), { recursive: true });
    writeFileSync(join(root, 'm', 'real', 'one.log'), '1\n');
    symlinkSync(join(root, 'm', 'real'), join(root, 'a-link')); // before m/real in key order
    symlinkSync(join(root, 'm', 'real'), join(root, 'z-link')); // after it
    symlinkSync(root, join(root, 'm', 'real', 'up')); // a loop back to the root
    symlinkSync(join(root, 'nowhere.log'), join(root, 'dangling.log'));
    writeFileSync(join(root, 'm', 'two.log'), '22\n');
    linkSync(join(root, 'm', 'two.log'), join(root, 'm', 'two-hard.log')); // a hard link: the same file
    symlinkSync(join(root, 'm', 'two.log'), join(root, 'b.log')); // a symlink to a file: listed under the link
    mkdirSync(join(root, '.hidden'));
    writeFileSync(join(root, '.hidden', 'secret.log'), 'no\n');

    const listed = await listFiles(root, logs);
    expect(listed.map((f) => f.key)).toEqual(['a-link/one.log', 'b.log']);
    expect(listed.map((f) => f.key)).toEqual(referenceListing(root, logs).map((f) => f.key));
    expect(listed.find((f) => f.key === 'b.log')!.ino).toBe(statSync(join(root, 'm', 'two.log')).ino);
  });

  it('on random trees with folders reached twice, loops, hard links and dangling links: the rules’ answer, entry by entry', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const random = new Rng(seed); // (the same trees at every run)
      const next = (): number => random.next();
      const pick = <T>(xs: T[]): T => random.pick(xs);
      const root = tempDir('tao-listing-');
      const folders = [root];
      const files: string[] = [];
      for (let i = 0; i < 160; i++) {
        const parent = pick(folders);
        const name = `${pick(['a', 'b', 'c', 'x.y', 'z'])}${i}${pick(['', '.log', '.log.1', '.tmp', '.txt', '.log'])}`;
        const full = join(parent, pick(['', '', '', '.']) + name);
        const r = next();
        if (r < 0.25) {
          mkdirSync(full);
          folders.push(full);
        } else if (r < 0.75) {
          writeFileSync(full, 'r'.repeat(Math.floor(next() * 50)));
          files.push(full);
        } else if (r < 0.85) {
          symlinkSync(pick(folders), full); // maybe an ancestor: a loop
        } else if (r < 0.9 && files.length > 0) {
          linkSync(pick(files), full);
        } else if (r < 0.95 && files.length > 0) {
          symlinkSync(pick(files), full);
        } else {
          symlinkSync(join(root, `gone${i}`), full);
        }
      }
      const expected = referenceListing(root, logs);
      const listed = await listFiles(root, logs);
      expect(
        listed.map((f) => ({ key: f.key, size: f.size })),
        `tree of seed ${seed}`,
      ).toEqual(expected);
      expect(expected.length, `tree of seed ${seed} lists something`).toBeGreaterThan(0);
      for (const f of listed) expect(f.key.startsWith(f.folder) && !f.key.slice(f.folder.length).includes('/'), f.key).toBe(true);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a missing root is an error naming it', async () => {
    const root = tempDir('tao-listing-');
    await expect(listFiles(join(root, 'absent'), logs)).rejects.toThrow(/absent/);
  });
});

/** Every folder under `root` (symlinks not followed), the root included. */
function foldersUnder(root: string): string[] {
  const out = [root];
  for (const name of readdirSync(root, { withFileTypes: true })) if (name.isDirectory()) out.push(...foldersUnder(join(root, name.name)));
  return out;
}

/** Waits until every folder's last change is at least `ms` old by the clock (a condition, not a sleep). */
async function settled(root: string, ms: number): Promise<void> {
  await waitFor(`folders under ${root} settled for ${ms} ms`, () => {
    const newest = Math.max(...foldersUnder(root).map((d) => Math.max(statSync(d).mtimeMs, statSync(d).ctimeMs)));
    return Date.now() - newest >= ms;
  }, 10_000, 20);
}

describe('listFiles with a FolderCache', () => {
  const SETTLE = 150;

  it('an unchanged, settled tree: no folder is read again; a changed folder is, and only it; removed folders are forgotten', async () => {
    const root = tempDir('tao-listing-');
    for (const d of ['a', 'a/b', 'a/b/c', 'd']) mkdirSync(join(root, d));
    for (const f of ['a/1.log', 'a/b/2.log', 'a/b/c/3.log', 'd/4.log']) writeFileSync(join(root, f), f);
    await settled(root, SETTLE);
    const cache = new FolderCache(SETTLE);
    const first = await listFiles(root, logs, undefined, cache);
    expect([cache.read, cache.reused, cache.size]).toEqual([5, 0, 5]);
    const second = await listFiles(root, logs, undefined, cache);
    expect([cache.read, cache.reused]).toEqual([0, 5]);
    expect(second).toEqual(first);

    appendFileSync(join(root, 'a/b/2.log'), ' grown'); // a file grows: its folder does not change, its size is seen
    writeFileSync(join(root, 'a/b/c/5.log'), 'new'); // a file is added deep down: that folder is read again
    const third = await listFiles(root, logs, undefined, cache);
    expect([cache.read, cache.reused]).toEqual([1, 4]);
    expect(third.map((f) => ({ key: f.key, size: f.size }))).toEqual(referenceListing(root, logs));
    expect(third.find((f) => f.key === 'a/b/2.log')!.size).toBe('a/b/2.log grown'.length);

    rmSync(join(root, 'a/b'), { recursive: true }); // two folders gone
    const fourth = await listFiles(root, logs, undefined, cache);
    expect(fourth.map((f) => f.key)).toEqual(['a/1.log', 'd/4.log']);
    expect(cache.size).toBe(3);
  });

  it('a folder read soon after its last change is read again at the next listing, its times the same or not', async () => {
    const root = tempDir('tao-listing-');
    mkdirSync(join(root, 'x'));
    writeFileSync(join(root, 'x', 'one.log'), '1');
    const cache = new FolderCache(60 * 60_000); // nothing is ever settled
    for (let i = 0; i < 3; i++) {
      await listFiles(root, logs, undefined, cache);
      expect([cache.read, cache.reused]).toEqual([2, 0]);
    }
  });

  it('on random trees changed between listings (files and folders added, removed, renamed, grown): the rules’ answer each time', async () => {
    for (let seed = 1; seed <= 4; seed++) {
      const random = new Rng(100 + seed);
      const pick = <T>(xs: T[]): T => random.pick(xs);
      const root = tempDir('tao-listing-');
      let n = 0;
      const folders = (): string[] => foldersUnder(root);
      const files = (): string[] => folders().flatMap((d) => readdirSync(d, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(d, e.name)));
      const change = (): void => {
        const r = random.next();
        const name = `n${n++}${pick(['.log', '.log.2', '.txt', '.tmp', '.log'])}`;
        const fs = files();
        const ds = folders();
        if (r < 0.3) writeFileSync(join(pick(ds), name), 'x'.repeat(n % 40));
        else if (r < 0.45) mkdirSync(join(pick(ds), `d${n++}`));
        else if (r < 0.55 && fs.length > 0) unlinkSync(pick(fs));
        else if (r < 0.7 && fs.length > 0) appendFileSync(pick(fs), 'more');
        else if (r < 0.8 && fs.length > 0) renameSync(pick(fs), join(pick(ds), name));
        else if (r < 0.9 && ds.length > 1) {
          const d = pick(ds.slice(1));
          const to = join(root, `moved${n++}`);
          renameSync(d, to); // a whole subtree moves: its folders keep their identity under another path
        } else if (ds.length > 1) rmSync(pick(ds.slice(1)), { recursive: true, force: true });
        else symlinkSync(pick(ds), join(pick(ds), `link${n++}`));
      };
      for (let i = 0; i < 40; i++) change();
      const cache = new FolderCache(SETTLE);
      let reused = 0;
      for (let round = 0; round < 6; round++) {
        await settled(root, SETTLE); // so that the folders not changed next are reused
        const before = await listFiles(root, logs, undefined, cache);
        expect(before.map((f) => ({ key: f.key, size: f.size })), `seed ${seed}, round ${round}, settled`).toEqual(referenceListing(root, logs));
        for (let k = 0; k < 1 + (round % 3); k++) change();
        const after = await listFiles(root, logs, undefined, cache); // at once: the changed folders are read again
        reused += cache.reused;
        expect(after.map((f) => ({ key: f.key, size: f.size })), `seed ${seed}, round ${round}, just changed`).toEqual(referenceListing(root, logs));
      }
      expect(reused, `seed ${seed}: folder names were reused`).toBeGreaterThan(0);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
