/**
 * The directory source's listing: every regular file under a root, at any depth, symlinks
 * followed (a symlink to a file is listed under the link's path, with the target's identity;
 * a symlinked directory is walked once, so a link back up the tree is no loop). Hidden names
 * (`.x`, including Kubernetes' `..data` and `..<timestamp>` folders of a mounted volume, whose
 * files are reached through the visible symlinks) are skipped, and a file reachable by two
 * paths (two symlinks, a hard link) is listed once, under the first path in key order.
 */
import { readdir, stat } from 'node:fs/promises';
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

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Regular files under `root` for which `wanted(name)` holds, in key order. */
export async function listFiles(root: string, wanted: (name: string) => boolean, log?: Logger): Promise<ListedFile[]> {
  const out: ListedFile[] = [];
  const seenFiles = new Set<string>();
  const seenDirs = new Set<string>();
  const rootStat = await stat(root);
  seenDirs.add(`${rootStat.dev}:${rootStat.ino}`);

  const walk = async (dir: string, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return; // removed meanwhile
      throw err;
    }
    entries.sort(byName);
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const full = join(dir, e.name);
      const key = prefix + e.name;
      if (!e.isFile() && !e.isDirectory() && !e.isSymbolicLink()) continue;
      if (e.isFile() && (key.endsWith('.tmp') || !wanted(e.name))) continue; // (no stat for a name not read: a folder of other logs)
      const st = await stat(full).catch(() => null); // follows symlinks
      if (!st) {
        if (e.isSymbolicLink()) log?.debug({ object: key }, 'dangling symlink skipped');
        continue; // removed meanwhile
      }
      if (st.isDirectory()) {
        const id = `${st.dev}:${st.ino}`;
        if (seenDirs.has(id)) {
          if (e.isSymbolicLink()) log?.debug({ object: key }, 'symlinked directory already walked (a loop, or a second path to it): skipped');
          continue;
        }
        seenDirs.add(id);
        await walk(full, `${key}/`);
      } else if (st.isFile()) {
        if (key.endsWith('.tmp') || !wanted(e.name)) continue;
        const id = `${st.dev}:${st.ino}`;
        if (seenFiles.has(id)) continue;
        seenFiles.add(id);
        out.push({ key, full, folder: prefix, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
      }
    }
  };
  await walk(root, '');
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
