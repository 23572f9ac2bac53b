/**
 * `type: s3-sqs` against a local SQS-compatible server (support/sqs-server.ts, AWS JSON 1.0
 * protocol) and s3rver (support/s3-server.ts):
 *
 * - the notification bodies (direct S3, SNS-wrapped, EventBridge, test events, garbage);
 * - the source on its own: the same record ids as the listing `s3` source, a multi-record
 *   message deleted only once all its objects are finished, bounded state, the heartbeat, a
 *   failed read handing the message back, the redrive-policy warning;
 * - the real CLI: three replicas sharing one queue (every object exported once, SNS and
 *   EventBridge messages, test events, a garbage message ending in the dead-letter queue), a
 *   replica killed with SIGKILL mid-object whose object another replica finishes, `run --once`
 *   stopping when the queue is empty, a queue that does not exist.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startS3Server, putActivityTree, activityLines, s3Key, hoursBack, type S3TestServer } from './support/s3-server.js';
import { startSqsServer, type SqsTestServer } from './support/sqs-server.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { runCli, startCli, type CliProcess } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { S3SqsSource, s3SqsSourceConfigSchema } from '../src/sources/s3-sqs/s3-sqs-source.js';
import { S3Source, s3SourceConfigSchema } from '../src/sources/s3/s3-source.js';
import { parseNotification, normalizeEtag, decodeS3EventKey, encodeS3EventKey } from '../src/sources/s3-sqs/s3-notifications.js';
import { sourceConfigSchema } from '../src/sources/source-registry.js';
import { uidPrefixFor, type SourceObject } from '../src/sources/source.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { NO_SOURCE_METRICS } from '../src/daemon/metrics.js';
import * as daemonConfig from '../src/daemon/config.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

// ---------------------------------------------------------------------------
// notification bodies as AWS writes them
// ---------------------------------------------------------------------------

interface ObjRef {
  bucket: string;
  key: string;
  etag: string;
  size: number;
}

function s3Record(o: ObjRef, eventName = 'ObjectCreated:Put'): Record<string, unknown> {
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: new Date().toISOString(),
    eventName,
    userIdentity: { principalId: 'AWS:AIDAEXAMPLE' },
    requestParameters: { sourceIPAddress: '10.0.0.1' },
    responseElements: { 'x-amz-request-id': 'C3D13FE58DE4C810', 'x-amz-id-2': 'FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD' },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: 'tableau-activity',
      bucket: { name: o.bucket, ownerIdentity: { principalId: 'A3NL1KOZZKExample' }, arn: `arn:aws:s3:::${o.bucket}` },
      // S3 writes the key form-encoded and the ETag without quotes
      object: { key: encodeS3EventKey(o.key), size: o.size, eTag: o.etag, versionId: '096fKKXTRTtl3on89fVO.nfljtsv6qko', sequencer: '0055AED6DCD90281E5' },
    },
  };
}

function s3Notification(objects: ObjRef[]): string {
  return JSON.stringify({ Records: objects.map((o) => s3Record(o)) });
}

function snsWrapped(message: string): string {
  return JSON.stringify({
    Type: 'Notification',
    MessageId: randomUUID(),
    TopicArn: 'arn:aws:sns:us-east-1:111122223333:tableau-activity',
    Subject: 'Amazon S3 Notification',
    Message: message,
    Timestamp: new Date().toISOString(),
    SignatureVersion: '1',
    Signature: 'EXAMPLE',
    SigningCertURL: 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem',
    UnsubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe',
  });
}

function eventBridge(o: ObjRef, detailType = 'Object Created'): string {
  return JSON.stringify({
    version: '0',
    id: randomUUID(),
    'detail-type': detailType,
    source: 'aws.s3',
    account: '111122223333',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:s3:::${o.bucket}`],
    // EventBridge keys are not URL-encoded
    detail: { version: '0', bucket: { name: o.bucket }, object: { key: o.key, size: o.size, etag: o.etag, 'version-id': 'IYV3p45BT0ac8hjHg1houSdS1a.Mro8e', sequencer: '617f08299329d189' }, 'request-id': 'N4N7GDK58NMKJ12R', requester: '111122223333', reason: 'PutObject' },
  });
}

function testEvent(bucket: string): string {
  return JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Time: new Date().toISOString(), Bucket: bucket, RequestId: '5582815E1AEA5ADF', HostId: '8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE' });
}

describe('S3 notification bodies', () => {
  const o = { bucket: 'acme-activity', key: 'logs/pod=prod-a/siteLuid=aaaa/y=2026/m=03/d=01/h=04/eventType=hist_access_view/my file+1.txt', etag: '0123456789abcdef0123456789abcdef', size: 42 };

  it('direct S3 notifications: keys decoded (AWS writes `=` as %3D, a space as +, a plus as %2B), ETag without quotes, several records', () => {
    const body = JSON.stringify({
      Records: [
        { ...s3Record(o), s3: { ...(s3Record(o)['s3'] as object), object: { key: 'logs/pod%3Dprod-a/siteLuid%3Daaaa/y%3D2026/m%3D03/d%3D01/h%3D04/eventType%3Dhist_access_view/my+file%2B1.txt', size: 42, eTag: o.etag } } },
        s3Record({ ...o, key: 'logs/second.txt', etag: '"quoted-etag-2"' }, 'ObjectCreated:CompleteMultipartUpload'),
        s3Record({ ...o, key: 'logs/gone.txt' }, 'ObjectRemoved:Delete'),
      ],
    });
    expect(parseNotification(body)).toEqual({
      kind: 'objects',
      via: 's3',
      objects: [
        { bucket: o.bucket, key: o.key, etag: o.etag, size: 42, eventName: 'ObjectCreated:Put' },
        { bucket: o.bucket, key: 'logs/second.txt', etag: 'quoted-etag-2', size: 42, versionId: '096fKKXTRTtl3on89fVO.nfljtsv6qko', eventName: 'ObjectCreated:CompleteMultipartUpload' },
      ],
      ignored: ['ObjectRemoved:Delete'],
    });
    expect(decodeS3EventKey(encodeS3EventKey(o.key))).toBe(o.key);
    expect(encodeS3EventKey('a=b/c d+e.txt')).toBe('a%3Db/c+d%2Be.txt');
    expect(normalizeEtag('W/"abc-3"')).toBe('abc-3');
  });

  it('SNS-wrapped, EventBridge, test events; other events ignored; anything else invalid', () => {
    const direct = s3Notification([o]);
    expect(parseNotification(snsWrapped(direct))).toMatchObject({ kind: 'objects', via: 'sns', objects: [{ key: o.key, etag: o.etag }] });
    expect(parseNotification(eventBridge(o))).toEqual({ kind: 'objects', via: 'eventbridge', objects: [{ bucket: o.bucket, key: o.key, etag: o.etag, size: 42, versionId: 'IYV3p45BT0ac8hjHg1houSdS1a.Mro8e', eventName: 'Object Created' }], ignored: [] });
    expect(parseNotification(snsWrapped(eventBridge(o)))).toMatchObject({ kind: 'objects', via: 'eventbridge', objects: [{ key: o.key }] });
    // an EventBridge key with a literal + stays as it is
    expect(parseNotification(eventBridge({ ...o, key: 'a+b.txt' }))).toMatchObject({ objects: [{ key: 'a+b.txt' }] });
    expect(parseNotification(eventBridge(o, 'Object Deleted'))).toEqual({ kind: 'objects', via: 'eventbridge', objects: [], ignored: ['Object Deleted'] });
    expect(parseNotification(testEvent(o.bucket))).toEqual({ kind: 'test', via: 's3' });
    expect(parseNotification(snsWrapped(testEvent(o.bucket)))).toEqual({ kind: 'test', via: 'sns' });

    for (const garbage of ['not json', '[]', '{"hello":"world"}', '{"Records":[]}', '{"Records":[{"eventSource":"aws:sqs"}]}', JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'b' }, object: { key: 'bad%zz' } } }] }), JSON.stringify({ source: 'aws.ec2', 'detail-type': 'EC2 Instance State-change Notification', detail: {} })]) {
      expect(parseNotification(garbage).kind, garbage).toBe('invalid');
    }
    expect(parseNotification(JSON.stringify({ Type: 'SubscriptionConfirmation', TopicArn: 'arn:aws:sns:us-east-1:1:t', Message: 'You have chosen to subscribe' }))).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('confirm the subscription') });
    expect(parseNotification(snsWrapped('garbage'))).toMatchObject({ kind: 'invalid', reason: 'SNS message: body is not JSON' });
  });

  it('validates its configuration', () => {
    const base = { type: 's3-sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/111122223333/tableau-activity', region: 'eu-west-1' };
    expect(s3SqsSourceConfigSchema.parse(base)).toMatchObject({ visibilityTimeout: 60_000, maxMessages: 10, concurrency: 10, waitTime: 10_000, prefix: '' });
    expect(sourceConfigSchema.parse({ ...base, visibilityTimeout: '5m' })).toMatchObject({ type: 's3-sqs', visibilityTimeout: 300_000 });
    for (const bad of [{ maxMessages: 11 }, { visibilityTimeout: '1s' }, { waitTime: '30s' }, { accessKeyIdEnv: 'K' }, { forcePathStyle: true }, { queueUrl: 'not a url' }, { externalId: 'x1' }, { unknown: 1 }]) {
      expect(s3SqsSourceConfigSchema.safeParse({ ...base, ...bad }).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

// ---------------------------------------------------------------------------
// servers and helpers
// ---------------------------------------------------------------------------

let s3: S3TestServer;
let sqs: SqsTestServer;
beforeAll(async () => {
  [s3, sqs] = await Promise.all([startS3Server(), startSqsServer()]);
});
afterAll(async () => {
  await Promise.all([s3?.close(), sqs?.close()]);
});

let counter = 0;
async function newBucket(): Promise<string> {
  const name = `tao-sqs-${process.pid}-${++counter}`;
  await s3.createBucket(name);
  return name;
}

/** A queue with a dead-letter queue (or none). */
function newQueue(options: { maxReceiveCount?: number; noRedrive?: boolean } = {}): { name: string; url: string; dlq: string } {
  const name = `q-${process.pid}-${++counter}`;
  const dlq = `${name}-dlq`;
  sqs.createQueue(dlq);
  const url = sqs.createQueue(name, options.noRedrive ? {} : { redrive: { deadLetterQueue: dlq, maxReceiveCount: options.maxReceiveCount ?? 3 } });
  return { name, url, dlq };
}

