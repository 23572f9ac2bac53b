/**
 * What a source keeps in the tenant's checkpoint: its objects' progress and its own position.
 * The pipeline's checkpoint store (pipeline/checkpoint-store.ts) saves these as they are; a
 * source reads them back to know where to resume.
 */
/** Progress in one object: lines up to `line` are acknowledged by every destination. */
export interface ObjectProgress {
  line: number;
  done?: boolean;
  /** Size (bytes) when it was finished, to notice an object that grew since. */
  size?: number;
  /** Version or ETag that was read, where the source has one. */
  version?: string;
  /** Local files: the byte offset where line `line` ends (reading resumes there). */
  offset?: number;
  /** Local files: which file this is, whatever its name (rotation, copytruncate). */
  file?: FileIdentity;
}

/** A local file's identity (the directory source: sources/directory/file-identity.ts). */
export interface FileIdentity {
  dev: number;
  ino: number;
  /** Hash of its first bytes (up to the first newline, at most 1 KiB; decompressed for gzip). */
  fp: string;
  /** What its records' `log.record.uid` is derived from: fixed when the file is first read, kept through renames. */
  uid: string;
  /** Epoch ms when the file was last seen under no name (in `SourceCheckpoint.gone`). */
  goneAt?: number;
}

export interface SourceCheckpoint {
  objects: Record<string, ObjectProgress>;
  /** Source-specific position (e.g. the partition below which everything is done). */
  position?: Record<string, string | number>;
  /** Directory source: progress of files no longer found under any name (a copy may still turn up), by identity. */
  gone?: Record<string, ObjectProgress>;
}
