/**
 * The directory source's listing: every regular file under a root, at any depth, symlinks
 * followed (a symlink to a file is listed under the link's path, with the target's identity;
 * a symlinked directory is walked once, so a link back up the tree is no loop). Hidden names
 * (`.x`, including Kubernetes' `..data` and `..<timestamp>` folders of a mounted volume, whose
 * files are reached through the visible symlinks) are skipped, and a file reachable by two
 * paths (two symlinks, a hard link) is listed once, under the first path in key order.
 *
 * It runs at every poll of every tenant's directory, so its cost is an idle daemon's: one
 * `readdir` per folder and one `stat` per entry, each a round trip to libuv's thread pool.
 * Those are issued LISTING_CONCURRENCY at a time (a handoff costs less when the main thread
 * collects several answers per wake-up: about a third of the CPU of one at a time, see
 * docs/performance.md), and asynchronously (a slow or hung mount holds up this listing, not
 * the event loop). The answers are gathered into a graph of the folders by identity
 * (device and inode, each read once however many paths lead to it) and walked afterwards in
 * key order, in memory, where the rules above are applied; so concurrency changes no result.
 */
import { readdir, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../core/logger.js';

export interface ListedFile {
  /** Path relative to the root, `/`-separated. */
  key: string;
  full: string;
  /** The key's folder (`''` at the root). */
  folder: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** File system operations in flight at once for one listing. */
export const LISTING_CONCURRENCY = 16;

interface Entry {
  name: string;
  symlink: boolean;
  /** The entry's (a symlink's target's) status; null when it vanished or the link dangles. */
  st: Stats | null;
}

/** A folder's wanted entries, in name order (filled in as its answers arrive). */
type Folder = Entry[];

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const idOf = (st: Stats): string => `${st.dev}:${st.ino}`;

/** Regular files under `root` for which `wanted(name)` holds, in key order. */
export async function listFiles(root: string, wanted: (name: string) => boolean, log?: Logger): Promise<ListedFile[]> {
  const rootStat = await stat(root);
  const folders = await readFolders(root, idOf(rootStat), wanted);

  // the rules, in key order: each folder and each file once, under the first path to it
  const out: ListedFile[] = [];
  const seenFiles = new Set<string>();
  const seenDirs = new Set<string>([idOf(rootStat)]);
  const walk = (folder: Folder, dir: string, prefix: string): void => {
    for (const e of folder) {
      const full = join(dir, e.name);
      const key = prefix + e.name;
      const st = e.st;
      if (!st) {
        if (e.symlink) log?.debug({ object: key }, 'dangling symlink skipped');
        continue; // removed meanwhile
      }
      const id = idOf(st);
      if (st.isDirectory()) {
        if (seenDirs.has(id)) {
          if (e.symlink) log?.debug({ object: key }, 'symlinked directory already walked (a loop, or a second path to it): skipped');
          continue;
        }
        seenDirs.add(id);
        walk(folders.get(id) ?? [], full, `${key}/`);
      } else if (st.isFile()) {
        if (key.endsWith('.tmp') || !wanted(e.name)) continue;
        if (seenFiles.has(id)) continue;
        seenFiles.add(id);
        out.push({ key, full, folder: prefix, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
      }
    }
  };
  walk(folders.get(idOf(rootStat)) ?? [], root, '');
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Every folder reachable from `root` (whose identity is `rootId`), by identity: its entries
 * that may be listed, each with its status. A folder reached again (a loop, a second symlink
 * to it) is not read again. Operations run LISTING_CONCURRENCY at a time; the first error
 * other than a vanished entry rejects (after the operations in flight have ended).
 */
async function readFolders(root: string, rootId: string, wanted: (name: string) => boolean): Promise<Map<string, Folder>> {
  const folders = new Map<string, Folder>();
  const queue: Array<(() => Promise<void>) | undefined> = [];
  let next = 0;

  const readFolder = (path: string, id: string): void => {
    const folder: Folder = [];
    folders.set(id, folder);
    queue.push(async () => {
      let dirents;
      try {
        dirents = await readdir(path, { withFileTypes: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return; // removed meanwhile
        throw err;
      }
      dirents.sort(byName);
      for (const d of dirents) {
        if (d.name.startsWith('.')) continue;
        if (!d.isFile() && !d.isDirectory() && !d.isSymbolicLink()) continue;
        if (d.isFile() && (d.name.endsWith('.tmp') || !wanted(d.name))) continue; // (no stat for a name not read: a folder of other logs)
        const entry: Entry = { name: d.name, symlink: d.isSymbolicLink(), st: null };
        folder.push(entry);
        const full = join(path, d.name);
        queue.push(async () => {
          entry.st = await stat(full).catch(() => null); // follows symlinks
          if (entry.st?.isDirectory() && !folders.has(idOf(entry.st))) readFolder(full, idOf(entry.st));
        });
      }
    });
  };
  readFolder(root, rootId);

  // workers: as many as there are tasks, up to LISTING_CONCURRENCY; each takes the next task
  // until none is left, and more are started as tasks queue more
  let failure: { err: unknown } | undefined;
  let active = 0;
  await new Promise<void>((done) => {
    const worker = async (): Promise<void> => {
      active++;
      while (next < queue.length && !failure) {
        const task = queue[next]!;
        queue[next++] = undefined; // (what has run is not kept)
        if (next >= 4096 && next * 2 >= queue.length) {
          queue.splice(0, next);
          next = 0;
        }
        try {
          await task();
        } catch (err) {
          failure ??= { err };
        }
        start();
      }
      active--;
      if (active === 0) done();
    };
    const start = (): void => {
      while (active < LISTING_CONCURRENCY && next < queue.length && !failure) void worker();
    };
    start();
  });
  if (failure) throw failure.err;
  return folders;
}
