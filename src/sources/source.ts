/**
 * The contract every source (directory, later s3, tcm, s3-sqs) implements: list the objects that
 * still need reading, given the source's checkpoint, in the order their progress should be
 * committed; and open one as a byte stream. The pipeline owns reading, mapping, export and
 * checkpointing; a source only knows where objects are.
 */
import { createHash } from 'node:crypto';
import type { FileIdentity, SourceCheckpoint } from './source-checkpoint.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';

export interface SourceObject {
  /** Key relative to the source (path or S3 key): names the object in checkpoints, logs and dead letters. */
  key: string;
  /** Identity for derived record ids: the same object read again gives the same ids. */
  identity: string;
  size?: number;
  version?: string;
  /** 1-based count of lines already acknowledged (reading resumes after them). */
  resumeAfterLine: number;
  /**
   * Set when open() gives the bytes from this offset on (a local file resumed by byte offset):
   * the lines before it (`startLine` of them) are not read again, and the checkpoint records the
   * byte offset reached along with the line. Unset: open() gives the whole object.
   */
  startOffset?: number;
  /** Lines before `startOffset` (default `resumeAfterLine`); lines from there to `resumeAfterLine` are skipped. */
  startLine?: number;
  /** The object may still grow (a local file being written): a last line without its newline is left for a later poll. */
  growing?: boolean;
  /** A local file's identity, kept in its checkpoint entry (see checkpoint-store.ts). */
  file?: FileIdentity;
  /**
   * What the source knows of the object's records beyond its key (e.g. Tableau's tenant id,
   * resource attributes): merged over what the key says (`parseObjectKey`).
   */
  info?: Partial<ObjectKeyInfo>;
  /**
   * Set by open() when it read nothing and the object is to be left as if it had not been
   * listed (a local file removed, replaced or unreadable before its first bytes: looked at
   * again at the next listing). No progress is recorded for it.
   */
  skipped?: boolean;
  /**
   * The object's bytes. A source may leave `identity`, `file`, `startOffset`, `startLine` and
   * `size` to be set by open() before it yields its first bytes (the directory source names a
   * file from the bytes it reads: one open per file); the pipeline reads them only after that.
   * A read error with `permanent: true` (or a corrupt gzip stream) means the
   * object can never be read past that point: the rest is dead-lettered. Any other error is
   * transient: after a few attempts the poll stops and the object is read again later, from the
   * last acknowledged line.
   */
  open(signal: AbortSignal): AsyncIterable<Buffer | Uint8Array>;
}

export interface Source {
  /** Stable id of this source within its tenant: the checkpoint key. */
  readonly id: string;
  readonly type: string;
  /** Seconds between polls in daemon mode. */
  readonly pollIntervalMs: number;
  /** How many objects the pipeline may read at once (their progress still commits in order). Default 1. */
  readonly readConcurrency?: number;
  /** After pending(): true when the source returned only part of what is available (a backlog bigger than one poll). */
  readonly hasMore?: boolean;
  /**
   * After pending(): whether it changed the checkpoint (pruned it, moved its position, matched
   * an entry to another object). A source that keeps this (a boolean from its construction on)
   * is taken at its word; the checkpoint of one that does not is compared before and after.
   */
  readonly checkpointChanged?: boolean;
  /**
   * Called once an object was read to the end and every destination accepted all its records
   * (after its `done` progress was committed): e.g. delete its queue message. Errors are logged.
   */
  objectFinished?(obj: SourceObject): Promise<void>;
  /** Objects to read now, oldest first. May prune the checkpoint (bounded state). */
  pending(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]>;
  close?(): Promise<void>;
}

/** Prefix of record ids derived from an object's identity (96 bits of SHA-256). */
export function uidPrefixFor(identity: string): string {
  return createHash('sha256').update(identity).digest('hex').slice(0, 24);
}
