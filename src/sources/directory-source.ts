/**
 * `type: directory`: a local tree in Tableau's layout (or any tree of NDJSON files), at any
 * depth, including files dropped in later and files that grow (Tableau Server writes its
 * Activity Log locally). Files are read in key order; hidden files, `*.tmp` and names without
 * one of `extensions` (e.g. a README beside the data) are ignored.
 *
 * State stays bounded: finished files whose hour partition is older than `lookbackHours` before
 * the newest partition seen are dropped from the checkpoint and a watermark remembers that
 * everything before it is done. Files without an hour partition are remembered individually.
 */
import { z } from 'zod';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import type { Source, SourceObject } from './source.js';
import type { SourceCheckpoint } from '../pipeline/checkpoint-store.js';
import { parseObjectKey } from '../decoding/object-key.js';
import { durationSchema } from '../util/duration.js';
import { fileChunks } from './file-chunks.js';

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
  })
  .strict();
export type DirectorySourceConfig = z.infer<typeof directorySourceConfigSchema>;

const WATERMARK = 'watermark';

export class DirectorySource implements Source {
  readonly type = 'directory';
  readonly id: string;
  readonly pollIntervalMs: number;
  readonly readConcurrency: number;
  private readonly root: string;

  constructor(private readonly config: DirectorySourceConfig, baseDir: string = process.cwd()) {
    this.root = resolve(baseDir, config.path);
    this.id = config.name ?? `directory:${config.path}`;
    this.pollIntervalMs = config.pollInterval;
    this.readConcurrency = config.concurrency;
  }

  private wanted(name: string): boolean {
    const exts = this.config.extensions;
    if (exts.length === 0) return true;
    const lower = name.toLowerCase();
    return exts.some((x) => lower.endsWith(x.toLowerCase()));
  }

  async pending(checkpoint: SourceCheckpoint): Promise<SourceObject[]> {
    const entries = await readdir(this.root, { recursive: true, withFileTypes: true });
    const files: Array<{ key: string; size: number }> = [];
    for (const e of entries) {
      if (!e.isFile()) continue;
      const parent = (e as unknown as { parentPath?: string; path?: string }).parentPath ?? (e as unknown as { path: string }).path;
      const full = join(parent, e.name);
      const key = full.slice(this.root.length + 1).split(sep).join('/');
      if (key.split('/').some((part) => part.startsWith('.')) || key.endsWith('.tmp')) continue;
      if (!this.wanted(e.name)) continue;
      const st = await stat(full).catch(() => null);
      if (!st) continue; // removed meanwhile
      files.push({ key, size: st.size });
    }
    files.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

    // Bounded state: forget finished files far behind the newest partition.
    let newest = '';
    for (const f of files) {
      const h = parseObjectKey(f.key).partitionHour;
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
    }

    const out: SourceObject[] = [];
    for (const f of files) {
      const h = parseObjectKey(f.key).partitionHour;
      const progress = checkpoint.objects[f.key];
      if (!progress && h && cutoff && h < cutoff) continue; // before the watermark: done long ago
      if (progress?.done && progress.size === f.size) continue;
      const full = join(this.root, ...f.key.split('/'));
      out.push({
        key: f.key,
        identity: `directory\n${f.key}`,
        size: f.size,
        resumeAfterLine: progress?.line ?? 0,
        // reads sized to the file (see file-chunks.ts); at most 1 MiB each, so a prefetched
        // object holds little memory while the one before it is processed
        open: (signal) => fileChunks(full, { expectedSize: f.size, signal }),
      });
    }
    return out;
  }
}

/** `YYYY-MM-DDTHH` minus n hours. */
function hourMinus(hour: string, n: number): string {
  const t = Date.parse(`${hour}:00:00Z`) - n * 3_600_000;
  return new Date(t).toISOString().slice(0, 13);
}
