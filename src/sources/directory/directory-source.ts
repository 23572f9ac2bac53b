/**
 * `type: directory`: a local tree in Tableau's layout (or any tree of NDJSON files), at any
 * depth, including files dropped in later and files that grow and rotate (Tableau Server
 * writes its Activity Log locally). Files are read in key order; hidden files, `*.tmp` and
 * names without one of `extensions` (e.g. a README beside the data) are ignored. Symlinks are
 * followed (see directory-listing.ts).
 *
 * Files that can grow: a last line without its newline is not read until it is complete (or
 * until the file is finished: unchanged for `finishAfter` while a newer file exists in its
 * folder). Files in Tableau's hour-partitioned layout are copies of finished S3 objects and
 * gzip files cannot grow: they are read to their end like S3 objects.
 *
 * The checkpoint keeps, per file (keyed by its current path), the byte offset and line count
 * acknowledged and the file's identity (device, inode, fingerprint of its first bytes: see
 * file-identity.ts). So a file renamed by rotation is followed to its end from where it was
 * left, a copy (logrotate's `copytruncate`) is read on from there too, and a file truncated or
 * replaced under its name is read again from its start (with a warning). Records' uids derive
 * from the identity the file had when first read, so they survive a rename. A finished file read
 * for the first time is named from the read itself (first-read-file.ts), one open per file.
 *
 * State stays bounded: finished files whose hour partition is older than `lookbackHours` before
 * the newest partition seen are dropped from the checkpoint and a watermark remembers that
 * everything before it is done (and the hour folders behind it are not walked: foldersDoneIn).
 * Files without an hour partition are remembered individually, and forgotten `lookbackHours`
 * after they disappeared. A poll `stat`s the files of an hour partition read to their end, in
 * folders that have not changed, only once per `settledRecheckInterval` (settledFiles).
 */
import { resolve } from 'node:path';
import type { Source, SourceObject } from '../source.js';
import type { FileIdentity, ObjectProgress, SourceCheckpoint } from '../source-checkpoint.js';
import type { Logger } from '../../core/logger.js';
import { parseObjectKey, partitionPrefix } from '../../decoding/object-key.js';
import { fileChunks } from './file-chunks.js';
import { FirstReadFile, type FirstReadContext } from './first-read-file.js';
import type { SyncCalls } from './open-file.js';
import { localSyncCalls, type LocalSyncCalls } from '../../core/local-sync-calls.js';
import { FolderCache, listFiles, type ListedFile, type SettledFile } from './directory-listing.js';
import { contentUidIdentity, fileUidIdentity, headOf, readFileHead, type FileHead } from './file-identity.js';
import { directorySourceId, type DirectorySourceConfig } from './config.js';

export { directorySourceConfigSchema, type DirectorySourceConfig } from './config.js';

const WATERMARK = 'watermark';

/** A listed file, with its hour partition (parsed once per listing) and its head once read. */
interface Candidate extends ListedFile {
  head?: FileHead;
}

/** What a source built on this one (tableau-server) changes: which files are listed. */
export interface DirectorySourceHooks {
  /** Lists the files to read (default: every wanted file under the root, listFiles). Keys are relative to the root. */
  list?(): Promise<ListedFile[]>;
  /**
   * Every listed object's identity is known when pending() returns (default false: a finished
   * file read for the first time is named from the bytes its read starts with, see
   * first-read-file.ts). For a source that looks objects up by identity before reading them.
   */
  identityWhenListed?: boolean;
}

export class DirectorySource implements Source {
  readonly type = 'directory';
  readonly id: string;
  readonly pollIntervalMs: number;
  readonly readConcurrency: number;
  private readonly root: string;
  private readonly log: Logger | undefined;
  /** Files read to their end as finished at this size (so an unreadable rest is not re-read at every poll). */
  private readonly finishedAt = new Map<string, number>();
  /** The tree's folder names between polls (read again when a folder changes). */
  private readonly folders = new FolderCache();
  /** Where calls may be synchronous (local-sync-calls.ts); undefined: none. */
  private readonly syncCalls: LocalSyncCalls | undefined;
  /** After pending(): whether it changed the checkpoint (see Source.checkpointChanged). */
  checkpointChanged = false;
  /** When every file was last `stat`ed (settledFiles). */
  private recheckedAt = 0;
  /** Files handed out for reading within the last `settledRecheckInterval`, and when. */
  private readonly handedOut = new Map<string, number>();
  /** Of the current listing: the entries of files taken as they were, not listed (settledFiles). */
  private readonly settledNow = new Set<ObjectProgress>();

