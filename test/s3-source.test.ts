/**
 * `type: s3` against a real S3-compatible server (s3rver on 127.0.0.1, see support/s3-server.ts):
 *
 * - the source on its own (the partition walker, what it lists for a checkpoint and a clock,
 *   bounded state, replaced / deleted / unreadable objects, throttling, interrupted bodies);
 * - the real CLI reading a bucket and exporting to the OTLP receiver (delivery, late arrivals,
 *   kill -9, a missing bucket next to a healthy tenant, wrong credentials, checkpoint size).
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { startS3Server, putActivityTree, activityLines, s3Key, hoursBack, type S3TestServer, type S3Request } from './support/s3-server.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { killMidRun, runCli, startCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { S3Source, s3SourceConfigSchema, type S3SourceConfig } from '../src/sources/s3/s3-source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import type { SourceObject } from '../src/sources/source.js';
import { NO_SOURCE_METRICS, type SourceMetrics } from '../src/daemon/metrics.js';
import { pipelineConfigSchema } from '../src/daemon/config.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.close();
});

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

interface LogLine {
  level: number;
  msg: string;
  object?: string;
  [k: string]: unknown;
}

function capturingLogger(): { log: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}

let bucketCounter = 0;
async function newBucket(): Promise<string> {
  const name = `tao-${process.pid}-${++bucketCounter}`;
  await s3.createBucket(name);
  return name;
}

function makeSource(config: Partial<S3SourceConfig> & { bucket: string }, opts: { now?: number; metrics?: SourceMetrics; log?: pino.Logger } = {}): S3Source {
  const parsed = s3SourceConfigSchema.parse({
    type: 's3',
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    accessKeyIdEnv: 'T_S3_KEY',
    secretAccessKeyEnv: 'T_S3_SECRET',
    ...config,
  });
  return new S3Source(
    parsed,
    { metrics: opts.metrics ?? NO_SOURCE_METRICS, log: opts.log ?? pino({ level: 'silent' }), env: { T_S3_KEY: 'S3RVER', T_S3_SECRET: 'S3RVER' } },
    { ...(opts.now !== undefined ? { now: () => opts.now! } : {}), resumeDelayMs: 10 },
  );
}

async function readBytes(obj: SourceObject, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of obj.open(signal)) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

function text(buf: Buffer): string {
  return (buf[0] === 0x1f && buf[1] === 0x8b ? gunzipSync(buf) : buf).toString('utf8');
}

/** What the pipeline does with a source, minus export: read each object, then mark it done. */
async function drain(source: S3Source, cp: SourceCheckpoint, onDone?: () => void): Promise<Array<{ obj: SourceObject; text: string }>> {
  const signal = new AbortController().signal;
  const objects = await source.pending(cp, signal);
  const out: Array<{ obj: SourceObject; text: string }> = [];
  for (const obj of objects) {
    const t = text(await readBytes(obj, signal));
    const lines = t.split('\n').filter((l) => l !== '').length;
    cp.objects[obj.key] = { line: obj.resumeAfterLine + lines, done: true, ...(obj.size !== undefined ? { size: obj.size } : {}), ...(obj.version ? { version: obj.version } : {}) };
    out.push({ obj, text: t });
    onDone?.();
  }
  return out;
}

