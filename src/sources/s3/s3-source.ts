/**
 * `type: s3`: tails the Activity Log bucket Tableau Cloud replicates into
 * (`<prefix>pod=…/siteLuid=…/y=…/m=…/d=…/h=…/eventType=…/<file>`), every site under the prefix.
 *
 * Listing (s3-partitions.ts) walks the hour partitions from a per-site mark on, never the
 * whole bucket. State per site, in the checkpoint's `position`:
 *   - `from:<site>`: hour partitions before it are read, acknowledged and never listed again;
 *   - `newest:<site>`: the newest hour partition seen (the high-water mark).
 * `from` trails `newest` by `lookbackHours`, so an object that lands late in an hour already
 * read is still picked up while it is within that window; it never passes an object that is
 * not finished. The checkpoint's `objects` map only holds objects at or after `from`: entries
 * below it are pruned on every listing, and while a long backlog is being read the mark moves
 * on as each hour is finished (see `compact`), so the file stays small however many objects
 * are read.
 *
 * Reading streams GetObject bodies pinned to the listed ETag (`If-Match`): an object replaced
 * since it was listed is not read half old, half new. It is skipped with a warning and its
 * new version is read from the start on the next poll (it has a new identity, hence new
 * record ids). A body cut mid-way (timeout, reset) is resumed with a Range request at the
 * byte where it stopped, still pinned to the same ETag.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Source, SourceObject } from '../source.js';
import type { SourceContext } from '../source-descriptor.js';
import type { SourceCheckpoint } from '../source-checkpoint.js';
import type { SourceMetrics } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { createS3Client, SdkS3Lister, type S3Lister } from '../s3-common/s3-client.js';
import { readS3Object, type S3ObjectReaderOptions } from '../s3-common/s3-object-reader.js';
import { addHours, discoverRoots, normalizedPrefix, hourFromMs, hourToMs, limiter, listRootObjects, parseTimeBound, type Hour, type PartitionObject, type PartitionRoot } from '../s3-common/s3-partitions.js';

export { s3SourceConfigSchema, type S3SourceConfig } from './config.js';
import { s3SourceId, type S3SourceConfig } from './config.js';

/** What the source takes of the settings (source-descriptor.ts): it resolves no paths. */
export type S3SourceContext = Pick<SourceContext, 'metrics' | 'log' | 'env'>;

export interface S3SourceOptions {
  /** The clock (tests). */
  now?: () => number;
  /** Parallel list calls per poll (default 8). */
  listConcurrency?: number;
  /** First pause before resuming an interrupted body (default: BACKOFF_DEFAULTS.objectResume, 500 ms doubling). */
  resumeDelayMs?: number;
}

export { PermanentObjectError } from '../s3-common/s3-object-reader.js';

const FROM = 'from:';
const NEWEST = 'newest:';
/** Clock skew allowance: partitions up to one hour ahead of now are read. */
const FUTURE_HOURS = 1;

interface RootPlan {
  rel: string;
  /** Hours listed in this poll, oldest first, with their objects and listed versions. */
  hours: Array<{ hour: Hour; objects: Array<{ key: string; version: string }> }>;
  cursor: number;
  /** Hours before this are not compacted (they stay re-listed for late objects). */
  windowStart: Hour;
}

export class S3Source implements Source {
  readonly type = 's3';
  readonly id: string;
  readonly pollIntervalMs: number;
  readonly readConcurrency: number;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly client: S3Client;
  private readonly secrets: string[];
  private readonly lister: S3Lister;
  private readonly log: Logger;
  private readonly metrics: SourceMetrics;
  private readonly now: () => number;
  private readonly listConcurrency: number;
  private readonly reader: S3ObjectReaderOptions;
  private knownRoots = new Set<string>();
  private warnedNoRoots = false;
  /** The listing of the current poll, for `compact`. */
  private plan: { checkpoint: SourceCheckpoint; roots: RootPlan[] } | null = null;
  private newestOpened: Hour = '';