  constructor(
    private readonly config: DirectorySourceConfig,
    baseDir: string = process.cwd(),
    log?: Logger,
    private readonly hooks: DirectorySourceHooks = {},
    syncCalls: LocalSyncCalls = localSyncCalls,
  ) {
    this.syncCalls = config.syncLocalReads ? syncCalls : undefined;
    this.root = resolve(baseDir, config.path);
    this.id = directorySourceId(config);
    this.pollIntervalMs = config.pollInterval;
    this.readConcurrency = config.concurrency;
    this.log = log?.child({ source: this.id });
  }

  /** How long a fresh copy of a file still in place waits for its original to be truncated or removed. */
  private get copySettleMs(): number {
    return 2 * this.pollIntervalMs + 1000;
  }

  /** A name is read when it ends in one of `extensions`, or in one and a rotation number (`x.log.1`). */
  private readonly wanted = (name: string): boolean => {
    const exts = this.config.extensions;
    if (exts.length === 0) return true;
    const lower = name.toLowerCase();
    const unrotated = lower.replace(/\.\d+$/, '');
    return exts.some((x) => lower.endsWith(x.toLowerCase()) || unrotated.endsWith(x.toLowerCase()));
  };

  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    this.checkpointChanged = false;
    this.settledNow.clear();
    const hourOf = folderHours();
    const files: Candidate[] = this.hooks.list ? await this.hooks.list() : await listFiles(this.root, this.wanted, this.log, this.folders, this.syncCalls, foldersDoneIn(checkpoint), this.settledFiles(checkpoint, hourOf));
    const now = Date.now();

    // Bounded state: forget finished files far behind the newest partition.
    let newest = '';
    for (const f of files) {
      const h = (f.hour = hourOf(f.key, f.folder));
      if (h && h > newest) newest = h;
    }
    const watermark = typeof checkpoint.position?.[WATERMARK] === 'string' ? (checkpoint.position[WATERMARK] as string) : '';
    let cutoff = watermark;
    if (newest) {
      const c = hourMinus(newest, this.config.lookbackHours);
      if (c > cutoff) cutoff = c;
    }
    if (cutoff !== watermark) {
      for (const [key, p] of Object.entries(checkpoint.objects)) {
        const h = parseObjectKey(key).partitionHour;
        if (p.done && h && h < cutoff) delete checkpoint.objects[key];
      }
      checkpoint.position = { ...(checkpoint.position ?? {}), [WATERMARK]: cutoff };
      this.checkpointChanged = true;
    }

    // the newest modification per folder: the file still being written there
    const newestInFolder = new Map<string, number>();
    for (const f of files) newestInFolder.set(f.folder, Math.max(newestInFolder.get(f.folder) ?? 0, f.mtimeMs));
    const isFinished = (f: Candidate): boolean =>
      f.hour !== undefined || this.config.finishAfter === 0 || (now - f.mtimeMs >= this.config.finishAfter && f.mtimeMs < newestInFolder.get(f.folder)!);

    const deferred = await this.matchIdentities(checkpoint, files, now, isFinished);