function hourOfKey(key: string): string {
  const m = /y=(\d{4})\/m=(\d\d)\/d=(\d\d)\/h=(\d\d)\//.exec(key)!;
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}`;
}

function lists(filter?: (r: S3Request) => boolean): S3Request[] {
  return s3.requests.filter((r) => r.op === 'ListObjectsV2' && (!filter || filter(r)));
}

const SITE_A = { pod: 'prod-a', site: 'aaaaaaaa-0000-4000-8000-00000000000a' };
const SITE_B = { pod: 'prod-b', site: 'bbbbbbbb-0000-4000-8000-00000000000b' };
const SITE_C = { pod: 'prod-a', site: 'cccccccc-0000-4000-8000-00000000000c' };
const NOW = Date.parse('2026-03-01T05:30:00Z');

beforeEach(() => {
  s3.intercept(null);
});

// ---------------------------------------------------------------------------
// the source on its own
// ---------------------------------------------------------------------------

describe('s3 source: the partition walker', () => {
  it('finds every site, walks only the partitions from its mark on, and a caught-up poll costs a few list calls', async () => {
    const bucket = await newBucket();
    const hours = ['2025-12-31T23', ...hoursBack(NOW, 29, 0)]; // a year boundary, a month boundary, 31 hours
    const tree = await putActivityTree(s3, { bucket, prefix: 'activity/', sites: [SITE_A, SITE_B], hours, objectsPerHour: 2, recordsPerObject: 3 });
    await s3.put(bucket, 'activity/README.txt', 'not a partition');
    await s3.put(bucket, 'elsewhere/pod=x/siteLuid=y/y=2026/m=03/d=01/h=01/eventType=a/f.txt', '{}\n');
    const metrics = { requests: new Map<string, number>(), newest: 0 };
    const source = makeSource(
      { bucket, prefix: 'activity', lookbackHours: 3 },
      { now: NOW, metrics: { request: (op) => void metrics.requests.set(op, (metrics.requests.get(op) ?? 0) + 1), newestPartition: (t) => void (metrics.newest = t) } },
    );
    expect(source.id).toBe(`s3://${bucket}/activity/`);
    const cp: SourceCheckpoint = { objects: {} };

    s3.clearRequests();
    const first = await drain(source, cp);
    // every object once, oldest partition first, key order within
    expect(first.map((r) => r.obj.key)).toEqual([...tree.keys].sort((a, b) => (hourOfKey(a) < hourOfKey(b) ? -1 : hourOfKey(a) > hourOfKey(b) ? 1 : a < b ? -1 : 1)));
    expect(first.every((r) => r.obj.identity.startsWith(`s3://${bucket}/${r.obj.key}?etag=`))).toBe(true);
    const firstLists = lists();
    // discovery (prefix, 2 pods, 2 sites) + per site: 2 years' months, 3 months' days, 3 days of objects
    expect(firstLists.length).toBe(5 + 2 * (2 + 3 + 3));
    expect(firstLists.every((r) => r.query['prefix']?.startsWith('activity/'))).toBe(true);
    expect(metrics.requests.get('ListObjectsV2')).toBe(firstLists.length);
    expect(metrics.requests.get('GetObject')).toBe(tree.keys.length);
    expect(metrics.newest).toBe(Date.parse('2026-03-01T05:00:00Z') / 1000);

    // state: only the lookback window (newest 05 → from 02) stays, per site
    expect(cp.position).toMatchObject({
      [`from:pod=${SITE_A.pod}/siteLuid=${SITE_A.site}/`]: '2026-03-01T02',
      [`newest:pod=${SITE_A.pod}/siteLuid=${SITE_A.site}/`]: '2026-03-01T05',
      [`from:pod=${SITE_B.pod}/siteLuid=${SITE_B.site}/`]: '2026-03-01T02',
    });
    expect(Object.keys(cp.objects).length).toBe(2 * 4 * 2);
    expect(Object.keys(cp.objects).every((k) => hourOfKey(k) >= '2026-03-01T02')).toBe(true);

    // caught up: nothing pending, and a handful of list calls whatever was read before
    s3.clearRequests();
    expect(await drain(source, cp)).toEqual([]);
    const caughtUp = lists();
    // exactly: discovery, then per site the months of 2026, the days of March, the objects of 1 March from h=02 on
    const a = `activity/pod=${SITE_A.pod}/siteLuid=${SITE_A.site}/`;
    const b = `activity/pod=${SITE_B.pod}/siteLuid=${SITE_B.site}/`;
    const show = (r: S3Request): string => `${r.query['prefix']}${r.query['delimiter'] ? ' /' : ''}${r.query['start-after'] ? ` after ${r.query['start-after'].slice(r.query['prefix']!.length)}` : ''}`;
    expect(caughtUp.map(show).sort()).toEqual(
      [
        'activity/ /',
        'activity/pod=prod-a/ /',
        'activity/pod=prod-b/ /',
        `${a} /`,
        `${b} /`,
        ...[a, b].flatMap((site) => [`${site}y=2026/ /`, `${site}y=2026/m=03/ /`, `${site}y=2026/m=03/d=01/ after h=02`]),
      ].sort(),
    );
    expect(caughtUp.length).toBeLessThan(tree.keys.length / 10);
    expect(s3.count('GetObject')).toBe(0);

    // late arrivals: inside the window (03) picked up, outside it (02-28T20) not; a new site is found
    const late = s3Key('activity/', SITE_A.pod, SITE_A.site, '2026-03-01T03', 'hist_access_view', 'late-0001.txt');
    const tooLate = s3Key('activity/', SITE_A.pod, SITE_A.site, '2026-02-28T20', 'hist_access_view', 'late-0002.txt');
    await s3.put(bucket, late, activityLines('2026-03-01T03', SITE_A.site, 'hist_access_view', 2, 9000).text);
    await s3.put(bucket, tooLate, activityLines('2026-02-28T20', SITE_A.site, 'hist_access_view', 2, 9100).text);
    const siteC = await putActivityTree(s3, { bucket, prefix: 'activity/', sites: [SITE_C], hours: ['2026-03-01T04'], objectsPerHour: 1, recordsPerObject: 2, startSeq: 9200 });
    const third = await drain(source, cp);
    expect(third.map((r) => r.obj.key)).toEqual([late, ...siteC.keys]);
    expect(third[0]!.obj.resumeAfterLine).toBe(0);
    await source.close();
  });

  it('since and until bound the walk: partitions outside them are neither listed nor read', async () => {
    const bucket = await newBucket();
    const hours = ['2025-12-31T23', ...hoursBack(NOW, 29, 0)];
    await putActivityTree(s3, { bucket, sites: [SITE_A], hours, objectsPerHour: 1, recordsPerObject: 1 });
    const source = makeSource({ bucket, since: '2026-02-28T20', until: '2026-03-01T02:00:00Z' }, { now: NOW });
    s3.clearRequests();
    const read = await drain(source, { objects: {} });
    expect(read.map((r) => hourOfKey(r.obj.key))).toEqual(['2026-02-28T20', '2026-02-28T21', '2026-02-28T22', '2026-02-28T23', '2026-03-01T00', '2026-03-01T01']);
    expect(lists((r) => r.query['prefix']?.includes('y=2025/') ?? false)).toEqual([]);
    expect(lists((r) => r.query['delimiter'] === undefined).map((r) => r.query['prefix']!.slice(-14))).toEqual(['y=2026/m=02/d=28/'.slice(-14), 'y=2026/m=03/d=01/'.slice(-14)].sort());
    await source.close();
  });

  it('state stays bounded while a long backlog is read in one poll', async () => {
    const bucket = await newBucket();
    const hours = hoursBack(NOW, 47, 0);
    const tree = await putActivityTree(s3, { bucket, sites: [SITE_A], hours, objectsPerHour: 3, recordsPerObject: 2 });
    const source = makeSource({ bucket, lookbackHours: 2 }, { now: NOW });
    const cp: SourceCheckpoint = { objects: {} };
    let most = 0;
    const read = await drain(source, cp, () => (most = Math.max(most, Object.keys(cp.objects).length)));
    expect(read.length).toBe(tree.keys.length);
    expect(most).toBeLessThanOrEqual((2 + 2) * 3); // the window plus the hour being read
    expect(Object.keys(cp.objects).length).toBe((2 + 1) * 3);
    expect(JSON.stringify(cp).length).toBeLessThan(3000);
    await source.close();
  });

  it('validates its configuration', () => {
    const base = { type: 's3', bucket: 'my-bucket', region: 'eu-west-1' };
    expect(s3SourceConfigSchema.parse(base)).toMatchObject({ prefix: '', pollInterval: 60_000, lookbackHours: 3, concurrency: 4, forcePathStyle: false });
    expect(s3SourceConfigSchema.safeParse({ ...base, accessKeyIdEnv: 'K' }).success).toBe(false);
    expect(s3SourceConfigSchema.safeParse({ ...base, externalId: 'x1' }).success).toBe(false);
    expect(s3SourceConfigSchema.safeParse({ ...base, roleArn: 'arn:aws:iam::123456789012:role/reader', externalId: 'abc' }).success).toBe(true);
    expect(s3SourceConfigSchema.safeParse({ ...base, since: 'yesterday' }).success).toBe(false);
    expect(s3SourceConfigSchema.safeParse({ ...base, since: '14d' }).success).toBe(true);
    expect(s3SourceConfigSchema.safeParse({ ...base, since: '2026-03-01', until: '2026-02-01' }).success).toBe(false);
    expect(s3SourceConfigSchema.safeParse({ ...base, secretAccessKey: 'x' }).success).toBe(false); // strict: no inline secrets
    const s = makeSource({ bucket: 'b-unused', concurrency: 7 });
    expect(s.readConcurrency).toBe(7);
  });
});

