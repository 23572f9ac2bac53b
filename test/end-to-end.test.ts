/**
 * The CLI process against a real OTLP/HTTP receiver that decodes protobuf (and JSON)
 * independently of our encoder: counts and contents compared with the input.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { readFileSync, writeFileSync, existsSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { runCli, startCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree, type FixtureRecord } from './support/activity-fixtures.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

let receiver: OtlpReceiver;
let work: string;

beforeEach(async () => {
  receiver = await startOtlpReceiver();
  work = tempDir();
});
afterEach(async () => {
  await receiver.close();
});

function bySeq(records: ReceivedLogRecord[]): Map<number, ReceivedLogRecord[]> {
  const m = new Map<number, ReceivedLogRecord[]>();
  for (const r of records) {
    const seq = r.attributes['tableau.test_seq'] as number;
    m.set(seq, [...(m.get(seq) ?? []), r]);
  }
  return m;
}

function checkContents(input: FixtureRecord[], received: ReceivedLogRecord[]): void {
  const got = bySeq(received);
  for (const { record } of input) {
    const r = got.get(record.testSeq as number)?.[0];
    expect(r, `record ${String(record.testSeq)} delivered`).toBeDefined();
    const t = /T(\d\d):(\d\d):07\.(\d{9})Z/.exec(record.eventTime as string)!;
    expect(r!.timeUnixNano % 1_000_000_000n).toBe(BigInt(t[3]!));
    expect(r!.eventName).toMatch(/^tableau\.(hist_access_view|login_authentication|add_delete_user_to_group|vizql_http_request)$/);
    expect(r!.attributes['user.id']).toBe(record.actorUserLuid);
    expect(r!.attributes['tableau.actor_user_id']).toBe(record.actorUserId);
    expect(r!.attributeKinds['tableau.actor_user_id']).toBe('int');
    expect(r!.resource['tableau.site_luid']).toBe(record.siteLuid);
    expect(r!.resource['service.name']).toBe('tableau-cloud');
    expect(typeof r!.attributes['log.record.uid']).toBe('string');
    if (record.requestUri) {
      expect(r!.attributes['url.path']).toBe('/vizql/w/Sales/v/Overview/bootstrapSession');
      expect(r!.attributes['url.query']).toBe(`seq=${String(record.testSeq)}`);
      expect(r!.attributes['client.address']).toBe(record.ipAddress);
    }
    const failed = record.eventOutcome === 'unauthorized' || record.status === 'failure';
    expect(r!.severityNumber).toBe(failed ? 13 : 9);
    // every failure carries error.type: the outcome, else _OTHER (a failed sign-in's status)
    expect(r!.attributes['error.type']).toBe(record.eventOutcome === 'unauthorized' ? 'unauthorized' : failed ? '_OTHER' : undefined);
    if (failed) expect(String(r!.body)).toMatch(/fail/);
    expect(r!.scope.name).toBe('tableau-activity-otel');
  }
}

function writeConfig(extra: { batchSize?: number; destinations?: unknown[]; retryFor?: string } = {}): string {
  const file = join(work, 'config.yaml');
  const destinations = extra.destinations ?? [{ type: 'otlp', endpoint: receiver.url }];
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      `pipeline: { batchSize: ${extra.batchSize ?? 100}, maxInFlightBatches: 2${extra.retryFor ? `, retryFor: ${extra.retryFor}` : ''} }`,
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
      `    destinations: ${JSON.stringify(destinations)}`,
    ].join('\n'),
  );
  return file;
}

describe('run --once, directory → OTLP/HTTP protobuf', () => {
  it('delivers every record with its mapped contents, and a second run sends nothing new', async () => {
    const tree = writeFixtureTree(join(work, 'logs'), 12, 50);
    const config = writeConfig();
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);
    const got = receiver.records();
    expect(got.length).toBe(tree.records.length);
    expect(new Set(got.map((r) => r.attributes['log.record.uid'])).size).toBe(tree.records.length);
    checkContents(tree.records, got);
    expect(receiver.requests.every((r) => r.contentType.startsWith('application/x-protobuf'))).toBe(true);

    const again = await runCli(['run', '--once', '--config', config]);
    expect(again.code, again.stderr).toBe(0);
    expect(receiver.records().length).toBe(tree.records.length);

    // a file dropped in later is read by the next run, and only it
    writeFixtureTree(join(work, 'logs'), 1, 7, 10_000, 'later');
    const third = await runCli(['run', '--once', '--config', config]);
    expect(third.code, third.stderr).toBe(0);
    expect(receiver.records().length).toBe(tree.records.length + 7);
  });

  it('quick one-off flags and the standard OTEL_EXPORTER_OTLP_* variables (JSON, gzip)', async () => {
    const tree = writeFixtureTree(join(work, 'logs'), 3, 20);
    const res = await runCli(['run', '--once', '--source', join(work, 'logs'), '--state-dir', join(work, 'state')], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip', OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant-token=abc' },
    });
    expect(res.code, res.stderr).toBe(0);
    expect(receiver.records().length).toBe(60);
    checkContents(tree.records, receiver.records());
    for (const req of receiver.requests) {
      expect(req.contentType).toMatch(/application\/json/);
      expect(req.contentEncoding).toBe('gzip');
      expect(req.headers['x-tenant-token']).toBe('abc');
    }

    const other = tempDir();
    const flags = await runCli(['run', '--once', '--source', join(work, 'logs'), '--state-dir', join(other, 'state'), '--otlp-endpoint', receiver.url, '--otlp-protocol', 'http/protobuf']);
    expect(flags.code, flags.stderr).toBe(0);
    expect(receiver.records().length).toBe(120);
    expect(receiver.requests.at(-1)!.contentType).toMatch(/protobuf/);
  });

  it('a destination that stays down: exit 1 and the checkpoint does not move; delivered once it is back', async () => {
    const tree = writeFixtureTree(join(work, 'logs'), 4, 25);
    const config = writeConfig({ retryFor: '2s' });
    receiver.setStatus(503);
    const down = await runCli(['run', '--once', '--config', config]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/unreachable|unavailable/);
    const cp = readCheckpointState(join(work, 'state', 'acme'));
    const objects = Object.values(cp.sources['directory:' + join(work, 'logs')].objects) as Array<{ line: number }>;
    expect(objects.every((o) => o.line === 0) || objects.length === 0).toBe(true);

    receiver.setStatus(null);
    const up = await runCli(['run', '--once', '--config', config]);
    expect(up.code, up.stderr).toBe(0);
    const seqs = bySeq(receiver.records());
    for (const r of tree.records) expect(seqs.has(r.record.testSeq as number)).toBe(true);
  });

  it('429 with Retry-After and 500 are retried; a 400 on a batch splits it: only the record refused alone is dead-lettered, the run goes on', async () => {
    const tree = writeFixtureTree(join(work, 'logs'), 3, 100);
    const config = writeConfig({ batchSize: 100 });
    receiver.respondNext({ status: 429, headers: { 'retry-after': '1' } }, { status: 500 }, { status: 400, body: 'bad request' });
    receiver.rejectRecords((r) => r.attributes['tableau.test_seq'] === 123);
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);
    // the one-off 400 blamed a batch whose halves were then accepted; record 123 is refused alone
    const got = bySeq(receiver.records());
    expect(receiver.records().length).toBe(299);
    for (const { record } of tree.records) expect(got.get(record.testSeq as number)?.length).toBe(record.testSeq === 123 ? undefined : 1);
    const dlDir = join(work, 'state', 'acme', 'dead-letter');
    const letters = readdirSync(dlDir).flatMap((f) => readFileSync(join(dlDir, f), 'utf8').trim().split('\n')).map((l) => JSON.parse(l));
    const batches = letters.filter((l) => l.kind === 'batch');
    expect(batches).toHaveLength(1);
    const bad = tree.records.find((r) => r.record.testSeq === 123)!;
    expect(batches[0]).toMatchObject({ status: 400, destination: 'otlp', lines: [JSON.stringify(bad.record)], objects: [{ object: bad.key, firstLine: bad.line, lastLine: bad.line }] });
    expect(batches[0].records).toEqual([{ object: bad.key, uidPrefix: expect.any(String), line: bad.line, raw: JSON.stringify(bad.record) }]);
    expect(res.stderr).toMatch(/rejected/);
  });
});

describe('bad input', () => {
  it('malformed lines, a truncated gzip object, a 5 MB line and an empty file: every good line delivered, every bad one dead-lettered', async () => {
    const dir = join(work, 'logs', 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=01/eventType=hist_access_view');
    mkdirSync(dir, { recursive: true });
    const good = (seq: number, extra: Record<string, unknown> = {}) => JSON.stringify({ eventTime: '2026-11-29T01:00:00.5Z', actorUserLuid: 'u', testSeq: seq, ...extra });
    writeFileSync(join(dir, 'a.txt'), [good(1), 'not json', '[1,2,3]', '42', good(2), '{"actorUserLuid":"no time"}', '{"eventTime":"yesterday"}', good(3)].join('\r\n') + '\r\n');
    const big = good(4, { blob: 'x'.repeat(5 * 1024 * 1024) });
    writeFileSync(join(dir, 'b.txt'), big + '\n' + good(5) + '\n');
    writeFileSync(join(dir, 'c.txt'), '');
    const gz = gzipSync(Array.from({ length: 2000 }, (_, i) => good(100 + i)).join('\n') + '\n');
    writeFileSync(join(dir, 'd.txt'), gz.subarray(0, Math.floor(gz.length / 2)));
    const config = writeConfig();
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);
    const seqs = bySeq(receiver.records());
    for (const s of [1, 2, 3, 4, 5]) expect(seqs.has(s), `seq ${s}`).toBe(true);
    expect((seqs.get(4)![0]!.attributes['tableau.blob'] as string).length).toBe(5 * 1024 * 1024);
    // the readable part of the truncated object arrived
    const fromGzip = [...seqs.keys()].filter((s) => s >= 100);
    expect(fromGzip.length).toBeGreaterThan(0);
    expect(fromGzip.length).toBeLessThan(2000);

    const dlDir = join(work, 'state', 'acme', 'dead-letter');
    const letters = readdirSync(dlDir).flatMap((f) => readFileSync(join(dlDir, f), 'utf8').trim().split('\n')).map((l) => JSON.parse(l));
    const forA = letters.filter((l) => l.object.endsWith('a.txt')).map((l) => [l.line, l.reason.split(':')[0].split(' ')[0]]);
    expect(forA).toEqual([[2, 'invalid'], [3, 'not'], [4, 'not'], [6, 'missing'], [7, 'unparseable']]);
    expect(letters.find((l) => l.object.endsWith('a.txt') && l.line === 2).raw).toBe('not json');
    const truncated = letters.find((l) => l.object.endsWith('d.txt'));
    expect(truncated.reason).toMatch(/unreadable/);
    expect(res.stderr).toMatch(/a\.txt/);
    // a second run does not re-read or re-dead-letter anything
    const before = receiver.records().length;
    const again = await runCli(['run', '--once', '--config', config]);
    expect(again.code).toBe(0);
    expect(receiver.records().length).toBe(before);
  });
});

describe('daemon mode', () => {
  it('keeps polling, picks up files dropped in later, and on SIGTERM saves its checkpoint and exits 0', async () => {
    writeFixtureTree(join(work, 'logs'), 2, 10);
    const config = writeConfig();
    const daemon = startCli(['run', '--config', config]);
    await receiver.waitForRecords(20, 20_000);
    writeFixtureTree(join(work, 'logs'), 1, 5, 500, 'later');
    mkdirSync(join(work, 'logs', 'late'), { recursive: true });
    writeFileSync(join(work, 'logs', 'late', 'x.txt'), JSON.stringify({ eventTime: '2026-11-29T05:00:00Z', eventType: 'hist_login', testSeq: 9999 }) + '\n');
    await receiver.waitForRecords(26, 20_000);
    const got = bySeq(receiver.records());
    expect(got.get(9999)![0]!.eventName).toBe('tableau.hist_login');
    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(res.code, res.stderr).toBe(0);
    expect(existsSync(join(work, 'state', 'acme', 'checkpoints.json'))).toBe(true);
    expect(res.stderr).toMatch(/stopping/);
  });
});
