/**
 * The embedded checkpoint store: a tenant's progress under the state directory, in two files.
 *
 * - `checkpoints.json`, the whole state, replaced atomically (write a temporary file, fsync it,
 *   rename it over the old one, fsync the directory), so a `kill -9` or power cut at any moment
 *   leaves either the old or the new file, never a torn one. This is a **fold**: the first save of
 *   a process, each time the journal has grown as large as the state, and a tenant's stop.
 * - Between folds, the **journal** it names (`checkpoints.journal.<n>`): each save appends one
 *   line of only the entries changed since the last one (pipeline/checkpoint-changes.ts) and
 *   syncs it. A save then costs its changes, not the whole state: a tenant with thousands of
 *   objects in its lookback no longer writes megabytes at every acknowledgement. A line cut short
 *   by a crash was never reported saved and is left out when the files are read back
 *   (pipeline/checkpoint-file.ts).
 *
 * A failed write (disk full) keeps the previous files and is reported; the pipeline then stops
 * advancing instead of losing its place, and the next save is a fold.
 *
 * On a local filesystem (core/local-sync-calls.ts) a save's open, write, close and rename are
 * synchronous calls (a few microseconds each) and only its `fsync`s go through libuv's pool:
 * each call through the pool costs 40-60 µs of CPU in handoffs on this project's machines, and a
 * backlog saves after nearly every acknowledgement (docs/performance.md, rounds 33 and 34).
 */
import { close, closeSync, fdatasync, fsync, mkdirSync, open, openSync, rename, renameSync, statSync, write, writeSync } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { localSyncCalls, type LocalSyncCalls } from '../core/local-sync-calls.js';
import { CheckpointEncoder } from './checkpoint-encoder.js';
import { WrittenEntries } from './checkpoint-changes.js';
import { BASE_NAME, JOURNAL_PREFIX, journalName, readCheckpointState, type CheckpointFile } from './checkpoint-file.js';

export type { ObjectProgress, FileIdentity, SourceCheckpoint } from '../sources/source-checkpoint.js';
export { CheckpointFileError, readCheckpointState } from './checkpoint-file.js';
import type { SourceCheckpoint } from '../sources/source-checkpoint.js';

/** A journal is folded once it is this large, or as large as `checkpoints.json` if that is larger. */
export const JOURNAL_FOLD_BYTES = 64 * 1024;

const fsyncAsync = promisify(fsync);
const fdatasyncAsync = promisify(fdatasync);

/**
 * A save's file calls but its fsyncs (those always go through libuv's pool: their time is the
 * disk's), made through the pool or synchronously.
 */
interface FileCalls {
  open(path: string, flags: 'w' | 'r'): Promise<number> | number;
  write(fd: number, bytes: Buffer): Promise<void> | void;
  close(fd: number): Promise<void> | void;
  rename(from: string, to: string): Promise<void> | void;
}

const openAsync = promisify(open);
const writeAsync = promisify(write);
const closeAsync = promisify(close);
const renameAsync = promisify(rename);

const POOL_CALLS: FileCalls = {
  open: (path, flags) => openAsync(path, flags, 0o600),
  write: async (fd, bytes) => {
    for (let done = 0; done < bytes.length; ) done += (await writeAsync(fd, bytes, done, bytes.length - done)).bytesWritten;
  },
  close: (fd) => closeAsync(fd),
  rename: (from, to) => renameAsync(from, to),
};

/** The calls made synchronously on device `dev` (core/local-sync-calls.ts: a slow one sends the device back to the pool). */
function syncFileCalls(calls: LocalSyncCalls, dev: number): FileCalls {
  return {
    open: (path, flags) => calls.run(dev, () => openSync(path, flags, 0o600)),
    write: (fd, bytes) =>
      calls.run(dev, () => {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
      }),
    close: (fd) => calls.run(dev, () => closeSync(fd)),
    rename: (from, to) => calls.run(dev, () => renameSync(from, to)),
  };
}