describe('s3 source: reading objects', () => {
  async function oneObject(body: string | Buffer): Promise<{ bucket: string; key: string; source: S3Source; cp: SourceCheckpoint; objects: SourceObject[] }> {
    const bucket = await newBucket();
    const key = s3Key('', SITE_A.pod, SITE_A.site, '2026-03-01T04', 'hist_access_view', 'one.txt');
    await s3.put(bucket, key, body);
    const { log, lines } = capturingLogger();
    logLines = lines;
    const source = makeSource({ bucket }, { now: NOW, log });
    const cp: SourceCheckpoint = { objects: {} };
    const objects = await source.pending(cp, new AbortController().signal);
    expect(objects.map((o) => o.key)).toEqual([key]);
    return { bucket, key, source, cp, objects };
  }
  let logLines: LogLine[] = [];
  const signal = new AbortController().signal;

  it('an object replaced between listing and reading is skipped, then read whole in its new version (never mixed)', async () => {
    const oldBody = activityLines('2026-03-01T04', SITE_A.site, 'hist_access_view', 5, 100).text;
    const newBody = activityLines('2026-03-01T04', SITE_A.site, 'hist_access_view', 7, 200).text;
    const { bucket, key, source, cp, objects } = await oneObject(oldBody);
    s3.intercept(async (r) => {
      if (r.op === 'GetObject' && r.key === key) {
        s3.intercept(null);
        await s3.put(bucket, key, newBody); // replaced right after the listing
      }
    });
    const first = objects[0]!;
    expect(await readBytes(first, signal)).toEqual(Buffer.alloc(0));
    expect(logLines.some((l) => l.msg.includes('replaced since it was listed') && l.object === key)).toBe(true);
    // the pipeline marks it finished in the version it listed
    cp.objects[key] = { line: 0, done: true, version: first.version! };
    const again = await source.pending(cp, signal);
    expect(again.map((o) => o.key)).toEqual([key]);
    expect(again[0]!.resumeAfterLine).toBe(0);
    expect(again[0]!.version).not.toBe(first.version);
    expect(again[0]!.identity).not.toBe(first.identity);
    expect(text(await readBytes(again[0]!, signal))).toBe(newBody);
    await source.close();
  });

  it('an object replaced while its body streams fails the attempt, and the retry yields nothing of the new version', async () => {
    const oldBody = activityLines('2026-03-01T04', SITE_A.site, 'hist_access_view', 300, 1000).text;
    const newBody = activityLines('2026-03-01T04', SITE_A.site, 'hist_access_view', 3, 5000).text;
    const { bucket, key, source, objects } = await oneObject(oldBody);
    let gets = 0;
    s3.intercept(async (r) => {
      if (r.op !== 'GetObject' || r.key !== key) return;
      gets++;
      if (gets === 1) return { cutAfterBytes: 5000 };
      if (gets === 2) await s3.put(bucket, key, newBody);
      return undefined;
    });
    const got: Buffer[] = [];
    await expect(
      (async () => {
        for await (const c of objects[0]!.open(signal)) got.push(Buffer.from(c));
      })(),
    ).rejects.toThrow(/replaced while being read/);
    expect(Buffer.concat(got).toString()).toBe(oldBody.slice(0, 5000)); // only old bytes
    expect(s3.requests.filter((r) => r.op === 'GetObject' && r.bucket === bucket && r.key === key)[1]!.headers['range']).toBe('bytes=5000-');
    // the pipeline's retry of the object: 412 before any byte → nothing, no new-version bytes
    expect(await readBytes(objects[0]!, signal)).toEqual(Buffer.alloc(0));
    await source.close();
  });

  it('a body cut mid-way is resumed with a Range request at the same byte, pinned to the same ETag', async () => {
    const body = activityLines('2026-03-01T04', SITE_A.site, 'hist_access_view', 300, 1000).text;
    const { bucket, key, source, objects } = await oneObject(body);
    let gets = 0;
    s3.intercept((r) => (r.op === 'GetObject' && r.key === key && ++gets === 1 ? { cutAfterBytes: 7000 } : undefined));
    expect((await readBytes(objects[0]!, signal)).toString()).toBe(body);
    const getReqs = s3.requests.filter((r) => r.op === 'GetObject' && r.bucket === bucket && r.key === key);
    expect(getReqs.length).toBe(2);
    expect(getReqs[1]!.headers['range']).toBe('bytes=7000-');
    expect(getReqs.every((r) => r.headers['if-match'] === `"${objects[0]!.version}"`)).toBe(true);
    expect(logLines.some((l) => l.msg.includes('resuming at the same byte'))).toBe(true);
    await source.close();
  });

  it('an object deleted between listing and reading is skipped with a warning', async () => {
    const { bucket, key, source, objects } = await oneObject('{"eventTime":"2026-03-01T04:00:00Z"}\n');
    await s3.del(bucket, key);
    expect(await readBytes(objects[0]!, signal)).toEqual(Buffer.alloc(0));
    expect(logLines.some((l) => l.level === 40 && l.msg.includes('deleted since it was listed') && l.object === key)).toBe(true);
    await source.close();
  });

  it('access denied by KMS on GetObject is a permanent error naming the object and the KMS key, not retried', async () => {
    const { bucket, key, source, objects } = await oneObject('{"eventTime":"2026-03-01T04:00:00Z"}\n');
    const kmsKey = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    s3.intercept((r) =>
      r.op === 'GetObject'
        ? { error: { status: 403, code: 'AccessDenied', message: `User: arn:aws:sts::123456789012:assumed-role/reader/tao is not authorized to perform: kms:Decrypt on resource: ${kmsKey} because no identity-based policy allows the kms:Decrypt action` } }
        : undefined,
    );
    s3.clearRequests();
    const err = (await readBytes(objects[0]!, signal).catch((e: unknown) => e)) as Error & { permanent?: boolean; code?: string };
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain(`s3://${bucket}/${key}`);
    expect(err.message).toContain(kmsKey);
    expect(err.message).toContain('kms:Decrypt');
    expect(err.permanent).toBe(true);
    expect(err.code).toBe('EACCES');
    expect(s3.count('GetObject')).toBe(1);
    // plain access denied too
    s3.intercept((r) => (r.op === 'GetObject' ? { error: { status: 403, code: 'AccessDenied', message: 'Access Denied' } } : undefined));
    const err2 = (await readBytes(objects[0]!, signal).catch((e: unknown) => e)) as Error & { permanent?: boolean };
    expect(err2.message).toMatch(/access denied reading s3:\/\/.*one\.txt.*s3:GetObject/);
    expect(err2.permanent).toBe(true);
    await source.close();
  });

  it('throttling (503 SlowDown) on listing and reading is retried with backoff', async () => {
    const bucket = await newBucket();
    const tree = await putActivityTree(s3, { bucket, sites: [SITE_A], hours: ['2026-03-01T03', '2026-03-01T04'], objectsPerHour: 2, recordsPerObject: 2 });
    let lists = 0;
    let gets = 0;
    s3.intercept((r) => {
      const slow = { error: { status: 503, code: 'SlowDown', message: 'Please reduce your request rate.' } };
      if (r.op === 'ListObjectsV2' && ++lists <= 1) return slow;
      if (r.op === 'GetObject' && ++gets <= 1) return slow;
      return undefined;
    });
    const source = makeSource({ bucket }, { now: NOW });
    const read = await drain(source, { objects: {} });
    expect(read.length).toBe(tree.keys.length);
    expect(gets).toBe(tree.keys.length + 1);
    expect(lists).toBeGreaterThan(1);
    await source.close();
  });

  it('access denied on a prefix fails the listing with a clear error; a missing bucket is named', async () => {
    const bucket = await newBucket();
    await putActivityTree(s3, { bucket, sites: [SITE_A, SITE_B], hours: ['2026-03-01T04'], objectsPerHour: 1, recordsPerObject: 1 });
    s3.intercept((r) => (r.op === 'ListObjectsV2' && r.query['prefix']?.startsWith('pod=prod-b/') ? { error: { status: 403, code: 'AccessDenied', message: 'Access Denied' } } : undefined));
    const source = makeSource({ bucket }, { now: NOW });
    await expect(source.pending({ objects: {} }, signal)).rejects.toThrow(new RegExp(`access denied listing s3://${bucket}/pod=prod-b/ \\(AccessDenied: Access Denied\\); the reader needs s3:ListBucket`));
    await source.close();
    const missing = makeSource({ bucket: 'no-such-bucket-here' }, { now: NOW });
    await expect(missing.pending({ objects: {} }, signal)).rejects.toThrow('S3 bucket "no-such-bucket-here" does not exist');
    await missing.close();
  });
});

