/**
 * The embedded checkpoint store: one small JSON file per tenant under the state directory,
 * replaced atomically (write a temporary file, fsync it, rename it over the old one, fsync the
 * directory), so a `kill -9` or power cut at any moment leaves either the old or the new
 * checkpoint, never a torn one. A failed write (disk full) keeps the previous file and is
 * reported; the pipeline then stops advancing instead of losing its place.
 *
 * On a local filesystem (core/local-sync-calls.ts) a save's open, write, close and rename are
 * synchronous calls (a few microseconds each) and only its two `fsync`s go through libuv's pool:
 * each call through the pool costs 40-60 µs of CPU in handoffs on this project's machines, and a
 * backlog saves after nearly every acknowledgement (docs/performance.md, round 33).
 */
import { close, closeSync, fsync, mkdirSync, open, openSync, readFileSync, rename, renameSync, statSync, write, writeSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { localSyncCalls, type LocalSyncCalls } from '../core/local-sync-calls.js';
import { CheckpointEncoder } from './checkpoint-encoder.js';

export type { ObjectProgress, FileIdentity, SourceCheckpoint } from '../sources/source-checkpoint.js';
import type { SourceCheckpoint } from '../sources/source-checkpoint.js';

interface CheckpointFile {
  version: 1;
  savedAt: string;
  sources: Record<string, SourceCheckpoint>;
}

/** What a checkpoint file must look like to be used (fields added by later versions are kept). */
const objectProgressSchema = z.looseObject({
  line: z.number().int().min(0),
  done: z.boolean().optional(),
  size: z.number().min(0).optional(),
  version: z.string().optional(),
});
const checkpointFileSchema = z.looseObject({
  version: z.literal(1),
  savedAt: z.string(),
  sources: z.record(
    z.string(),
    z.looseObject({
      objects: z.record(z.string(), objectProgressSchema),
      position: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
    }),
  ),
});

/** A checkpoint file that cannot be used: names the file and what is wrong with it. */
export class CheckpointFileError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(
      `${file}: ${problem}. The tenant does not start rather than read everything again; repair the file, or move it away ` +
        'to start from nothing (every object is then read and sent again)',
    );
    this.name = 'CheckpointFileError';
  }
}

const fsyncAsync = promisify(fsync);

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

/** One zod issue as `path: message`, the path as it would be written in JavaScript. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p) ? `${i === 0 ? '' : '.'}${p}` : `[${JSON.stringify(String(p))}]`))
    .join('');
  return `${path || '(top level)'}: ${issue.message}`;
}

export class CheckpointStore {
  readonly file: string;
  private data: CheckpointFile;
  private dirty = false;
  private lastSavedAt = 0;
  private tmpCounter = 0;
  /** The file's bytes, built in one buffer kept between saves (checkpoint-encoder.ts). */
  private readonly encoder = new CheckpointEncoder();
  /** An async save is writing the encoder's buffer (a save made meanwhile encodes into a buffer of its own). */
  private writing = false;
  /** The state directory's device (where synchronous calls may be made: `syncCalls`). */
  private readonly dev: number;
  /** A save's calls made synchronously on that device, for when `syncCalls` allows them. */
  private readonly localCalls: FileCalls | undefined;

  constructor(
    readonly dir: string,
    /** Where a save's calls other than its fsyncs may be synchronous; undefined: every call through the pool. */
    private readonly syncCalls: LocalSyncCalls | undefined = localSyncCalls,
  ) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, 'checkpoints.json');
    this.dev = statSync(dir).dev;
    this.localCalls = syncCalls && syncFileCalls(syncCalls, this.dev);
    this.data = this.read();
  }

  private read(): CheckpointFile {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, savedAt: '', sources: {} };
      throw err;
    }
    if (text.trim() === '') throw new CheckpointFileError(this.file, 'the checkpoint file is empty');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new CheckpointFileError(this.file, `the checkpoint file is not valid JSON (${(err as Error).message})`);
    }
    if (typeof json === 'object' && json !== null && 'version' in json && json.version !== 1) {
      throw new CheckpointFileError(this.file, `checkpoint file version ${JSON.stringify(json.version)}, this version of the program reads version 1`);
    }
    const checked = checkpointFileSchema.safeParse(json);
    if (!checked.success) {
      const issues = checked.error.issues;
      const shown = issues.slice(0, 3).map(describeIssue).join('; ');
      throw new CheckpointFileError(this.file, `not a checkpoint file: ${shown}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`);
    }
    // (checked, it is the file as written: no defaults to fill in.) Objects by key, a name from
    // the data: no prototype (an object named `__proto__` is an object like any other), so they
    // are taken from the parsed JSON, which keeps such a key, not from zod's copy, which does not
    const parsed = json as CheckpointFile;
    for (const s of Object.values(parsed.sources)) s.objects = Object.assign(Object.create(null) as SourceCheckpoint['objects'], s.objects);
    return parsed;
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

  /** When the file last matched the state: its last successful save, or since confirmed (0 before the first). */
  get lastSavedAtMs(): number {
    return this.lastSavedAt;
  }

  /**
   * The state was looked at and found as the file holds it (nothing dirty): the file is as good
   * as saved now, for the checkpoint's age. Does nothing while something is unsaved.
   */
  confirmCurrent(): void {
    if (!this.dirty && this.lastSavedAt > 0) this.lastSavedAt = Date.now();
  }

  /**
   * Write the file if anything changed, the I/O (write, fsync, rename, directory fsync) off the
   * main thread, or on a local filesystem all of it but the fsyncs as synchronous calls. Throws
   * when the write failed; the old file is intact. A save started while another is still writing
   * (CheckpointSaver's flush at a stop can overlap one of its own saves) encodes into a buffer of
   * its own.
   */
  async saveAsync(): Promise<boolean> {
    if (!this.dirty) return false;
    const sync = this.syncCalls;
    let calls = POOL_CALLS;
    if (sync && this.localCalls && sync.allows(this.dev, this.dir)) {
      await sync.breathe();
      if (!this.dirty) return false; // saved meanwhile
      calls = this.localCalls;
    }
    const { tmp, bytes } = this.snapshot();
    let fd = -1;
    try {
      this.writing = true;
      try {
        fd = await calls.open(tmp, 'w');
        await calls.write(fd, bytes);
      } finally {
        this.writing = false;
      }
      await fsyncAsync(fd);
      const written = fd;
      fd = -1;
      await calls.close(written);
      await calls.rename(tmp, this.file);
      const dirFd = await calls.open(this.dir, 'r');
      try {
        await fsyncAsync(dirFd);
      } finally {
        await calls.close(dirFd);
      }
    } catch (err) {
      if (fd >= 0) {
        try {
          await calls.close(fd);
        } catch {
          // (the save's own error is the one to report)
        }
      }
      await unlink(tmp).catch(() => undefined);
      this.dirty = true;
      throw err;
    }
    this.lastSavedAt = Date.now();
    return true;
  }

  /** The state as it is now, to be written; changes after this mark the store dirty again. */
  private snapshot(): { tmp: string; bytes: Buffer } {
    this.data.savedAt = new Date().toISOString();
    this.dirty = false;
    return { tmp: `${this.file}.tmp-${process.pid}-${++this.tmpCounter}`, bytes: (this.writing ? new CheckpointEncoder() : this.encoder).encode(this.data) };
  }
}