/** The journal being appended to. */
interface OpenJournal {
  generation: number;
  fd: number;
  bytes: number;
  /** Saves appended since its fold. */
  saves: number;
}

export class CheckpointStore {
  readonly file: string;
  private data: CheckpointFile;
  private dirty = false;
  private lastSavedAt = 0;
  private tmpCounter = 0;
  /** The file's bytes, built in one buffer kept between saves (checkpoint-encoder.ts). */
  private readonly encoder = new CheckpointEncoder();
  /** The state directory's device (where synchronous calls may be made: `syncCalls`). */
  private readonly dev: number;
  /** A save's calls made synchronously on that device, for when `syncCalls` allows them. */
  private readonly localCalls: FileCalls | undefined;
  /** Saves run one after another (the saver's flush at a stop can come while one of its saves runs). */
  private queue: Promise<unknown> = Promise.resolve();
  /** Undefined before the process's first fold, and after a failed append: the next save folds. */
  private journal: OpenJournal | undefined;
  /** The entries the files hold, to find what changed (with the journal). */
  private written: WrittenEntries | undefined;
  /** The size of `checkpoints.json` at the last fold. */
  private baseBytes = 0;
  /** The generation numbers given so far (the next fold's is one more). */
  private generation: number;

  constructor(
    readonly dir: string,
    /** Where a save's calls other than its fsyncs may be synchronous; undefined: every call through the pool. */
    private readonly syncCalls: LocalSyncCalls | undefined = localSyncCalls,
  ) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, BASE_NAME);
    this.dev = statSync(dir).dev;
    this.localCalls = syncCalls && syncFileCalls(syncCalls, this.dev);
    this.data = readCheckpointState(dir);
    this.generation = this.data.journal ?? 0;
  }

  /** The live state of one source (mutated by the pipeline, then saved). */
  source(id: string): SourceCheckpoint {
    let s = this.data.sources[id];
    if (!s) {
      s = { objects: Object.create(null) as SourceCheckpoint['objects'] };
      this.data.sources[id] = s;
    }
    return s;
  }

  markDirty(): void {
    this.dirty = true;
  }

  get isDirty(): boolean {
    return this.dirty;
  }

  /** When the files last matched the state: its last successful save, or since confirmed (0 before the first). */
  get lastSavedAtMs(): number {
    return this.lastSavedAt;
  }

  /**
   * The state was looked at and found as the files hold it (nothing dirty): they are as good as
   * saved now, for the checkpoint's age. Does nothing while something is unsaved.
   */
  confirmCurrent(): void {
    if (!this.dirty && this.lastSavedAt > 0) this.lastSavedAt = Date.now();
  }

  /**
   * Save what changed, if anything did: a line appended to the journal, or a fold. Throws when the
   * write failed; the files saved before are intact. Saves made while one runs wait for it.
   */
  saveAsync(): Promise<boolean> {
    return this.queued(() => this.save(false));
  }

  /**
   * At a stop: save what is left and fold, so `checkpoints.json` alone holds the state, and
   * close the journal. Throws when the write failed (the journal then stays, with what it held).
   */
  close(): Promise<void> {
    return this.queued(async () => {
      await this.save(true);
      const journal = this.journal;
      if (!journal) return;
      this.journal = undefined;
      this.written = undefined;
      await closeAsync(journal.fd).catch(() => undefined);
      // (a journal with no save in it says nothing: checkpoints.json is the state)
      if (journal.saves === 0) await unlink(join(this.dir, journalName(journal.generation))).catch(() => undefined);
    });
  }

  private queued<T>(run: () => Promise<T>): Promise<T> {
    const result = this.queue.then(run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async save(fold: boolean): Promise<boolean> {
    if (!this.dirty && !(fold && this.journal && this.journal.saves > 0)) return false;
    const sync = this.syncCalls;
    let calls = POOL_CALLS;
    if (sync && this.localCalls && sync.allows(this.dev, this.dir)) {
      await sync.breathe();
      calls = this.localCalls;
    }
    if (!fold && this.journal && this.written && (await this.append(this.journal, this.written, calls))) return true;
    await this.fold(calls);
    return true;
  }

  /** Append the changes to the journal; false when that would make it larger than a fold's worth (then fold instead). */
  private async append(journal: OpenJournal, written: WrittenEntries, calls: FileCalls): Promise<boolean> {
    const savedAt = new Date().toISOString();
    const pending = written.changes(this.data.sources, savedAt);
    if (!pending) {
      // marked changed, but every entry is the one written
      this.dirty = false;
      this.lastSavedAt = Date.now();
      return true;
    }
    const bytes = Buffer.from(pending.line, 'utf8');
    if (journal.bytes + bytes.length > Math.max(JOURNAL_FOLD_BYTES, this.baseBytes)) return false;
    this.dirty = false;
    try {
      await calls.write(journal.fd, bytes);
      await fdatasyncAsync(journal.fd);
    } catch (err) {
      // the journal may end in part of this line: never appended to again (the next save folds)
      this.journal = undefined;
      await closeAsync(journal.fd).catch(() => undefined);
      this.dirty = true;
      throw err;
    }
    journal.bytes += bytes.length;
    journal.saves++;
    written.keep(pending);
    this.data.savedAt = savedAt;
    this.lastSavedAt = Date.now();
    return true;
  }

  /**
   * Write the whole state to `checkpoints.json` naming a new, empty journal, created before the
   * rename so that the directory's fsync after it makes both durable; then the journal before it
   * goes. A crash anywhere leaves the old file with its journal or the new file with its own.
   */
  private async fold(calls: FileCalls): Promise<void> {
    const generation = ++this.generation;
    this.data.savedAt = new Date().toISOString();
    const data: CheckpointFile = { ...this.data, journal: generation };
    const bytes = this.encoder.encode(data);
    const written = WrittenEntries.of(this.data.sources);
    this.dirty = false;
    const tmp = `${this.file}.tmp-${process.pid}-${++this.tmpCounter}`;
    const journalFile = join(this.dir, journalName(generation));
    const header = Buffer.from(`${JSON.stringify({ version: 1, journal: generation })}\n`);
    let fd = -1;
    let journalFd = -1;
    try {
      fd = await calls.open(tmp, 'w');
      await calls.write(fd, bytes);
      await fsyncAsync(fd);
      const done = fd;
      fd = -1;
      await calls.close(done);
      journalFd = await calls.open(journalFile, 'w');
      await calls.write(journalFd, header);
      await calls.rename(tmp, this.file);
      const dirFd = await calls.open(this.dir, 'r');
      try {
        await fsyncAsync(dirFd);
      } finally {
        await calls.close(dirFd);
      }
    } catch (err) {
      for (const open of [fd, journalFd]) {
        if (open < 0) continue;
        try {
          await calls.close(open);
        } catch {
          // (the save's own error is the one to report)
        }
      }
      await unlink(tmp).catch(() => undefined);
      if (journalFd >= 0) await unlink(journalFile).catch(() => undefined);
      this.dirty = true;
      throw err;
    }
    const before = this.journal;
    this.journal = { generation, fd: journalFd, bytes: header.length, saves: 0 };
    this.written = written;
    this.baseBytes = bytes.length;
    if (before) await closeAsync(before.fd).catch(() => undefined);
    await this.removeOtherJournals(generation);
    this.lastSavedAt = Date.now();
  }

  /** The journals of folds before (and of any a crash left behind): what they held is in checkpoints.json now. */
  private async removeOtherJournals(generation: number): Promise<void> {
    const current = journalName(generation);
    const names = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of names) {
      if (name.startsWith(JOURNAL_PREFIX) && name !== current) await unlink(join(this.dir, name)).catch(() => undefined); // (else left for the next fold)
    }
  }
}
