/**
 * The directory source's listing: every regular file under a root, at any depth, symlinks
 * followed (a symlink to a file is listed under the link's path, with the target's identity;
 * a symlinked directory is walked once, so a link back up the tree is no loop). Hidden names
 * (`.x`, including Kubernetes' `..data` and `..<timestamp>` folders of a mounted volume, whose
 * files are reached through the visible symlinks) are skipped, and a file reachable by two
 * paths (two symlinks, a hard link) is listed once, under the first path in key order.
 *
 * Each folder's names are read once and kept (a FolderCache) while the folder's times say they
 * are the same: a folder whose entries change gets a new ctime (and mtime), which no user can set
 * back. Names are read again when the folder's times differ from those seen before the last read,
 * or when that read came less than `settleMs` after the folder's last change (timestamps are
 * coarser than the clock: a change in the same tick as a read would leave the times as they were).
 * Folders are still `stat`ed at every listing, and files too (a file grows without its folder
 * changing), except those the caller vouches for (`settled`) in a folder whose names were kept.
 */
import { readdir, stat } from 'node:fs/promises';
import { sep } from 'node:path';
import { readdirSync, statSync, type Stats } from 'node:fs';
import type { LocalSyncCalls } from '../../core/local-sync-calls.js';
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
  /** Last change of the file or its metadata, when listed. */
  ctimeMs: number;
  /** The key's hour partition (`YYYY-MM-DDTHH`), for the source to set (a slot in every object, not a property added later). */
  hour?: string | undefined;
}

/** A file known to be as it was: its device and inode. */
export interface SettledFile {
  dev: number;
  ino: number;
}

/** A folder's entries worth a `stat`, in name order: hidden and unwanted names already left out. */
interface Entry {
  name: string;
  /** Known to be a regular file (a symlink or a folder may be either, once followed). */
  file: boolean;
  symlink: boolean;
  /**
   * A folder's device when the last listing `stat`ed it, if that was its parent's: not a mount
   * point then, so on a local filesystem its next `stat` may be a synchronous call too.
   */
  dev?: number;
}

interface Folder {
  mtimeMs: number;
  ctimeMs: number;
  /** Whether the names may be used again while the times stay the same (see settleMs). */
  reusable: boolean;
  entries: Entry[];
  /** The listing that last visited the folder (folders not visited are dropped). */
  visit: number;
}

/** How long after a folder's last change its names can be trusted to be all there. */
export const FOLDER_SETTLE_MS = 2_000;

/** The names of a tree's folders between listings, by folder identity. One per listed root. */
export class FolderCache {
  private readonly folders = new Map<string, Folder>();
  private visit = 0;
  /** Of the last listing: folders whose names were read, and those whose names were reused. */
  read = 0;
  reused = 0;

  constructor(private readonly settleMs = FOLDER_SETTLE_MS) {}

  get size(): number {
    return this.folders.size;
  }

  /** @internal the listing's bookkeeping. */
  begin(): number {
    this.read = 0;
    this.reused = 0;
    return ++this.visit;
  }

  /** @internal entries of a folder seen with these times, or undefined when they must be read. */
  lookup(id: string, st: Stats, visit: number): Entry[] | undefined {
    const f = this.folders.get(id);
    if (!f || !f.reusable || f.mtimeMs !== st.mtimeMs || f.ctimeMs !== st.ctimeMs) return undefined;
    f.visit = visit;
    this.reused++;
    return f.entries;
  }

  /** @internal a folder's names as read after `st` was taken, at `readAt` (clock ms). */
  store(id: string, st: Stats, entries: Entry[], readAt: number, visit: number): void {
    const changed = Math.max(st.mtimeMs, st.ctimeMs);
    this.folders.set(id, { mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, reusable: readAt - changed >= this.settleMs, entries, visit });
    this.read++;
  }

  /** @internal forget the folders the listing `visit` did not reach (removed, or no longer reachable). */
  end(visit: number): void {
    for (const [id, f] of this.folders) if (f.visit !== visit) this.folders.delete(id);
  }
}

const inOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const NO_THROW = { throwIfNoEntry: false } as const;

/** `stat` of a file with a synchronous call (local-sync-calls.ts); null when it cannot be (removed meanwhile). */
function statOrNull(path: string): Stats | null {
  try {
    return statSync(path, NO_THROW) ?? null;
  } catch {
    return null;
  }
}

/**
 * Regular files under `root` for which `wanted(name)` holds, in key order. `sync`: the calls
 * made synchronously where they may be (local-sync-calls.ts); none without it.
 */
