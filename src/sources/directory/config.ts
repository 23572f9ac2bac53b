/** The `directory` source's configuration: its options, their defaults and rules, and its id. */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';

export const directorySourceConfigSchema = z
  .object({
    type: z.literal('directory'),
    /** Checkpoint key; defaults to `directory:<path>`. */
    name: z.string().min(1).optional(),
    path: z.string().min(1),
    pollInterval: durationSchema.default(10_000),
    /** How far behind the newest hour partition a late file is still picked up. */
    lookbackHours: z.number().int().positive().default(48),
    /** File name endings that are read (case-insensitive); an empty list reads every file. */
    extensions: z.array(z.string()).default(['.txt', '.json', '.ndjson', '.jsonl', '.log', '.gz']),
    /**
     * Files opened ahead of the one being read (their first bytes prefetched). Objects are still
     * processed in order; this hides the open/read latency of many small files.
     */
    concurrency: z.number().int().min(1).max(64).default(4),
    /**
     * A last line without a newline is read (as a complete record) once its file has not changed
     * for this long and a newer file exists in its folder (it was rotated away). 0: at once
     * (folders of finished files). Long by default: a process that sits idle with half a line
     * written while another file of its folder changes must not have that half read as a record.
     */
    finishAfter: durationSchema.default(3_600_000),
    /**
     * On a local filesystem (ext4, xfs, btrfs, tmpfs, overlay, ...), the listing's `stat`s and the
     * files' reads are synchronous calls, each a few microseconds instead of a handoff to
     * Node's thread pool; the event loop is let to turn every few milliseconds, and a device
     * whose calls turn slow goes back to the pool. Network and FUSE filesystems (NFS, SMB, a
     * mounted bucket) are always read through the pool. false: every call through the pool.
     */
    syncLocalReads: z.boolean().default(true),
    /**
     * A file of an hour partition read to its end, in a folder whose names have not changed, is
     * not `stat`ed at every poll but once per this interval: a file added, removed or renamed
     * changes its folder and is seen at once; one rewritten in place under its name is seen within
     * this interval. 0: every file at every poll.
     */
    settledRecheckInterval: durationSchema.default(60_000),
  })
  .strict();
export type DirectorySourceConfig = z.infer<typeof directorySourceConfigSchema>;

/** The source's id (its checkpoint key): `name`, else `directory:<path>`. */
export function directorySourceId(config: Pick<DirectorySourceConfig, 'name' | 'path'>): string {
  return config.name ?? `directory:${config.path}`;
}
