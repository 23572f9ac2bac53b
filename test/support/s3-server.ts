/**
 * A real S3-compatible server for tests: s3rver (filesystem store in a temp dir) on 127.0.0.1,
 * a random port, silent, with a front middleware that
 *   - records every request (operation, bucket, key, query) so tests can count list calls;
 *   - implements GetObject `If-Match` (s3rver ignores it): a stale ETag gets 412
 *     PreconditionFailed, as AWS S3 answers;
 *   - lets a test inject faults per request: an S3 error response (503 SlowDown, 403
 *     AccessDenied with a KMS message, …), an action before the request is served (replace an
 *     object right after it was listed), or a body cut after N bytes (connection reset).
 *
 * s3rver checks SigV2 signatures but not SigV4 ones (the AWS SDK v3 signs with SigV4): an
 * unknown access key id is refused (403 InvalidAccessKeyId), a wrong secret for a known id
 * is accepted. Its only account is S3RVER / S3RVER.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { S3Client, PutObjectCommand, CreateBucketCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverApp;

interface KoaCtx {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | undefined>;
  status: number;
  type: string;
  body: unknown;
  length: number | undefined;
  req: { socket: { destroy(): void } };
  store: { getMetadata(bucket: string, key: string): Promise<Record<string, string>> };
}
type KoaMiddleware = (ctx: KoaCtx, next: () => Promise<void>) => Promise<void>;
interface StoreListResult {
  objects: Array<{ key: string }>;
  commonPrefixes: string[];
  isTruncated: boolean;
}
interface S3rverApp {
  middleware: KoaMiddleware[];
  store: { listObjects(bucket: string, options: Record<string, unknown>): Promise<StoreListResult> };
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

export type S3Operation = 'ListObjectsV2' | 'ListObjects' | 'GetObject' | 'HeadObject' | 'PutObject' | 'DeleteObject' | 'CreateBucket' | 'ListBuckets' | 'Other';

export interface S3Request {
  op: S3Operation;
  method: string;
  bucket?: string;
  key?: string;
  query: Record<string, string>;
  headers: Record<string, string | undefined>;
}

export type S3Fault =
  | { error: { status: number; code: string; message: string } }
  /** Serve the first N bytes of the body, then reset the connection. */
  | { cutAfterBytes: number };

/** Called for every request before it is served; may act (e.g. replace an object) and may return a fault. */
export type S3Interceptor = (req: S3Request) => S3Fault | undefined | void | Promise<S3Fault | undefined | void>;

export interface S3TestServer {
  endpoint: string;
  directory: string;
  /** A client for setting up objects (static S3RVER keys, path style). */
  client: S3Client;
  requests: S3Request[];
  count(op: S3Operation, filter?: (r: S3Request) => boolean): number;
  clearRequests(): void;
  intercept(fn: S3Interceptor | null): void;
  createBucket(name: string): Promise<void>;
  /** Returns the ETag, without quotes. */
  put(bucket: string, key: string, body: string | Buffer): Promise<string>;
  del(bucket: string, key: string): Promise<void>;
  close(): Promise<void>;
}

function classify(method: string, bucket: string | undefined, key: string | undefined, query: Record<string, string>): S3Operation {
  if (!bucket) return method === 'GET' ? 'ListBuckets' : 'Other';
  if (!key) {
    if (method === 'GET') return query['list-type'] === '2' ? 'ListObjectsV2' : 'ListObjects';
    if (method === 'PUT') return 'CreateBucket';
    return 'Other';
  }
  if (method === 'GET') return 'GetObject';
  if (method === 'HEAD') return 'HeadObject';
  if (method === 'PUT') return 'PutObject';
  if (method === 'DELETE') return 'DeleteObject';
  return 'Other';
}

function errorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>s3-test</RequestId></Error>`;
}

export async function startS3Server(): Promise<S3TestServer> {
  const directory = mkdtempSync(join(tmpdir(), 'tao-s3rver-'));
  const app = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const requests: S3Request[] = [];
  let interceptor: S3Interceptor | null = null;

  const front: KoaMiddleware = async (ctx, next) => {
    const parts = ctx.path.split('/').slice(1);
    const bucket = parts[0] ? decodeURIComponent(parts[0]) : undefined;
    const key = parts.length > 1 && parts.slice(1).join('/') !== '' ? decodeURIComponent(parts.slice(1).join('/')) : undefined;
    const req: S3Request = { op: classify(ctx.method, bucket, key, ctx.query), method: ctx.method, ...(bucket ? { bucket } : {}), ...(key ? { key } : {}), query: { ...ctx.query }, headers: { ...ctx.headers } };
    requests.push(req);
    const fault = interceptor ? await interceptor(req) : undefined;
    if (fault && 'error' in fault) {
      ctx.status = fault.error.status;
      ctx.type = 'application/xml';
      ctx.body = errorXml(fault.error.code, fault.error.message);
      return;
    }
    if (req.op === 'GetObject' && bucket && key && ctx.headers['if-match']) {
      const wanted = ctx.headers['if-match'].replace(/^(W\/)?"|"$/g, '');
      const meta = await ctx.store.getMetadata(bucket, key).catch(() => undefined);
      if (meta && String(meta['etag']).replace(/"/g, '') !== wanted) {
        ctx.status = 412;
        ctx.type = 'application/xml';
        ctx.body = errorXml('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
        return;
      }
    }
    await next();
    if (fault && 'cutAfterBytes' in fault && ctx.body && typeof (ctx.body as Readable).pipe === 'function') {
      const limit = fault.cutAfterBytes;
      const length = ctx.length;
      let sent = 0;
      const socket = ctx.req.socket;
      const cut = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          if (sent >= limit) return cb();
          const part = chunk.subarray(0, limit - sent);
          sent += part.length;
          this.push(part);
          if (sent >= limit) setTimeout(() => socket.destroy(), 30);
          cb();
        },
      });
      ctx.body = (ctx.body as Readable).pipe(cut);
      if (length !== undefined) ctx.length = length;
    }
  };
  app.middleware.unshift(front);

  // s3rver 3.7 prunes the folders below a common prefix before it has seen a key in them, so
  // a `Delimiter` listing only reports prefixes that hold an object one level down. List
  // everything under the prefix instead and group it, as S3 does.
  const store = app.store;
  const listAll = store.listObjects.bind(store);
  store.listObjects = async (bucket, options) => {
    const delimiter = options['delimiter'] as string | undefined;
    if (!delimiter) return listAll(bucket, options);
    const prefix = (options['prefix'] as string | undefined) ?? '';
    const maxKeys = (options['maxKeys'] as number | undefined) ?? 1000;
    const all = await listAll(bucket, { ...options, delimiter: undefined, maxKeys: Infinity });
    const commonPrefixes = new Set<string>();
    const objects: StoreListResult['objects'] = [];
    for (const o of all.objects) {
      const idx = o.key.slice(prefix.length).indexOf(delimiter);
      if (idx !== -1) commonPrefixes.add(o.key.slice(0, prefix.length + idx + delimiter.length));
      else if (objects.length < maxKeys) objects.push(o);
    }
    return { objects, commonPrefixes: [...commonPrefixes].sort(), isTruncated: false };
  };

  const address = await app.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });

  return {
    endpoint,
    directory,
    client,
    requests,
    count: (op, filter) => requests.filter((r) => r.op === op && (!filter || filter(r))).length,
    clearRequests: () => {
      requests.length = 0;
    },
    intercept: (fn) => {
      interceptor = fn;
    },
    createBucket: async (name) => {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    put: async (bucket, key, body) => {
      const res = await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: typeof body === 'string' ? Buffer.from(body) : body }));
      return (res.ETag ?? '').replace(/"/g, '');
    },
    del: async (bucket, key) => {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    close: async () => {
      client.destroy();
      await app.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// Activity-log trees in Tableau's S3 layout
// ---------------------------------------------------------------------------

export interface S3FixtureRecord {
  key: string;
  line: number;
  record: Record<string, unknown>;
}

export interface S3TreeOptions {
  bucket: string;
  /** Before `pod=`; '' or ending in '/'. */
  prefix?: string;
  sites: Array<{ pod: string; site: string }>;
  /** Hour partitions as `YYYY-MM-DDTHH`. */
  hours: string[];
  objectsPerHour: number;
  recordsPerObject: number;
  startSeq?: number;
  /** File name stem (distinguishes objects added later). */
  name?: string;
}

export interface S3Tree {
  records: S3FixtureRecord[];
  keys: string[];
  nextSeq: number;
}

const TYPES = ['hist_access_view', 'login_authentication', 'add_delete_user_to_group', 'vizql_http_request'];

/** The key of one object: `<prefix>pod=…/siteLuid=…/y=…/m=…/d=…/h=…/eventType=…/<name>`. */
export function s3Key(prefix: string, pod: string, site: string, hour: string, eventType: string, file: string): string {
  return `${prefix}pod=${pod}/siteLuid=${site}/y=${hour.slice(0, 4)}/m=${hour.slice(5, 7)}/d=${hour.slice(8, 10)}/h=${hour.slice(11, 13)}/eventType=${eventType}/${file}`;
}

/** NDJSON text of `n` records for `hour`, each with a unique `testSeq`. */
export function activityLines(hour: string, site: string, eventType: string, n: number, startSeq: number): { text: string; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  for (let i = 0; i < n; i++) {
    const seq = startSeq + i;
    const record: Record<string, unknown> = {
      eventTime: `${hour}:${String(i % 60).padStart(2, '0')}:07.${String(123456789 + seq).slice(-9)}Z`,
      actorUserLuid: `user-${seq % 17}`,
      initiatingUserLuid: `user-${seq % 17}`,
      siteLuid: site,
      eventOutcome: eventType === 'login_authentication' ? null : 'success',
      testSeq: seq,
    };
    if (eventType === 'vizql_http_request') {
      record.requestUri = `/vizql/w/Sales/v/Overview/bootstrapSession?seq=${seq}`;
      record.method = 'POST';
    }
    records.push(record);
  }
  return { text: records.map((r) => JSON.stringify(r)).join('\n') + '\n', records };
}

/** Puts `sites × hours × objectsPerHour` objects (every third one gzip) and returns what they hold. */
export async function putActivityTree(server: S3TestServer, o: S3TreeOptions): Promise<S3Tree> {
  const prefix = o.prefix ?? '';
  let seq = o.startSeq ?? 0;
  const records: S3FixtureRecord[] = [];
  const keys: string[] = [];
  const puts: Array<() => Promise<unknown>> = [];
  let n = 0;
  for (const { pod, site } of o.sites) {
    for (const hour of o.hours) {
      for (let i = 0; i < o.objectsPerHour; i++) {
        const type = TYPES[i % TYPES.length]!;
        const key = s3Key(prefix, pod, site, hour, type, `${o.name ?? 'part'}-${String(i).padStart(4, '0')}.txt`);
        const { text, records: recs } = activityLines(hour, site, type, o.recordsPerObject, seq);
        seq += recs.length;
        recs.forEach((record, j) => records.push({ key, line: j + 1, record }));
        keys.push(key);
        const body = n++ % 3 === 2 ? gzipSync(text) : Buffer.from(text);
        puts.push(() => server.put(o.bucket, key, body));
      }
    }
  }
  for (let i = 0; i < puts.length; i += 16) await Promise.all(puts.slice(i, i + 16).map((p) => p()));
  return { records, keys, nextSeq: seq };
}

/** The `YYYY-MM-DDTHH` hours `from` to `to` hours before `nowMs` (from > to), oldest first. */
export function hoursBack(nowMs: number, from: number, to: number): string[] {
  const out: string[] = [];
  for (let h = from; h >= to; h--) out.push(new Date(nowMs - h * 3_600_000).toISOString().slice(0, 13));
  return out;
}
