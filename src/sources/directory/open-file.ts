/**
 * A local file opened for reading, its calls made through libuv's pool or, on a local
 * filesystem that allows it, synchronously (local-sync-calls.ts): the one shape both the
 * directory source's reader (file-chunks.ts) and its head reads (file-identity.ts) use.
 */
import fs, { type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Logger } from '../../core/logger.js';
import type { LocalSyncCalls } from '../../core/local-sync-calls.js';

/** An open file, whichever way its calls are made. */
export interface OpenFile {
  stat(): Promise<Stats> | Stats;
  /** Bytes read into `buf` (as many as it holds, or fewer at the end) from `pos`. */
  read(buf: Buffer, pos: number): Promise<number> | number;
  close(): Promise<void> | void;
}

/** Where synchronous calls may be made: the file is on device `dev`. */
export interface SyncCalls {
  calls: LocalSyncCalls;
  dev: number;
  log?: Logger | undefined;
}

/** Opens `path`: with synchronous calls when `sync` is given and its device allows them now, else through the pool. */
export async function openFile(path: string, sync?: SyncCalls): Promise<OpenFile> {
  if (sync?.calls.allows(sync.dev, path)) {
    const { calls, dev, log } = sync;
    const fd = await calls.call(dev, () => fs.openSync(path, 'r'), log);
    return {
      stat: () => calls.run(dev, () => fs.fstatSync(fd), log),
      // (a file of many reads: the event loop turns between slices of them)
      read: (buf, pos) => calls.call(dev, () => fs.readSync(fd, buf, 0, buf.length, pos), log),
      close: () => calls.run(dev, () => fs.closeSync(fd), log),
    };
  }
  const handle = await open(path, 'r');
  return {
    stat: () => handle.stat(),
    read: async (buf, pos) => (await handle.read(buf, 0, buf.length, pos)).bytesRead,
    close: () => handle.close(),
  };
}