export async function listFiles(
  root: string,
  wanted: (name: string) => boolean,
  log?: Logger,
  cache: FolderCache = new FolderCache(),
  sync?: LocalSyncCalls,
  /** Folders (keys ending in `/`) not to walk: nothing under them is wanted. */
  skipFolder?: (key: string) => boolean,
  /**
   * A file known to be as it was (the caller's word for it: read to its end, not to be looked at
   * again yet), when its folder's names have not changed since they were read (a file added,
   * removed or renamed there changes the folder): not `stat`ed and not listed (the caller takes
   * it as it was); its device and inode count as seen (a second path to it is not listed either).
   */
  settled?: (key: string, folder: string) => SettledFile | undefined,
): Promise<ListedFile[]> {
  const out: ListedFile[] = [];
  // (by device, the inodes seen: numbers, where `dev:ino` strings were made for every file at every listing)
  const seenFiles = new InodeSet();
  const seenDirs = new InodeSet();
  const visit = cache.begin();
  /** Names never read: files being written (`*.tmp`) and files the source does not want. */
  const ignored = (name: string): boolean => name.endsWith('.tmp') || !wanted(name);

  /** A folder's names; `kept`: the ones read before (the folder has not changed since). */
  const entriesOf = async (dir: string, id: string, st: Stats): Promise<{ entries: Entry[]; kept: boolean } | undefined> => {
    const known = cache.lookup(id, st, visit);
    if (known) return { entries: known, kept: true };
    let dirents;
    try {
      dirents = sync?.allows(st.dev, dir) ? await sync.call(st.dev, () => readdirSync(dir, { withFileTypes: true }), log) : await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined; // removed meanwhile
      throw err;
    }
    const readAt = Date.now();
    const entries: Entry[] = [];
    for (const e of dirents) {
      if (e.name.startsWith('.')) continue;
      if (!e.isFile() && !e.isDirectory() && !e.isSymbolicLink()) continue;
      if (e.isFile() && ignored(e.name)) continue; // (no stat for a name not read: a folder of other logs)
      entries.push({ name: e.name, file: e.isFile(), symlink: e.isSymbolicLink() });
    }
    entries.sort((a, b) => inOrder(a.name, b.name));
    cache.store(id, st, entries, readAt, visit);
    return { entries, kept: false };
  };

  const walk = async (dir: string, prefix: string, id: string, dirStat: Stats): Promise<void> => {
    const names = await entriesOf(dir, id, dirStat);
    if (!names) return;
    const unchanged = names.kept && settled !== undefined;
    for (const e of names.entries) {
      const key = prefix + e.name;
      if (skipFolder && !e.file && skipFolder(`${key}/`)) continue; // (a folder, or a link that may be one)
      if (unchanged && e.file) {
        const known = settled(key, prefix);
        if (known) {
          seenFiles.add(known.dev, known.ino);
          continue;
        }
      }
      // (`dir` is absolute and normalized, a name has no separator: path.join's normalization
      // made several strings per file, a third of what a listing allocated)
      const full = dir.endsWith(sep) ? dir + e.name : dir + sep + e.name;
      // (follows symlinks; on a local filesystem, a synchronous call for a regular file, and for
      // a folder once a listing found it on its parent's device: a mount point is not, and a
      // filesystem mounted on it since gets this one synchronous call, then the pool; a link may
      // lead to another filesystem)
      let st: Stats | null;
      if ((e.file || e.dev === dirStat.dev) && sync?.allows(dirStat.dev, dir)) {
        const turn = sync.turnDue();
        if (turn) await turn;
        st = sync.run(dirStat.dev, () => statOrNull(full), log);
      } else st = await stat(full).catch(() => null);
      if (!st) {
        if (e.symlink) log?.debug({ object: key }, 'dangling symlink skipped');
        continue; // removed meanwhile
      }
      if (st.isDirectory()) {
        if (!e.symlink) e.dev = st.dev;
        if (!seenDirs.add(st.dev, st.ino)) {
          if (e.symlink) log?.debug({ object: key }, 'symlinked directory already walked (a loop, or a second path to it): skipped');
          continue;
        }
        await walk(full, `${key}/`, `${st.dev}:${st.ino}`, st);
      } else if (st.isFile()) {
        if (!e.file && ignored(e.name)) continue;
        if (!seenFiles.add(st.dev, st.ino)) continue;
        out.push({ key, full, folder: prefix, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, hour: undefined });
      }
    }
  };

  const rootStat = await stat(root);
  seenDirs.add(rootStat.dev, rootStat.ino);
  await walk(root, '', `${rootStat.dev}:${rootStat.ino}`, rootStat);
  cache.end(visit);
  return out.sort((a, b) => inOrder(a.key, b.key));
}

/** Files or folders seen, by device and inode. */
class InodeSet {
  private readonly byDev = new Map<number, Set<number>>();

  /** Adds one; false when it was there already. */
  add(dev: number, ino: number): boolean {
    let inodes = this.byDev.get(dev);
    if (!inodes) this.byDev.set(dev, (inodes = new Set()));
    if (inodes.has(ino)) return false;
    inodes.add(ino);
    return true;
  }
}
