/**
 * Which local file this is, whatever its name: device and inode (kept through a rename, e.g.
 * log rotation `x.log` → `x.log.1`) and a fingerprint of its first bytes (which tells a file
 * truncated and rewritten in place, or a new file that reuses a freed inode, from the one that
 * was read; and finds a copy of it, e.g. logrotate's `copytruncate`).
 *
 * The fingerprint covers the first line (its newline included), at most the first 1 KiB: it
 * stays the same while the file grows. It is not known before the first line is complete
 * (unless the file is known to be finished). For gzip, it covers the decompressed bytes, so a
 * rotated file compressed later (`x.log.1` → `x.log.2.gz`) is still recognised.
 */
import { createHash } from 'node:crypto';
import { openFile, type SyncCalls } from './open-file.js';
import { constants, gunzipSync } from 'node:zlib';

/** Bytes the fingerprint covers at most. */
export const FINGERPRINT_BYTES = 1024;
/** Compressed bytes read to find the first decompressed ones of a gzip file. */
const GZIP_HEAD_BYTES = 4 * 1024;

export interface FileHead {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** Last change of the file or its metadata (a copy made now is recent here even if its mtime was preserved). */
  ctimeMs: number;
  gzip: boolean;
  /** Hash of the first line (at most FINGERPRINT_BYTES); null while it is not complete. */
  fp: string | null;
}

/**
 * Opens the file (a symlink is followed) and reads its head. `finished`: the file will not
 * grow, so a first line without a newline is all there is and gets a fingerprint. `sync`: its
 * device, where synchronous calls may be made (open-file.ts).
 */
export async function readFileHead(path: string, finished: boolean, sync?: SyncCalls): Promise<FileHead> {
  const file = await openFile(path, sync);
  try {
    const st = await file.stat();
    const buf = Buffer.allocUnsafe(Math.min(st.size, GZIP_HEAD_BYTES));
    const bytesRead = buf.length > 0 ? await file.read(buf, 0) : 0;
    return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ...headOf(buf.subarray(0, bytesRead), finished) };
  } finally {
    await file.close();
  }
}

/**
 * Whether a file is gzip and its fingerprint, from its first bytes (as many as were read from
 * offset 0; a gzip file's first GZIP_HEAD_BYTES are enough).
 */
export function headOf(first: Buffer, finished: boolean): Pick<FileHead, 'gzip' | 'fp'> {
  let head = first.subarray(0, GZIP_HEAD_BYTES);
  const gzip = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  if (gzip) {
    try {
      // what the bytes read decompress to, without requiring the end of the stream
      head = gunzipSync(head, { finishFlush: constants.Z_SYNC_FLUSH }).subarray(0, FINGERPRINT_BYTES);
    } catch {
      head = head.subarray(0, FINGERPRINT_BYTES); // corrupt: the raw bytes identify it (reading it will report the error)
    }
  }
  return { gzip, fp: fingerprint(head, finished || gzip) };
}

/** Hash of `head` up to its first newline (at most FINGERPRINT_BYTES); null when that is not complete yet. */
export function fingerprint(head: Buffer, finished: boolean): string | null {
  const nl = head.indexOf(0x0a);
  let end: number;
  if (nl !== -1 && nl < FINGERPRINT_BYTES) end = nl + 1;
  else if (head.length >= FINGERPRINT_BYTES) end = FINGERPRINT_BYTES;
  else if (finished && head.length > 0) end = head.length;
  else return null;
  return createHash('sha256').update(head.subarray(0, end)).digest('hex').slice(0, 32);
}

/**
 * What a file's records' `log.record.uid` is derived from (see source.ts uidPrefixFor) when it is
 * first read: its first line's fingerprint alone. A copy of the file (logrotate's copytruncate,
 * a compressed copy) begins with the same line, so its records get the same uids even when the
 * daemon first sees the copy, e.g. after a crash that came before the file's first checkpoint.
 * When a file read before began with the same line (a file truncated and written again, two
 * files alike), the new one is told apart by its device and inode ({@link fileUidIdentity}).
 */
export function contentUidIdentity(fp: string): string {
  return `file\n${fp}`;
}

/** A file's uid identity by device, inode and fingerprint: for a file that begins like one read before. */
export function fileUidIdentity(dev: number, ino: number, fp: string): string {
  return `file\n${dev}:${ino}\n${fp}`;
}