describe('s3 source: credentials', () => {
  it('a missing key variable fails the poll with an error naming the variable, never a value', async () => {
    const parsed = s3SourceConfigSchema.parse({ type: 's3', bucket: 'some-bucket', region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, accessKeyIdEnv: 'T_NOT_SET_KEY', secretAccessKeyEnv: 'T_SECRET' });
    const source = new S3Source(parsed, { metrics: NO_SOURCE_METRICS, log: pino({ level: 'silent' }), env: { T_SECRET: 'hunter2-secret' } });
    const err = (await source.pending({ objects: {} }, new AbortController().signal).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('environment variable T_NOT_SET_KEY (named by accessKeyIdEnv) is not set');
    expect(err.message).toContain('s3://some-bucket/');
    expect(err.message).not.toContain('hunter2');
    await source.close();
  });
});

// ---------------------------------------------------------------------------
// through the CLI
// ---------------------------------------------------------------------------

const S3_ENV = { S3_KEY: 'S3RVER', S3_SECRET: 'S3RVER' };

function s3SourceConfig(bucket: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 's3',
    bucket,
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    accessKeyIdEnv: 'S3_KEY',
    secretAccessKeyEnv: 'S3_SECRET',
    pollInterval: '1s',
    ...extra,
  };
}

/** A config file (JSON is YAML) with one tenant per entry, all exporting to `receiverUrl`. */
function writeConfig(work: string, receiverUrl: string, tenants: Array<{ id: string; sources: Array<Record<string, unknown>> }>, pipeline: Record<string, unknown> = {}): string {
  const file = join(work, 'config.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      state: { dir: join(work, 'state') },
      // encode in the main thread when the pipeline has workers: starts faster on a small test machine
      pipeline: { ...('workers' in pipelineConfigSchema.shape ? { workers: 0 } : {}), ...pipeline },
      tenants: tenants.map((t) => ({ ...t, destinations: [{ type: 'otlp', endpoint: receiverUrl }] })),
    }),
  );
  return file;
}