/** Every object of the bucket with the ETag (no quotes) and size S3 reports. */
async function objectsOf(bucket: string): Promise<Map<string, ObjRef>> {
  const res = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket }));
  return new Map((res.Contents ?? []).map((c) => [c.Key!, { bucket, key: c.Key!, etag: c.ETag!.replace(/"/g, ''), size: c.Size! }]));
}

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

function capturingLogger(): { log: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}

const S3_KEYS = { accessKeyIdEnv: 'T_S3_KEY', secretAccessKeyEnv: 'T_S3_SECRET' };
const ENV = { T_S3_KEY: 'S3RVER', T_S3_SECRET: 'S3RVER' };

function makeSource(config: Record<string, unknown> & { queueUrl: string }, log: pino.Logger = pino({ level: 'silent' }), requests?: string[]): S3SqsSource {
  const parsed = s3SqsSourceConfigSchema.parse({ type: 's3-sqs', region: 'us-east-1', s3Endpoint: s3.endpoint, forcePathStyle: true, ...S3_KEYS, ...config });
  return new S3SqsSource(parsed, { metrics: { ...NO_SOURCE_METRICS, request: (op) => void requests?.push(op) }, log, env: ENV }, { resumeDelayMs: 10 });
}

async function readText(obj: SourceObject, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of obj.open(signal)) chunks.push(Buffer.from(c));
  const buf = Buffer.concat(chunks);
  return (buf[0] === 0x1f && buf[1] === 0x8b ? gunzipSync(buf) : buf).toString('utf8');
}

/** What the pipeline does once an object was read and acknowledged. */
async function finish(source: S3SqsSource, cp: SourceCheckpoint, obj: SourceObject, lines: number): Promise<void> {
  cp.objects[obj.key] = { line: obj.resumeAfterLine + lines, done: true, ...(obj.version ? { version: obj.version } : {}) };
  await source.objectFinished(obj);
}

async function until(what: string, fn: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const SITE_A = { pod: 'prod-a', site: 'aaaaaaaa-0000-4000-8000-00000000000a' };
const SITE_B = { pod: 'prod-b', site: 'bbbbbbbb-0000-4000-8000-00000000000b' };
const signal = new AbortController().signal;

// ---------------------------------------------------------------------------
// the source on its own
// ---------------------------------------------------------------------------

describe('s3-sqs source', () => {
  it('gives the ids the listing s3 source gives; deletes a multi-record message only when all its objects are finished; keeps no state after', async () => {
    const bucket = await newBucket();
    await putActivityTree(s3, { bucket, prefix: 'activity/', sites: [SITE_A], hours: ['2026-03-01T04'], objectsPerHour: 3, recordsPerObject: 4 });
    const objects = await objectsOf(bucket);
    const q = newQueue({ noRedrive: true });
    const [first, second, third] = [...objects.values()];
    sqs.send(q.name, s3Notification([first!, second!])); // one message, two objects
    sqs.send(q.name, snsWrapped(s3Notification([third!])));

    const { log, lines } = capturingLogger();
    const requests: string[] = [];
    const source = makeSource({ queueUrl: q.url, prefix: 'activity' }, log, requests);
    const cp: SourceCheckpoint = { objects: {} };
    const got = await source.pending(cp, signal);
    expect(got.map((o) => o.key).sort()).toEqual([first!.key, second!.key, third!.key].sort());
    expect(source.hasMore).toBe(true);
    expect(lines.some((l) => l.level === 40 && /no redrive policy/.test(l.msg))).toBe(true);
    expect(requests[0]).toBe('GetQueueAttributes');

    // the listing source names the same objects with the same identity, hence the same record ids
    const listing = new S3Source(s3SourceConfigSchema.parse({ type: 's3', bucket, prefix: 'activity/', region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, ...S3_KEYS, since: '2026-03-01' }), { metrics: NO_SOURCE_METRICS, log: pino({ level: 'silent' }), env: ENV }, { now: () => Date.parse('2026-03-01T05:00:00Z') });
    const listed = await listing.pending({ objects: {} }, signal);
    const byKey = new Map(listed.map((o) => [o.key, o]));
    for (const o of got) {
      expect(o.identity).toBe(byKey.get(o.key)!.identity);
      expect(uidPrefixFor(o.identity)).toBe(uidPrefixFor(byKey.get(o.key)!.identity));
      expect(o.version).toBe(byKey.get(o.key)!.version);
      expect(o.size).toBe(byKey.get(o.key)!.size);
      expect(o.resumeAfterLine).toBe(0);
    }
    await listing.close();

    const obj = (key: string): SourceObject => got.find((o) => o.key === key)!;
    // the first object of the two-record message: the message stays
    expect((await readText(obj(first!.key), signal)).split('\n').filter(Boolean).length).toBe(4);
    await finish(source, cp, obj(first!.key), 4);
    await finish(source, cp, obj(third!.key), 4);
    await until('the SNS message deleted', () => sqs.count(q.name).total === 1);
    expect(sqs.queue(q.name).messages[0]!.body).toContain('Records');
    await finish(source, cp, obj(second!.key), 4);
    await until('both messages deleted', () => sqs.count(q.name).total === 0);
    // nothing left in the state once the messages are deleted
    await until('state emptied', () => Object.keys(cp.objects).length === 0);
    expect(await source.pending(cp, signal)).toEqual([]);
    expect(source.hasMore).toBe(false);
    expect(cp).toEqual({ objects: {}, position: {} });
    await source.close();
  });

  it('extends the visibility of a message while its object is in progress; a failed read hands the message back after its timeout; a restart resumes where it stopped', async () => {
    const bucket = await newBucket();
    await putActivityTree(s3, { bucket, sites: [SITE_A], hours: ['2026-03-01T04'], objectsPerHour: 1, recordsPerObject: 6 });
    const [o] = [...(await objectsOf(bucket)).values()];
    const q = newQueue({ maxReceiveCount: 5 });
    sqs.send(q.name, s3Notification([o!]));

    const { log, lines } = capturingLogger();
    const a = makeSource({ queueUrl: q.url, visibilityTimeout: '2s' }, log);
    const b = makeSource({ queueUrl: q.url, visibilityTimeout: '2s', waitTime: '1s' });
    const cp: SourceCheckpoint = { objects: {} };
    const [obj] = await a.pending(cp, signal);
    expect(obj!.key).toBe(o!.key);
    expect(lines.some((l) => /consuming S3 notifications/.test(l.msg) && l['maxReceiveCount'] === 5)).toBe(true);
    sqs.requests.length = 0;
    // twice the visibility timeout: still invisible to the other replica
    const other: SourceObject[] = [];
    const t0 = Date.now();
    while (Date.now() - t0 < 4_500) other.push(...(await b.pending({ objects: {} }, signal)));
    expect(other).toEqual([]);
    expect(sqs.requests.filter((r) => r.op === 'ChangeMessageVisibility').length).toBeGreaterThanOrEqual(3);
    expect(sqs.queue(q.name).messages[0]!.receiveCount).toBe(1);

    // half of it was acknowledged, then reading failed: the next poll gives it up
    cp.objects[obj!.key] = { line: 3, version: obj!.version! };
    const abandonedAt = Date.now();
    const stopped = new AbortController();
    stopped.abort(); // settle what was held, receive nothing
    expect(await a.pending(cp, stopped.signal)).toEqual([]);
    expect(lines.some((l) => l.level === 40 && /not finished: the message is visible again after its timeout/.test(l.msg))).toBe(true);
    // the same replica (after a restart: a new source, the saved checkpoint) receives it again and resumes after line 3
    await a.close();
    const a2 = makeSource({ queueUrl: q.url, visibilityTimeout: '2s', waitTime: '1s' });
    let again: SourceObject[] = [];
    while (again.length === 0) again = await a2.pending(cp, signal);
    expect(Date.now() - abandonedAt).toBeLessThan(4_000);
    expect(sqs.queue(q.name).messages[0]!.receiveCount).toBe(2);
    expect(again[0]!.identity).toBe(obj!.identity);
    expect(again[0]!.resumeAfterLine).toBe(3);
    await finish(a2, cp, again[0]!, 3);
    await until('message deleted', () => sqs.count(q.name).total === 0);
    await Promise.all([a2.close(), b.close()]);
  });

  it('on close, a message whose objects are not finished is visible again at once; one whose objects are is deleted', async () => {
    const bucket = await newBucket();
    await putActivityTree(s3, { bucket, sites: [SITE_A], hours: ['2026-03-01T03'], objectsPerHour: 2, recordsPerObject: 2 });
    const [o1, o2] = [...(await objectsOf(bucket)).values()];
    const q = newQueue();
    const m1 = sqs.send(q.name, s3Notification([o1!]));
    sqs.send(q.name, s3Notification([o2!]));
    const source = makeSource({ queueUrl: q.url, visibilityTimeout: '1m' });
    const cp: SourceCheckpoint = { objects: {} };
    const got = await source.pending(cp, signal);
    expect(got.length).toBe(2);
    expect(sqs.count(q.name)).toEqual({ visible: 0, inFlight: 2, total: 2 });
    // the second object's last acknowledgement was checkpointed just before the stop
    const second = got.find((o) => o.key === o2!.key)!;
    cp.objects[second.key] = { line: 2, done: true, version: second.version! };
    await source.close();
    expect(sqs.count(q.name)).toEqual({ visible: 1, inFlight: 0, total: 1 });
    expect(sqs.queue(q.name).messages[0]!.id).toBe(m1);
  });

  it('a notification without an ETag is looked up; test events and removals are deleted; a bucket it does not read is left for the dead-letter queue', async () => {
    const bucket = await newBucket();
    const key = s3Key('', SITE_B.pod, SITE_B.site, '2026-03-01T02', 'login_authentication', 'x 1.txt');
    const etag = await s3.put(bucket, key, activityLines('2026-03-01T02', SITE_B.site, 'login_authentication', 2, 0).text);
    const q = newQueue({ maxReceiveCount: 1 });
    const noEtag = JSON.parse(s3Notification([{ bucket, key, etag: '', size: 0 }])) as { Records: Array<{ s3: { object: Record<string, unknown> } }> };
    delete noEtag.Records[0]!.s3.object['eTag'];
    delete noEtag.Records[0]!.s3.object['size'];
    sqs.send(q.name, JSON.stringify(noEtag));
    sqs.send(q.name, testEvent(bucket));
    sqs.send(q.name, JSON.stringify({ Records: [s3Record({ bucket, key, etag, size: 1 }, 'ObjectRemoved:Delete')] }));
    const foreign = sqs.send(q.name, s3Notification([{ bucket: 'someone-elses-bucket', key, etag, size: 1 }]));
    const { log, lines } = capturingLogger();
    const source = makeSource({ queueUrl: q.url, bucket, visibilityTimeout: '2s', waitTime: '1s' }, log);
    const cp: SourceCheckpoint = { objects: {} };
    const got = await source.pending(cp, signal);
    expect(got.map((o) => [o.key, o.version, o.size])).toEqual([[key, etag, expect.any(Number)]]);
    await finish(source, cp, got[0]!, 2);
    await until('all but the foreign message deleted', () => sqs.count(q.name).total === 1);
    expect(sqs.queue(q.name).messages[0]!.id).toBe(foreign);
    expect(lines.some((l) => l.level === 40 && l['messageId'] === foreign && /names bucket someone-elses-bucket/.test(String(l['reason'])))).toBe(true);
    expect(lines.some((l) => /s3:TestEvent received: deleted/.test(l.msg))).toBe(true);
    // after maxReceiveCount (1) receives the queue moves it to the dead-letter queue
    const deadline = Date.now() + 8_000;
    while (sqs.count(q.dlq).total === 0 && Date.now() < deadline) expect(await source.pending(cp, signal)).toEqual([]);
    expect(sqs.count(q.dlq).total).toBe(1);
    expect(sqs.count(q.name).total).toBe(0);
    await source.close();
  });
});

// ---------------------------------------------------------------------------
// through the CLI
// ---------------------------------------------------------------------------

const CLI_ENV = { S3_KEY: 'S3RVER', S3_SECRET: 'S3RVER' };

function sqsSourceConfig(queueUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 's3-sqs', queueUrl, region: 'us-east-1', s3Endpoint: s3.endpoint, forcePathStyle: true, accessKeyIdEnv: 'S3_KEY', secretAccessKeyEnv: 'S3_SECRET', visibilityTimeout: '3s', waitTime: '2s', ...extra };
}

function writeConfig(work: string, receiverUrl: string, source: Record<string, unknown>, pipeline: Record<string, unknown> = {}): string {
  const file = join(work, 'config.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      state: { dir: join(work, 'state') },
      pipeline: { ...('workers' in daemonConfig.pipelineConfigSchema.shape ? { workers: 0 } : {}), ...pipeline },
      // several daemons at once: none serves the HTTP endpoints (when this build has them)
      ...('serverConfigSchema' in daemonConfig ? { server: { enabled: false } } : {}),
      tenants: [{ id: 'acme', sources: [source], destinations: [{ type: 'otlp', endpoint: receiverUrl }] }],
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

function checkpointOf(work: string): Record<string, SourceCheckpoint> {
  return (readCheckpointState(join(work, 'state', 'acme')) as { sources: Record<string, SourceCheckpoint> }).sources;
}

async function stop(p: CliProcess): Promise<void> {
  p.child.kill('SIGTERM');
  const res = await p.exited;
  expect(res.code, res.stderr.slice(-3000)).toBe(0);
}

describe('s3-sqs source through the CLI', () => {
  const receivers: OtlpReceiver[] = [];
  const procs: CliProcess[] = [];
  beforeEach(() => async () => {
    for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  async function receiver(): Promise<OtlpReceiver> {
    const r = await startOtlpReceiver();
    receivers.push(r);
    return r;
  }
  function daemon(config: string): CliProcess {
    const p = startCli(['run', '--config', config], { env: CLI_ENV });
    procs.push(p);
    return p;
  }

  it('three replicas share one queue: every object exported once, whatever the message shape; a garbage message ends in the dead-letter queue; the ids are the listing source\'s', async () => {
    // the replicas start (slow on a small machine) while the bucket is filled
    const q = newQueue({ maxReceiveCount: 1 });
    const rx = await Promise.all([receiver(), receiver(), receiver()]);
    for (const r of rx) r.setDelay(60); // slow enough that no replica drains the queue alone
    const works = rx.map(() => tempDir());
    const replicas = rx.map((r, i) => daemon(writeConfig(works[i]!, r.url, sqsSourceConfig(q.url, { prefix: 'tableau/', concurrency: 2, maxMessages: 2 }))));
    const bucket = await newBucket();
    const tree = await putActivityTree(s3, { bucket, prefix: 'tableau/', sites: [SITE_A, SITE_B], hours: hoursBack(Date.now(), 3, 1), objectsPerHour: 2, recordsPerObject: 25 });
    const objects = [...(await objectsOf(bucket)).values()];
    expect(objects.length).toBe(12);
    await until('all replicas polling', () => replicas.every((p) => p.stderr().includes('consuming S3 notifications')), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${replicas.map((p) => p.stderr().slice(-2000)).join('\n---\n')}`);
    });

    // messages: two objects in one notification, one per notification, SNS-wrapped, EventBridge, and noise
    sqs.send(q.name, s3Notification([objects[0]!, objects[1]!]));
    for (const o of objects.slice(2, 8)) sqs.send(q.name, s3Notification([o]));
    sqs.send(q.name, snsWrapped(s3Notification([objects[8]!])));
    sqs.send(q.name, snsWrapped(s3Notification([objects[9]!, objects[10]!])));
    sqs.send(q.name, eventBridge(objects[11]!));
    sqs.send(q.name, testEvent(bucket));
    sqs.send(q.name, snsWrapped(testEvent(bucket)));
    sqs.send(q.name, eventBridge(objects[0]!, 'Object Deleted'));
    const garbage = sqs.send(q.name, '{"this is":"not an S3 notification"}');

    const all = (): ReceivedLogRecord[] => rx.flatMap((r) => r.records());
    await until('every record exported', () => all().length >= tree.records.length, 30_000);
    await until('queue emptied, garbage in the DLQ', () => sqs.count(q.name).total === 0 && sqs.count(q.dlq).total === 1, 20_000);
    expect(sqs.queue(q.dlq).messages[0]!.id).toBe(garbage);
    await new Promise((r) => setTimeout(r, 500));
    await Promise.all(replicas.map(stop));

    const counts = seqCounts(all());
    expect(tree.records.filter((r) => counts.get(r.record.testSeq as number) !== 1)).toEqual([]);
    expect(all().length).toBe(tree.records.length);
    // the work was shared
    expect(rx.filter((r) => r.records().length > 0).length).toBeGreaterThanOrEqual(2);
    // the garbage was reported with its message id; no state left behind
    expect(replicas.some((p) => p.stderr().includes(garbage) && p.stderr().includes('not an S3 notification this source understands'))).toBe(true);
    for (const w of works) {
      const sources = checkpointOf(w);
      expect(Object.values(sources).every((s) => Object.keys(s.objects).length === 0), JSON.stringify(sources)).toBe(true);
    }

    // the listing s3 source gives every record the same log.record.uid
    const listingRx = await receiver();
    const listing = await runCli(['run', '--once', '--config', writeConfig(tempDir(), listingRx.url, { type: 's3', bucket, prefix: 'tableau/', region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, accessKeyIdEnv: 'S3_KEY', secretAccessKeyEnv: 'S3_SECRET' })], { env: CLI_ENV });
    expect(listing.code, listing.stderr).toBe(0);
    const uidBySeq = new Map(all().map((r) => [r.attributes['tableau.test_seq'], r.attributes['log.record.uid']]));
    expect(listingRx.records().length).toBe(tree.records.length);
    expect(listingRx.records().filter((r) => uidBySeq.get(r.attributes['tableau.test_seq']) !== r.attributes['log.record.uid'])).toEqual([]);
  });

  it('a replica killed mid-object: its message stays invisible while it reads, then another replica reads the object after the visibility timeout', async () => {
    const bucket = await newBucket();
    const hour = hoursBack(Date.now(), 1, 1)[0]!;
    const key = s3Key('', SITE_A.pod, SITE_A.site, hour, 'hist_access_view', 'large-0001.txt');
    const N = 6000;
    const big = activityLines(hour, SITE_A.site, 'hist_access_view', N, 100_000);
    const etag = await s3.put(bucket, key, big.text);
    const q = newQueue({ maxReceiveCount: 5 });

    const rxA = await receiver();
    rxA.setDelay(250);
    const pipeline = { batchSize: 200, maxInFlightBatches: 1 };
    const a = daemon(writeConfig(tempDir(), rxA.url, sqsSourceConfig(q.url, { visibilityTimeout: '2s' }), pipeline));
    await until('replica A polling', () => a.stderr().includes('consuming S3 notifications'), 20_000);
    sqs.send(q.name, s3Notification([{ bucket, key, etag, size: Buffer.byteLength(big.text) }]));
    await until('replica A exporting', () => rxA.records().length >= 200);
    const receivedAt = Date.now();
    // longer than two visibility timeouts: the heartbeat keeps it A's
    await new Promise((r) => setTimeout(r, 4_500));
    expect(rxA.records().length).toBeLessThan(N);
    const m = sqs.queue(q.name).messages[0]!;
    expect(m.receiveCount).toBe(1);
    expect(m.visibleAt).toBeGreaterThan(Date.now());
    expect(sqs.requests.filter((r) => r.op === 'ChangeMessageVisibility' && r.queue === q.name && r.at > receivedAt).length).toBeGreaterThanOrEqual(3);
    a.child.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    const exportedByA = rxA.records().length;

    const rxB = await receiver();
    const bWork = tempDir();
    const b = daemon(writeConfig(bWork, rxB.url, sqsSourceConfig(q.url, { visibilityTimeout: '2s' }), pipeline));
    await rxB.waitForRecords(N, 20_000);
    await until('message deleted', () => sqs.count(q.name).total === 0);
    expect(m.receiveCount).toBe(2);
    await stop(b);
    expect(b.stderr()).toContain('message received again');

    // B read the object from the start: all of it, once; what A sent before dying carries the same ids
    const countsB = seqCounts(rxB.records());
    expect(big.records.filter((r) => countsB.get(r.testSeq as number) !== 1)).toEqual([]);
    const uidB = new Map(rxB.records().map((r) => [r.attributes['tableau.test_seq'], r.attributes['log.record.uid']]));
    expect(rxA.records().slice(0, exportedByA).filter((r) => uidB.get(r.attributes['tableau.test_seq']) !== r.attributes['log.record.uid'])).toEqual([]);
    expect(Object.keys(checkpointOf(bWork)[`s3-sqs:${q.url}`]!.objects)).toEqual([]);
  });

  it('run --once reads what the queue holds and stops when it is empty; a queue that does not exist fails with a clear error', async () => {
    const bucket = await newBucket();
    const tree = await putActivityTree(s3, { bucket, sites: [SITE_B], hours: hoursBack(Date.now(), 2, 1), objectsPerHour: 2, recordsPerObject: 10 });
    const objects = [...(await objectsOf(bucket)).values()];
    const q = newQueue();
    for (const o of objects) sqs.send(q.name, s3Notification([o]));
    const rx = await receiver();
    const started = Date.now();
    const missing = `${sqs.endpoint}/000000000000/no-such-queue`;
    const [res, bad] = await Promise.all([
      runCli(['run', '--once', '--config', writeConfig(tempDir(), rx.url, sqsSourceConfig(q.url, { concurrency: 2, maxMessages: 2, waitTime: '20s' }))], { env: CLI_ENV }),
      runCli(['run', '--once', '--config', writeConfig(tempDir(), rx.url, sqsSourceConfig(missing))], { env: CLI_ENV }),
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000); // never waits the 20 s long poll
    expect(sqs.count(q.name).total).toBe(0);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`SQS queue ${missing} does not exist`);
    const counts = seqCounts(rx.records());
    expect(tree.records.filter((r) => counts.get(r.record.testSeq as number) !== 1)).toEqual([]);
  });
});