  constructor(private readonly config: S3SourceConfig, ctx: S3SourceContext, options: S3SourceOptions = {}) {
    this.bucket = config.bucket;
    this.prefix = normalizedPrefix(config.prefix);
    this.id = s3SourceId(config);
    this.pollIntervalMs = config.pollInterval;
    this.readConcurrency = config.concurrency;
    this.log = ctx.log.child({ source: this.id });
    this.metrics = ctx.metrics;
    this.now = options.now ?? Date.now;
    this.listConcurrency = options.listConcurrency ?? 8;
    const built = createS3Client(config, ctx.env);
    this.client = built.client;
    this.secrets = built.secrets;
    this.lister = new SdkS3Lister(this.client, this.bucket, this.metrics, this.secrets);
    this.reader = { client: this.client, secrets: this.secrets, metrics: this.metrics, log: this.log, ...(options.resumeDelayMs !== undefined ? { resumeDelayMs: options.resumeDelayMs } : {}) };
  }

  async pending(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    const nowMs = this.now();
    let upper = addHours(hourFromMs(nowMs), FUTURE_HOURS);
    if (this.config.until) upper = minHour(upper, hourFromMs(parseTimeBound(this.config.until, nowMs)! - 1));
    const since = this.config.since ? hourFromMs(parseTimeBound(this.config.since, nowMs)!) : undefined;
    const position = (checkpoint.position ??= {});
    const limit = limiter(this.listConcurrency);

    const roots = await discoverRoots(this.lister, this.prefix, signal, limit);
    this.noteRoots(roots);

    const listed = await Promise.all(
      roots.map(async (root) => {
        const from = typeof position[FROM + root.rel] === 'string' ? (position[FROM + root.rel] as Hour) : undefined;
        const start = maxHour(from, since);
        const objects = await listRootObjects(this.lister, root, start, upper, signal, limit);
        return { root, from, objects };
      }),
    );

    const out: Array<{ hour: Hour; obj: SourceObject }> = [];
    const plans: RootPlan[] = [];
    for (const { root, from, objects } of listed) {
      objects.sort((a, b) => (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      let newest = typeof position[NEWEST + root.rel] === 'string' ? (position[NEWEST + root.rel] as Hour) : '';
      let earliestUnfinished: Hour | undefined;
      const hours: RootPlan['hours'] = [];
      for (const o of objects) {
        if (o.hour > newest) newest = o.hour;
        const version = versionOf(o);
        const progress = checkpoint.objects[o.key];
        const sameVersion = progress !== undefined && (progress.version === undefined || progress.version === version);
        if (hours.length === 0 || hours[hours.length - 1]!.hour !== o.hour) hours.push({ hour: o.hour, objects: [] });
        hours[hours.length - 1]!.objects.push({ key: o.key, version });
        if (progress?.done && sameVersion) continue;
        if (progress && !sameVersion) this.log.info({ object: o.key }, 'object changed since it was read: its new version is read from the start');
        earliestUnfinished ??= o.hour;
        out.push({ hour: o.hour, obj: this.sourceObject(o, version, sameVersion ? progress.line : 0) });
      }
      if (!newest) continue; // nothing in this root yet
      position[NEWEST + root.rel] = newest;
      const windowStart = addHours(newest, -this.config.lookbackHours);
      let nextFrom = earliestUnfinished && earliestUnfinished < windowStart ? earliestUnfinished : windowStart;
      if (from && nextFrom < from) nextFrom = from; // never moves back
      if (since && nextFrom < since) nextFrom = since;
      position[FROM + root.rel] = nextFrom;
      plans.push({ rel: root.rel, hours, cursor: 0, windowStart });
    }
    this.pruneBelowMarks(checkpoint);
    this.plan = { checkpoint, roots: plans };

    out.sort((a, b) => (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : a.obj.key < b.obj.key ? -1 : a.obj.key > b.obj.key ? 1 : 0));
    this.log.debug({ sites: roots.length, listed: listed.reduce((n, l) => n + l.objects.length, 0), pending: out.length, upper }, 'listed');
    return out.map((o) => o.obj);
  }

  /**
   * Moves each site's `from` mark past the hours whose listed objects are all finished (and
   * behind the lookback window) and forgets those objects: the state stays bounded while a
   * long backlog is read within one poll. Called as each object is opened; only ever removes
   * entries of finished objects, which the pipeline writes no more marks for.
   */
  compact(): void {
    if (!this.plan) return;
    const { checkpoint, roots } = this.plan;
    const position = (checkpoint.position ??= {});
    for (const r of roots) {
      while (r.cursor < r.hours.length) {
        const h = r.hours[r.cursor]!;
        if (h.hour >= r.windowStart) break;
        const finished = h.objects.every((o) => {
          const p = checkpoint.objects[o.key];
          return p?.done === true && (p.version === undefined || p.version === o.version);
        });
        if (!finished) break;
        for (const o of h.objects) delete checkpoint.objects[o.key];
        r.cursor++;
        const next = addHours(h.hour, 1);
        const cur = position[FROM + r.rel];
        if (typeof cur !== 'string' || cur < next) position[FROM + r.rel] = next;
      }
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private noteRoots(roots: PartitionRoot[]): void {
    if (roots.length === 0) {
      if (!this.warnedNoRoots) this.log.warn({ bucket: this.bucket, prefix: this.prefix }, 'no y=YYYY/ partitions found under the prefix yet (expected <prefix>pod=…/siteLuid=…/y=…/)');
      this.warnedNoRoots = true;
      return;
    }
    const now = new Set(roots.map((r) => r.prefix));
    for (const p of now) if (!this.knownRoots.has(p)) this.log.info({ site: p }, 'site partition tree found');
    this.knownRoots = now;
  }

  /** Drops checkpoint entries of hours before their site's `from` mark (finished or gone from the bucket). */
  private pruneBelowMarks(checkpoint: SourceCheckpoint): void {
    const position = checkpoint.position ?? {};
    for (const key of Object.keys(checkpoint.objects)) {
      const m = /^(.*?)y=(\d{4})\/m=(\d{1,2})\/d=(\d{1,2})\/h=(\d{1,2})\//.exec(key);
      if (!m || !m[1]!.startsWith(this.prefix)) continue;
      const from = position[FROM + m[1]!.slice(this.prefix.length)];
      if (typeof from !== 'string') continue;
      const hour = `${m[2]}-${m[3]!.padStart(2, '0')}-${m[4]!.padStart(2, '0')}T${m[5]!.padStart(2, '0')}`;
      if (hour < from) delete checkpoint.objects[key];
    }
  }

  private sourceObject(o: PartitionObject, version: string, resumeAfterLine: number): SourceObject {
    return {
      key: o.key,
      identity: `s3://${this.bucket}/${o.key}?${o.etag ? `etag=${o.etag}` : `version=${version}`}`,
      ...(o.size !== undefined ? { size: o.size } : {}),
      version,
      resumeAfterLine,
      open: (signal) => {
        this.compact();
        if (o.hour > this.newestOpened) {
          this.newestOpened = o.hour;
          this.metrics.newestPartition(hourToMs(o.hour) / 1000);
        }
        return this.read(o, signal);
      },
    };
  }

  /** The object's bytes, pinned to the listed ETag, resuming with a Range request after an interruption (see s3-object-reader.ts). */
  private read(o: PartitionObject, signal: AbortSignal): AsyncGenerator<Buffer> {
    return readS3Object(this.reader, { bucket: this.bucket, key: o.key, etag: o.etag, size: o.size }, signal);
  }
}

function versionOf(o: PartitionObject): string {
  if (o.etag) return o.etag;
  return `${o.size ?? ''}@${o.lastModified?.getTime() ?? ''}`;
}

function maxHour(a: Hour | undefined, b: Hour | undefined): Hour | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a > b ? a : b;
}

function minHour(a: Hour, b: Hour): Hour {
  return a < b ? a : b;
}