function seqCounts(records: ReceivedLogRecord[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const r of records) {
    const seq = r.attributes['tableau.test_seq'] as number;
    m.set(seq, (m.get(seq) ?? 0) + 1);
  }
  return m;
}

function checkpointOf(work: string, tenant: string): { size: number; sources: Record<string, SourceCheckpoint> } {
  const file = join(work, 'state', tenant, 'checkpoints.json');
  // (after a run: its stop folded the journal into the file)
  return { size: statSync(file).size, sources: readCheckpointState(join(work, 'state', tenant)).sources };
}

describe('s3 source through the CLI', () => {
  let receiver: OtlpReceiver;
  beforeEach(async () => {
    receiver = await startOtlpReceiver();
    return async () => {
      await receiver.close();
    };
  });

  it('delivers a multi-site, multi-hour tree (gzip and plain) once; then only late arrivals and the new version of an object replaced mid-listing; state stays the lookback window', async () => {
    const bucket = await newBucket();
    const now = Date.now();
    const hours = hoursBack(now, 8, 1);
    const tree = await putActivityTree(s3, { bucket, prefix: 'tableau/', sites: [SITE_A, SITE_B], hours, objectsPerHour: 3, recordsPerObject: 20 });
    const work = tempDir();
    const config = writeConfig(work, receiver.url, [{ id: 'acme', sources: [s3SourceConfig(bucket, { prefix: 'tableau/', lookbackHours: 3 })] }]);

    // one object is replaced right after the listing, before it is read
    const replaced = tree.keys[7]!;
    const replacedHour = hourOfKey(replaced);
    const newVersion = activityLines(replacedHour, SITE_A.site, 'hist_access_view', 4, 70_000);
    s3.intercept(async (r) => {
      if (r.op === 'GetObject' && r.bucket === bucket && r.key === replaced) {
        s3.intercept(null);
        await s3.put(bucket, replaced, newVersion.text);
      }
    });

    const first = await runCli(['run', '--once', '--config', config], { env: S3_ENV });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('replaced since it was listed');
    const expected = tree.records.filter((r) => r.key !== replaced);
    const got = receiver.records();
    expect(got.length).toBe(expected.length);
    const counts = seqCounts(got);
    expect(expected.every((r) => counts.get(r.record.testSeq as number) === 1)).toBe(true);
    // spot checks: event name from the key, site and pod on the resource, full-precision time, uid
    const bySeq = new Map(got.map((r) => [r.attributes['tableau.test_seq'] as number, r]));
    for (const { key, record } of expected.filter((_, i) => i % 37 === 0)) {
      const r = bySeq.get(record.testSeq as number)!;
      expect(r.eventName).toBe(`tableau.${/eventType=([^/]+)\//.exec(key)![1]}`);
      expect(r.resource['tableau.site_luid']).toBe(record.siteLuid);
      expect(r.resource['tableau.pod']).toBe(/pod=([^/]+)\//.exec(key)![1]);
      expect(r.timeUnixNano % 1_000_000_000n).toBe(BigInt(/\.(\d{9})Z$/.exec(record.eventTime as string)![1]!));
      expect(r.attributes['log.record.uid']).toMatch(/^[0-9a-f]{24}:\d+$/);
    }

    // an object lands late in an hour already read (inside the lookback window)
    const lateHour = hours[hours.length - 2]!;
    const lateKey = s3Key('tableau/', SITE_B.pod, SITE_B.site, lateHour, 'login_authentication', 'late-0001.txt');
    await s3.put(bucket, lateKey, activityLines(lateHour, SITE_B.site, 'login_authentication', 5, 50_000).text);
    const second = await runCli(['run', '--once', '--config', config], { env: S3_ENV });
    expect(second.code, second.stderr).toBe(0);
    // nothing else is re-sent; the replaced object arrives whole in its new version, never mixed
    const added = receiver.records().slice(expected.length);
    expect(added.map((r) => r.attributes['tableau.test_seq'] as number).sort((a, b) => a - b)).toEqual([50_000, 50_001, 50_002, 50_003, 50_004, 70_000, 70_001, 70_002, 70_003]);
    const oldSeqs = new Set(tree.records.filter((r) => r.key === replaced).map((r) => r.record.testSeq as number));
    expect(receiver.records().filter((r) => oldSeqs.has(r.attributes['tableau.test_seq'] as number))).toEqual([]);

    // a poll with nothing new sends nothing, and prunes what the last reads left behind:
    // per site two marks, and only the objects of the lookback window
    const third = await runCli(['run', '--once', '--config', config], { env: S3_ENV });
    expect(third.code, third.stderr).toBe(0);
    expect(receiver.records().length).toBe(expected.length + 9);
    const { size, sources } = checkpointOf(work, 'acme');
    const cp = sources[`s3://${bucket}/tableau/`]!;
    const windowStart = hours[hours.length - 1 - 3]!;
    expect(Object.keys(cp.objects).every((k) => hourOfKey(k) >= windowStart)).toBe(true);
    expect(Object.keys(cp.objects).length).toBe(2 * 4 * 3 + 1);
    expect(cp.position).toEqual({
      [`from:pod=${SITE_A.pod}/siteLuid=${SITE_A.site}/`]: windowStart,
      [`newest:pod=${SITE_A.pod}/siteLuid=${SITE_A.site}/`]: hours[hours.length - 1],
      [`from:pod=${SITE_B.pod}/siteLuid=${SITE_B.site}/`]: windowStart,
      [`newest:pod=${SITE_B.pod}/siteLuid=${SITE_B.site}/`]: hours[hours.length - 1],
    });
    expect(size).toBeLessThan(12_000);
  });

  it('kill -9 in the middle of a run: the next run delivers everything, duplicates bounded by the in-flight batches', async () => {
    receiver.setDelay(25);
    const bucket = await newBucket();
    const PER_OBJECT = 150;
    const tree = await putActivityTree(s3, { bucket, sites: [SITE_A, SITE_B], hours: hoursBack(Date.now(), 8, 1), objectsPerHour: 4, recordsPerObject: PER_OBJECT });
    const work = tempDir();
    const BATCH = 100;
    const IN_FLIGHT = 2;
    const config = writeConfig(work, receiver.url, [{ id: 'crashy', sources: [s3SourceConfig(bucket)] }], { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT });
    let killed = 0;
    if (await killMidRun(['run', '--once', '--config', config], { env: S3_ENV, delivered: () => receiver.records().length, atLeast: 2 * BATCH, waitMs: 15_000, jitterMs: 200 })) killed++;
    expect(killed).toBe(1);
    expect(receiver.records().length).toBeLessThan(tree.records.length); // killed mid-run
    receiver.setDelay(0);
    const final = await runCli(['run', '--once', '--config', config], { env: S3_ENV });
    expect(final.code, final.stderr).toBe(0);
    const counts = seqCounts(receiver.records());
    expect(tree.records.filter((r) => !counts.has(r.record.testSeq as number))).toEqual([]);
    const duplicates = [...counts.values()].reduce((n, c) => n + c - 1, 0);
    // re-sent: only records of the batches in flight at the kill and of the objects they were
    // part of (progress commits per object), never whole hours or the run so far
    // (+2: the batch whose checkpoint save was cut, and one acknowledged during that save)
    expect(duplicates).toBeLessThanOrEqual(killed * (IN_FLIGHT + 2) * (BATCH + PER_OBJECT));
    const uids = new Map<number, Set<unknown>>();
    for (const r of receiver.records()) {
      const seq = r.attributes['tableau.test_seq'] as number;
      uids.set(seq, (uids.get(seq) ?? new Set()).add(r.attributes['log.record.uid']));
    }
    expect([...uids.values()].every((s) => s.size === 1)).toBe(true);
  });

  it('a missing bucket or wrong credentials: a clear error naming the bucket, no secret; --once exits 1, the daemon keeps polling while another tenant exports', async () => {
    // Wrong credentials: s3rver refuses unknown access key ids (403 InvalidAccessKeyId); it does
    // not verify SigV4 signatures, so a wrong secret for a known key id cannot be shown here.
    const bucket = await newBucket();
    const hour = hoursBack(Date.now(), 1, 1)[0]!;
    const tree = await putActivityTree(s3, { bucket, sites: [SITE_A], hours: [hour], objectsPerHour: 2, recordsPerObject: 5 });
    const env = { ...S3_ENV, BAD_KEY: 'AKIAWRONGKEY', BAD_SECRET: 'very-secret-value-9f8e7d' };
    const tenants = [
      { id: 'missing', sources: [s3SourceConfig('tao-no-such-bucket')] },
      { id: 'badcreds', sources: [s3SourceConfig(bucket, { accessKeyIdEnv: 'BAD_KEY', secretAccessKeyEnv: 'BAD_SECRET' })] },
      { id: 'healthy', sources: [s3SourceConfig(bucket)] },
    ];
    const daemonReceiver = await startOtlpReceiver();
    try {
      // both at once: a --once run and a daemon
      const once = runCli(['run', '--once', '--config', writeConfig(tempDir(), receiver.url, tenants)], { env });
      const daemon = startCli(['run', '--config', writeConfig(tempDir(), daemonReceiver.url, tenants)], { env });

      const res = await once;
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('S3 bucket \\"tao-no-such-bucket\\" does not exist');
      expect(res.stderr).toContain(`S3 rejected the credentials listing s3://${bucket}/ (InvalidAccessKeyId`);
      expect(res.stderr + res.stdout).not.toContain('very-secret-value-9f8e7d');
      expect(receiver.records().length).toBe(tree.records.length); // the healthy tenant exported everything

      await daemonReceiver.waitForRecords(tree.records.length, 15_000);
      const errors = (): number => (daemon.stderr().match(/tao-no-such-bucket\\" does not exist/g) ?? []).length;
      const deadline = Date.now() + 10_000;
      while (errors() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(errors()).toBeGreaterThanOrEqual(2); // retried every poll
      expect(daemon.child.exitCode).toBe(null);
      // the healthy tenant keeps exporting new objects
      const more = s3Key('', SITE_A.pod, SITE_A.site, hour, 'hist_access_view', 'more-0001.txt');
      await s3.put(bucket, more, activityLines(hour, SITE_A.site, 'hist_access_view', 3, 80_000).text);
      await daemonReceiver.waitForRecords(tree.records.length + 3, 15_000);
      daemon.child.kill('SIGTERM');
      const stopped = await daemon.exited;
      expect(stopped.code, stopped.stderr).toBe(0);
      expect(stopped.stderr).not.toContain('very-secret-value-9f8e7d');
    } finally {
      await daemonReceiver.close();
    }
  });
});