    if (this.finishedAt.size > files.length) {
      // (bounded: only files still listed)
      const listed = new Set(files.flatMap((f) => (checkpoint.objects[f.key]?.file ? [checkpoint.objects[f.key]!.file!.uid] : [])));
      for (const uid of this.finishedAt.keys()) if (!listed.has(uid)) this.finishedAt.delete(uid);
    }
    const out: SourceObject[] = [];
    let knownUids: Set<string> | undefined;
    let firstRead: FirstReadContext | undefined;
    for (const f of files) {
      const h = f.hour;
      const progress = checkpoint.objects[f.key];
      if (!progress && h && cutoff && h < cutoff) continue; // before the watermark: done long ago
      // finished at this size, and not read by byte offset (gzip, or from before offsets were kept)
      if (progress?.done && progress.size === f.size && progress.offset === undefined) continue;
      if (progress?.offset !== undefined && progress.offset === f.size) continue; // nothing new
      if (deferred.has(f.key)) continue;
      const finished = isFinished(f);
      if (!progress && finished && f.head === undefined && !this.hooks.identityWhenListed) {
        // a finished file not read before, and no entry it could be the copy of (matchIdentities
        // read no head of it): named when it is read, from the same open
        if (f.size === 0) continue; // nothing to read yet
        firstRead ??= this.firstReadContext((knownUids ??= uidsIn(checkpoint)), now);
        out.push(new FirstReadFile(f.key, f.size, f.full, f.dev, f.ino, firstRead));
        continue;
      }
      // an entry with a byte offset is a plain file; otherwise the head says (gzip, fingerprint)
      let head = f.head;
      if (!progress?.file || progress.offset === undefined) {
        if (head === undefined || (head.fp === null && finished)) head = f.head = await readFileHead(f.full, finished, this.syncOn(f.dev)).catch(() => undefined);
        if (!head) continue; // removed meanwhile
      }
      const gzip = head?.gzip === true;
      const file: FileIdentity | undefined = progress?.file ?? (head?.fp ? this.newIdentity((knownUids ??= uidsIn(checkpoint)), head.dev, head.ino, head.fp, now) : undefined);
      if (!file) continue; // no complete first line yet: nothing to read
      const growing = !finished && !gzip;
      if (progress?.done && progress.size === f.size) {
        // read to its end at this size: what is left is a last line without its newline
        if (growing || this.finishedAt.get(file.uid) === f.size) continue;
        this.finishedAt.set(file.uid, f.size);
      }
      const full = f.full;
      const listed: SourceObject = {
        key: f.key,
        identity: file.uid,
        size: f.size,
        resumeAfterLine: progress?.line ?? 0,
        file,
        ...(growing ? { growing } : {}),
        // reads sized to the file (see file-chunks.ts); at most 1 MiB each, so a prefetched
        // object holds little memory while the one before it is processed
        open: (signal) => fileChunks(full, { expectedSize: f.size, signal, sync: this.syncOn(f.dev) }),
      };
      if (!gzip) {
        // by byte offset: from the one acknowledged, or (an entry from before offsets were kept)
        // from the start, skipping the lines acknowledged
        const start = progress?.offset ?? 0;
        listed.startOffset = start;
        listed.startLine = progress?.offset !== undefined ? progress.line : 0;
        listed.open = (signal) =>
          fileChunks(full, {
            expectedSize: f.size,
            start,
            signal,
            sync: this.syncOn(f.dev),
            ino: file.ino,
            // a finished file ends at the size listed (growth past it is read at the next poll)
            ...(growing ? {} : { endAtExpectedSize: true }),
            // the size committed with the object's progress: where its end was when it was read
            onEnd: (end) => {
              if (end === null) delete listed.size;
              else listed.size = end;
            },
          });
      }
      out.push(listed);
    }
    if (this.config.settledRecheckInterval > 0) for (const o of out) this.handedOut.set(o.key, now);
    return out;
  }

  /**
   * Which files the listing may take as they were, without a `stat` and not listed
   * (directory-listing.ts `settled`), until the next recheck of them all
   * (`settledRecheckInterval`): a file of an hour partition read to its end at the size its entry
   * says, not handed out for reading within the interval (a copy still being written into an
   * unchanged folder is looked at every poll). Their entries are kept in settledNow (they are
   * not gone). The newest partition of a listing that takes some files as they were may be older
   * than the tree's: the watermark moves at the next recheck.
   */
  private settledFiles(checkpoint: SourceCheckpoint, hourOf: HourOf): ((key: string, folder: string) => SettledFile | undefined) | undefined {
    const every = this.config.settledRecheckInterval;
    const now = Date.now();
    for (const [key, at] of this.handedOut) if (now - at >= every) this.handedOut.delete(key);
    if (every <= 0 || now - this.recheckedAt >= every) {
      this.recheckedAt = now;
      return undefined;
    }
    return (key, folder) => {
      const p = checkpoint.objects[key];
      if (!p?.done || !p.file || p.size === undefined || (p.offset !== undefined && p.offset !== p.size)) return undefined;
      if (this.handedOut.has(key) || hourOf(key, folder) === undefined) return undefined;
      this.settledNow.add(p);
      return p.file;
    };
  }

  /** How files of device `dev` may be read synchronously (local-sync-calls.ts). */
  private syncOn(dev: number): SyncCalls | undefined {
    return this.syncCalls ? { calls: this.syncCalls, dev, log: this.log } : undefined;
  }

  /** What the files of a listing read for the first time share (first-read-file.ts): named from their first read, one open per file. */
  private firstReadContext(known: Set<string>, now: number): FirstReadContext {
    return { name: (dev, ino, fp) => this.newIdentity(known, dev, ino, fp, now), calls: this.syncCalls, log: this.log };
  }

  /**
   * A file read for the first time. Its uid identity is its first line's fingerprint (so a copy
   * seen in its place after a crash sends its records under the uids they had); when a file read
   * before began with the same line, its device, inode and fingerprint; when even those are
   * taken (truncated and written again from the same first line), the time tells them apart, so
   * that their records do not share uids.
   */
  private newIdentity(known: Set<string>, dev: number, ino: number, fp: string, now: number): FileIdentity {
    let uid = contentUidIdentity(fp);
    if (known.has(uid)) uid = fileUidIdentity(dev, ino, fp);
    if (known.has(uid)) uid += `\n${now}`;
    known.add(uid);
    return { dev, ino, fp, uid };
  }

  /**
   * Ties the checkpoint entries to the files listed: an entry whose file is no longer under its
   * name (renamed, replaced, truncated, deleted) is matched by identity to another file (a
   * rename: same inode and fingerprint; a copy: same fingerprint) or set aside in `gone`, where
   * a later copy can still claim it and where it is forgotten after `lookbackHours`.
   */
  private async matchIdentities(checkpoint: SourceCheckpoint, files: Candidate[], now: number, isFinished: (f: Candidate) => boolean): Promise<Set<string>> {
    const deferred = new Set<string>();
    const byKey = new Map(files.map((f) => [f.key, f]));
    const head = async (f: Candidate): Promise<FileHead | undefined> => {
      f.head ??= await readFileHead(f.full, false, this.syncOn(f.dev)).catch(() => undefined);
      return f.head;
    };
    const loose: Array<{ key: string; p: ObjectProgress & { file: FileIdentity } }> = [];
    // (for-in: Object.entries made an array per entry, thousands at every poll)
    for (const key in checkpoint.objects) {
      const p = checkpoint.objects[key]!;
      if (this.settledNow.has(p)) continue; // its file is as it was (not listed: settledFiles)
      const f = byKey.get(key);
      if (!p.file) {
        // an entry from before identities were kept: adopt the file under its name
        if (!f) continue;
        const h = await head(f);
        if (h?.fp) {
          // a new entry, not this one changed: the checkpoint's journal writes the entries that are new objects (pipeline/checkpoint-changes.ts)
          checkpoint.objects[key] = { ...p, file: { dev: h.dev, ino: h.ino, fp: h.fp, uid: fileUidIdentity(h.dev, h.ino, h.fp) } };
          this.checkpointChanged = true;
        }
        continue;
      }
      const file = p.file;
      if (f && f.ino === file.ino) {
        if (p.size === f.size && (p.offset === undefined || p.offset <= f.size)) continue; // unchanged since it was read
        const h = await head(f);
        if (!h) continue; // removed meanwhile: looked at again next poll
        const shrunk = p.offset !== undefined && f.size < p.offset;
        if (h.fp === file.fp && !shrunk) continue; // the same file, grown
        this.log?.warn(
          { object: key, offset: p.offset ?? null, size: f.size, line: p.line },
          shrunk ? 'file shrank below the offset read (truncated, e.g. copytruncate): reading it again from the start' : 'file rewritten in place (its first bytes changed): reading it again from the start',
        );
      } else if (f) {
        this.log?.warn({ object: key, line: p.line }, 'file replaced by another one under its name: reading the new one from the start');
      }
      loose.push({ key, p: { ...p, file } });
      delete checkpoint.objects[key];
      this.checkpointChanged = true;
    }
    const gone = checkpoint.gone ?? {};
    const claimable = [...loose.map((l) => ({ ...l, goneKey: undefined as string | undefined })), ...Object.entries(gone).map(([goneKey, p]) => ({ key: goneKey, p: p as ObjectProgress & { file: FileIdentity }, goneKey }))].filter((c) => c.p.file);
    const claim = (c: (typeof claimable)[number]): void => {
      claimable.splice(claimable.indexOf(c), 1);
      if (c.goneKey !== undefined) delete gone[c.goneKey];
      this.checkpointChanged = true; // (and an entry is set under the claiming name)
    };
    const unclaimed = files.filter((f) => !checkpoint.objects[f.key]);
    if (claimable.length > 0) {
      // renames first: same inode, same first bytes
      for (const f of unclaimed) {
        // (never the entry this very name just lost: it was truncated or rewritten)
        const c = claimable.find((x) => x.p.file.ino === f.ino && x.key !== f.key);
        if (!c) continue;
        const h = await head(f);
        // (a renamed file is not shorter than what was read of it: one that is was truncated, and is new)
        if (!h || h.fp !== c.p.file.fp || (c.p.offset !== undefined && h.size < c.p.offset)) continue;
        claim(c);
        const { goneAt: _, ...file } = c.p.file;
        checkpoint.objects[f.key] = { ...c.p, file: { ...file, dev: h.dev } };
        this.log?.info({ object: f.key, from: c.goneKey === undefined ? c.key : undefined, offset: c.p.offset ?? null, line: c.p.line }, 'file renamed (rotated): reading on from where it was left');
      }
    }
    // copies (logrotate copytruncate, a compressed rotation): another inode, the same first bytes
    let present: Set<string> | undefined;
    const presentFps = (): Set<string> => (present ??= new Set(Object.values(checkpoint.objects).flatMap((p) => (p.file ? [p.file.fp] : []))));
    for (const f of unclaimed) {
      if (checkpoint.objects[f.key]) continue;
      // no entry to claim, and no file in place it could be a copy just made of (none, or it
      // changed too long ago): its head would change nothing here, and is not read
      if (claimable.length === 0 && (now - f.ctimeMs >= this.copySettleMs || presentFps().size === 0)) continue;
      const h = await head(f);
      if (!h?.fp) continue;
      // (a copy has another inode: the same one shorter than what was read was truncated)
      const c = claimable.find((x) => x.p.file.fp === h.fp && x.key !== f.key && x.p.file.ino !== f.ino);
      if (!c) {
        // the first bytes of a file that is still there: a copy just made, its original about to
        // be truncated (copytruncate) or removed (compress). Wait a little for that; a file that
        // stays like this is another file that begins the same way, and new.
        if (presentFps().has(h.fp) && now - h.ctimeMs < this.copySettleMs) deferred.add(f.key);
        continue;
      }
      if (!h.gzip && c.p.offset !== undefined && h.size < c.p.offset && !isFinished(f)) {
        // shorter than what was read: a copy still being made (or of what was read already): wait until it is quiet
        deferred.add(f.key);
        continue;
      }
      claim(c);
      const file: FileIdentity = { dev: h.dev, ino: h.ino, fp: h.fp, uid: c.p.file.uid };
      if (h.gzip) checkpoint.objects[f.key] = { line: c.p.line, file }; // read by line count
      else if (c.p.offset !== undefined && h.size >= c.p.offset) checkpoint.objects[f.key] = { line: c.p.line, offset: c.p.offset, file };
      else if (c.p.offset !== undefined) checkpoint.objects[f.key] = { line: c.p.line, offset: h.size, done: true, size: h.size, file }; // a copy of what was read already
      else checkpoint.objects[f.key] = { line: c.p.line, file }; // (an entry without offset: by line count)
      this.log?.info({ object: f.key, from: c.goneKey === undefined ? c.key : undefined, offset: checkpoint.objects[f.key]!.offset ?? null, line: c.p.line }, 'copy of a file read before (e.g. copytruncate): reading on from where it was left');
    }
    // what is left is nowhere to be seen: kept a while for a copy that may still turn up
    for (const c of claimable) {
      if (c.goneKey !== undefined) continue;
      gone[c.p.file.uid] = { ...c.p, file: { ...c.p.file, goneAt: now } };
    }
    const keepMs = this.config.lookbackHours * 3_600_000;
    for (const [k, p] of Object.entries(gone)) {
      if (p.file?.goneAt && now - p.file.goneAt <= keepMs) continue;
      delete gone[k];
      this.checkpointChanged = true;
    }
    if (Object.keys(gone).length > 0) checkpoint.gone = gone;
    else if (checkpoint.gone !== undefined) {
      delete checkpoint.gone;
      this.checkpointChanged = true;
    }
    return deferred;
  }
}

