/**
 * A finished file read for the first time, as the directory source hands it to the pipeline:
 * opened once, its identity (device, inode, fingerprint of its first line) and whether it is gzip
 * taken from the handle and the first bytes its read starts with, set before those bytes reach the
 * pipeline (see SourceObject.open). A file gone, replaced or unreadable before its first bytes is
 * `skipped` (left as if not listed: looked at again at the next listing).
 *
 * An instance of a class, not an object literal with closures: a backlog lists thousands of
 * these at once and holds them until they are read (6 000 small objects held 14 MB in their
 * closures and contexts, 2.3 KB each; these hold their fields, the listing's key and path).
 */
import type { Stats } from 'node:fs';
import type { Logger } from '../../core/logger.js';
import type { SourceObject } from '../source.js';
import type { FileIdentity } from '../source-checkpoint.js';
import { fileChunks } from './file-chunks.js';
import { headOf } from './file-identity.js';
import type { LocalSyncCalls } from '../../core/local-sync-calls.js';
import type { SyncCalls } from './open-file.js';

/** What the files of one listing share: how they are named and how they are read. */
export interface FirstReadContext {
  /** A new identity for a file read for the first time (device, inode, fingerprint). */
  name(dev: number, ino: number, fp: string): FileIdentity;
  /** Where calls may be synchronous (local-sync-calls.ts); undefined: none. */
  calls: LocalSyncCalls | undefined;
  log: Logger | undefined;
}

export class FirstReadFile implements SourceObject {
  identity = ''; // set with the first bytes
  resumeAfterLine = 0;
  file: FileIdentity | undefined = undefined;
  /** Plain files: read by byte offset from their start (set with the first bytes); gzip: by line count. */
  startOffset: number | undefined = undefined;
  startLine: number | undefined = undefined;
  skipped: boolean | undefined = undefined;
  /** The size listed, then (a plain file) its end as read: where its next read starts. */
  size: number | undefined;

  constructor(
    readonly key: string,
    /** The size listed: what a read expects to find. */
    private readonly listedSize: number,
    private readonly path: string,
    private readonly dev: number,
    /** The inode listed: a path that names another file by the time it is opened is not read. */
    private readonly ino: number,
    private readonly ctx: FirstReadContext,
  ) {
    this.size = listedSize;
  }

  open(signal: AbortSignal): AsyncIterable<Buffer> {
    return this.file ? this.again(signal) : this.first(signal);
  }

  private sync(): SyncCalls | undefined {
    return this.ctx.calls ? { calls: this.ctx.calls, dev: this.dev, log: this.ctx.log } : undefined;
  }

  /** Named from the handle and the first bytes; plain: to the size listed (growth is read from there at the next listing); gzip: to its end. */
  private named(st: Stats, bytes: Buffer): { endAtExpectedSize: boolean } {
    const { gzip, fp } = headOf(bytes, true);
    this.file = this.ctx.name(st.dev, st.ino, fp!);
    this.identity = this.file.uid;
    if (!gzip) {
      this.startOffset = 0;
      this.startLine = 0;
    }
    return { endAtExpectedSize: !gzip };
  }

  private ended(end: number | null): void {
    if (this.startOffset === undefined) return; // gzip: its size is the one listed
    this.size = end ?? undefined;
  }

  private async *first(signal: AbortSignal): AsyncGenerator<Buffer> {
    try {
      const chunks = fileChunks(this.path, {
        expectedSize: this.listedSize,
        signal,
        sync: this.sync(),
        ino: this.ino,
        onEnd: (end) => this.ended(end),
        onFirstBytes: (st, bytes) => this.named(st, bytes),
      });
      for await (const chunk of chunks) yield chunk;
    } catch (err) {
      if (this.file || signal.aborted) throw err;
      this.ctx.log?.debug({ object: this.key, err: (err as Error).message }, 'file not read: it could not be opened');
    }
    if (!this.file) this.skipped = true;
  }

  /** Read again after a transient error: the file named on the first read, from its start. */
  private again(signal: AbortSignal): AsyncIterable<Buffer> {
    return fileChunks(this.path, {
      expectedSize: this.listedSize,
      signal,
      sync: this.sync(),
      ino: this.file!.ino,
      endAtExpectedSize: this.startOffset !== undefined,
      onEnd: (end) => this.ended(end),
    });
  }
}