/**
 * Which folders a listing need not walk: an hour-partition folder (`y=`, `y=/m=`, ... `h=`)
 * whose hours are all before the watermark holds nothing that will be read (a file there without
 * an entry is skipped as done long ago), unless the checkpoint still has an entry under it (a file
 * read part-way when the watermark passed it). A tree that keeps a year of hours is then walked
 * for its last `lookbackHours` or so, not the whole year at every poll.
 */
function foldersDoneIn(checkpoint: SourceCheckpoint): ((key: string) => boolean) | undefined {
  const watermark = checkpoint.position?.[WATERMARK];
  if (typeof watermark !== 'string' || watermark === '') return undefined;
  let withEntries: Set<string> | undefined;
  return (key) => {
    const hours = partitionPrefix(key);
    if (hours === undefined || hours >= watermark.slice(0, hours.length)) return false;
    if (!withEntries) {
      // the folders of the entries left behind the watermark
      withEntries = new Set();
      for (const k of Object.keys(checkpoint.objects)) {
        const h = parseObjectKey(k).partitionHour;
        if (h === undefined || h >= watermark) continue;
        for (let i = k.indexOf('/'); i !== -1; i = k.indexOf('/', i + 1)) withEntries.add(k.slice(0, i + 1));
      }
    }
    return !withEntries.has(key);
  };
}

/**
 * A listed file's hour partition, worked out once per folder and listing (the partition is the
 * folder's: some files per folder, each key split and parsed at every poll before). A file whose
 * own name has a `name=value` segment is parsed whole.
 */
export function folderHours(): HourOf {
  const byFolder = new Map<string, string | undefined>();
  return (key, folder) => {
    if (key.indexOf('=', folder.length) !== -1) return parseObjectKey(key).partitionHour;
    if (byFolder.has(folder)) return byFolder.get(folder);
    const h = parseObjectKey(folder).partitionHour;
    byFolder.set(folder, h);
    return h;
  };
}

/** A file's hour partition, from its key and its folder (the key up to its last `/`). */
export type HourOf = (key: string, folder: string) => string | undefined;

/** The uid identities of the files in the checkpoint (and those gone). */
function uidsIn(checkpoint: SourceCheckpoint): Set<string> {
  const out = new Set<string>();
  for (const p of [...Object.values(checkpoint.objects), ...Object.values(checkpoint.gone ?? {})]) if (p.file) out.add(p.file.uid);
  return out;
}

/** `YYYY-MM-DDTHH` minus n hours. */
function hourMinus(hour: string, n: number): string {
  const t = Date.parse(`${hour}:00:00Z`) - n * 3_600_000;
  return new Date(t).toISOString().slice(0, 13);
}
