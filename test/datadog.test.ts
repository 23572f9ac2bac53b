/**
 * `type: datadog` end to end: the real CLI sends a fixture tree to a real HTTP(S) server that
 * checks the Logs API v2 contract (test/support/datadog-server.ts): JSON arrays of at most 1000
 * entries and 5 MB, gzip, `DD-API-KEY`, reserved fields; injected 408/429/503/413/403.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDatadogServer, tagsOf, type DatadogServer, type DatadogEntry } from './support/datadog-server.js';
import { hasOpenssl, makeTestCertificates } from './support/hec-server.js';
import { runCli, type CliResult } from './support/cli-process.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { createDatadogEncoder, datadogEntry, datadogStatus, DatadogEntryWriter, type DatadogEncoding } from '../src/export/datadog/encoder.js';
import { datadogDestinationConfigSchema, datadogLogsUrl } from '../src/export/datadog/config.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const API_KEY = 'dd-api-key-4c1e88b0-SECRET-91aa';
const KEY_ENV = 'TAO_TEST_DD_API_KEY';
const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

const servers: DatadogServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function datadog(options: Parameters<typeof startDatadogServer>[0] = { apiKey: API_KEY }): Promise<DatadogServer> {
  const s = await startDatadogServer(options);
  servers.push(s);
  return s;
}

function writeConfig(work: string, destination: Record<string, unknown>, pipeline?: string): string {
  return writeDirectoryTenantConfig(work, [{ type: 'datadog', apiKeyEnv: KEY_ENV, ...destination }], pipeline);
}

const run = (config: string, env: Record<string, string> = { [KEY_ENV]: API_KEY }, extra: string[] = []): Promise<CliResult> => runCli(['run', '--once', ...extra, '--config', config], { env });

function deadLetters(work: string): Array<Record<string, unknown>> {
  const dir = join(work, 'state', 'acme', 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
}

function expectSecretNowhere(secret: string, work: string, ...results: CliResult[]): void {
  for (const r of results) {
    expect(r.stdout.includes(secret), 'secret in stdout').toBe(false);
    expect(r.stderr.includes(secret), 'secret in stderr').toBe(false);
  }
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
  for (const f of walk(join(work, 'state'))) expect(readFileSync(f, 'utf8').includes(secret), `secret in ${f}`).toBe(false);
}

function countBySeq(entries: DatadogEntry[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const e of entries) m.set(e['tableau.test_seq'] as number, (m.get(e['tableau.test_seq'] as number) ?? 0) + 1);
  return m;
}

/** One activity-log file of hand-written records (for big attributes). */
function writeRecords(work: string, records: Array<Record<string, unknown>>): void {
  const dir = join(work, 'logs', `pod=p/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'big.txt'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

describe('datadog encoder', () => {
  const record = (attrs: Record<string, unknown> = {}, severityNumber = 9): MappedLogRecord => ({
    timeUnixNano: 1795928827123456789n,
    observedTimeUnixNano: 0n,
    severityNumber,
    severityText: 'INFO',
    eventName: 'tableau.login',
    eventType: 'login',
    body: 'user signed in',
    attributes: { 'user.id': 'u1', 'tableau.count': 3, message: 'an attribute named like a reserved field', ...attrs } as MappedLogRecord['attributes'],
    resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 'acme', 'tableau.site_luid': 'S1' } },
  });
  const spec: DatadogEncoding = { kind: 'datadog', service: 'tableau', hostname: 'h1', tags: ['env:test'], maxEntries: 1000, maxRequestBytes: 5_000_000, maxEntryBytes: 1_000_000, compression: 'none' };

  it('one entry per record: reserved fields, tags, ms timestamp, dotted attributes at the top level', () => {
    const { bodies, truncated } = createDatadogEncoder(spec).encode([record()]);
    expect(truncated).toBeUndefined();
    const [entry] = JSON.parse(new TextDecoder().decode(bodies[0])) as DatadogEntry[];
    expect(entry).toEqual({
      ddsource: 'tableau',
      service: 'tableau',
      hostname: 'h1',
      status: 'info',
      message: 'user signed in',
      ddtags: 'env:test,tenant:acme,site:S1,event_type:login',
      timestamp: 1795928827123,
      event_name: 'tableau.login',
      'service.name': 'tableau-cloud',
      'tableau.tenant.id': 'acme',
      'tableau.site_luid': 'S1',
      'user.id': 'u1',
      'tableau.count': 3,
      'attributes.message': 'an attribute named like a reserved field',
    });
    expect([datadogStatus(9), datadogStatus(13), datadogStatus(17), datadogStatus(5)]).toEqual(['info', 'warn', 'error', 'info']);
  });

  it('the text writer and the object path give the same entry, key order included', () => {
    const plain = record();
    delete plain.attributes.message;
    const lifted = { ...plain, resource: { key: 'r2', attributes: { 'tableau.tenant.id': 'acme' } }, attributes: { ...plain.attributes, 'tableau.site_luid': 'S9', 'tableau.obj': { a: [1, { b: 'c"d' }] } } };
    for (const r of [plain, lifted, { ...plain, body: undefined, severityNumber: 17 }] as MappedLogRecord[]) {
      const fast = new DatadogEntryWriter(spec).json(r);
      const slow = JSON.stringify(datadogEntry(spec, r));
      expect(fast).toBe(slow);
    }
  });

  it('at most 1000 entries and 5 MB per body; an entry over 1 MB is truncated, marked and counted', () => {
    const many = createDatadogEncoder(spec).encode(Array.from({ length: 2500 }, () => record()));
    expect(many.bodies.map((b) => JSON.parse(new TextDecoder().decode(b)).length)).toEqual([1000, 1000, 500]);
    const big = createDatadogEncoder(spec).encode(Array.from({ length: 12 }, () => record({ 'tableau.blob': 'y'.repeat(900_000) })));
    expect(big.bodies.length).toBe(3);
    for (const b of big.bodies) expect(b.byteLength).toBeLessThanOrEqual(5_000_000);
    const huge = createDatadogEncoder(spec).encode([record({ 'tableau.blob': 'z'.repeat(3_000_000), 'tableau.other': 'é'.repeat(400_000), 'tableau.small': 'kept' })]);
    expect(huge.truncated).toBe(1);
    const text = new TextDecoder().decode(huge.bodies[0]);
    const [entry] = JSON.parse(text) as DatadogEntry[];
    expect(Buffer.byteLength(JSON.stringify(entry))).toBeLessThanOrEqual(1_000_000);
    expect(entry!.truncated).toBe(true);
    expect(entry!['tableau.small']).toBe('kept');
    expect(entry!.message).toBe('user signed in');
    expect(String(entry!['tableau.blob'])).toMatch(/…\[truncated\]$/);
  });

  it('config: strict, defaults, site URLs', () => {
    const c = datadogDestinationConfigSchema.parse({ type: 'datadog', apiKeyEnv: 'K' });
    expect(c).toMatchObject({ site: 'datadoghq.com', service: 'tableau', compression: 'gzip', insecureSkipVerify: false, tags: [] });
    expect(datadogDestinationConfigSchema.safeParse({ type: 'datadog', apiKeyEnv: 'K', apiKey: 'inline' }).success).toBe(false);
    expect(datadogDestinationConfigSchema.safeParse({ type: 'datadog', apiKeyEnv: 'K', site: 'example.com' }).success).toBe(false);
    expect(datadogLogsUrl({ site: 'datadoghq.eu' }).href).toBe('https://http-intake.logs.datadoghq.eu/api/v2/logs');
    expect(datadogLogsUrl({ site: 'us5.datadoghq.com' }).href).toBe('https://http-intake.logs.us5.datadoghq.com/api/v2/logs');
    expect(datadogLogsUrl({ site: 'datadoghq.com', url: 'http://127.0.0.1:8080' }).href).toBe('http://127.0.0.1:8080/api/v2/logs');
    expect(datadogLogsUrl({ site: 'datadoghq.com', url: 'http://proxy/custom/intake' }).href).toBe('http://proxy/custom/intake');
  });
});

describe('run --once → datadog', () => {
  it('every record once; arrays of at most 1000 entries, gzip, DD-API-KEY, reserved fields and tags', async () => {
    const server = await datadog();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 3, 1100);
    const config = writeConfig(work, { url: server.url, service: 'tableau-activity', hostname: 'collector-1', tags: ['env:test', 'team:secops'] }, 'batchSize: 5000, maxBatchBytes: 16777216');
    const res = await run(config);
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.entries.length).toBe(tree.records.length);
    const counts = countBySeq(server.entries);
    for (const { record } of tree.records) expect(counts.get(record.testSeq as number)).toBe(1);
    expect(Math.max(...server.requests.map((r) => r.entries))).toBe(1000);
    for (const r of server.requests) {
      expect(r.status).toBe(202);
      expect(r.entries).toBeLessThanOrEqual(1000);
      expect(r.headers['dd-api-key']).toBe(API_KEY);
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.headers['content-type']).toMatch(/application\/json/);
      expect(r.wireBytes).toBeLessThan(r.rawBytes);
    }
    const bySeq = new Map(server.entries.map((e) => [e['tableau.test_seq'] as number, e]));
    for (const { key, record } of tree.records) {
      const e = bySeq.get(record.testSeq as number)!;
      expect(e).toMatchObject({ ddsource: 'tableau', service: 'tableau-activity', hostname: 'collector-1' });
      const failed = record.eventOutcome === 'unauthorized' || record.status === 'failure';
      expect(e.status).toBe(failed ? 'warn' : 'info');
      expect(typeof e.message).toBe('string');
      expect((e.message as string).length).toBeGreaterThan(0);
      const type = /eventType=([^/]+)/.exec(key)![1]!;
      expect(tagsOf(e).sort()).toEqual(['env:test', `event_type:${type}`, `site:${SITE}`, 'team:secops', 'tenant:acme'].sort());
      expect(e.timestamp).toBe(Math.floor(Date.parse(record.eventTime as string)));
      expect(e['user.id']).toBe(record.actorUserLuid);
      expect(e['tableau.actor_user_id']).toBe(record.actorUserId);
      expect(e['tableau.tenant.id']).toBe('acme');
      expect(e.event_name).toBe(`tableau.${type}`);
    }
    expectSecretNowhere(API_KEY, work, res);
  });

  it('a batch over 5 MB is split; an entry over 1 MB arrives truncated (marked, counted in the log), not rejected', async () => {
    const server = await datadog();
    const work = tempDir();
    const records = Array.from({ length: 120 }, (_, i) => ({ eventTime: '2026-11-29T01:00:00.5Z', actorUserLuid: 'u', testSeq: i, blob: `${i}-`.padEnd(60_000, 'b') }));
    records.push({ eventTime: '2026-11-29T01:00:01Z', actorUserLuid: 'u', testSeq: 999, blob: 'h'.repeat(3_000_000) });
    writeRecords(work, records);
    const res = await run(writeConfig(work, { url: server.url }, 'batchSize: 1000, maxBatchBytes: 33554432'));
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.entries.length).toBe(121);
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
    for (const r of server.requests) {
      expect(r.rawBytes).toBeLessThanOrEqual(5_000_000);
      expect(r.maxEntryBytes).toBeLessThanOrEqual(1_000_000);
    }
    const big = server.entries.find((e) => e['tableau.test_seq'] === 999)!;
    expect(big.truncated).toBe(true);
    expect(String(big['tableau.blob'])).toMatch(/^h+…\[truncated\]$/);
    expect(server.entries.filter((e) => e.truncated).length).toBe(1);
    expect(server.entries.find((e) => e['tableau.test_seq'] === 7)!['tableau.blob']).toBe('7-'.padEnd(60_000, 'b'));
    const warn = res.stderr.split('\n').find((l) => l.includes('truncated'));
    expect(warn && JSON.parse(warn)).toMatchObject({ destination: 'datadog', entries: 1 });
  });

  it('408, 429 (Retry-After) and 503 are retried and arrive once; a 413 splits the batch until the entry too big alone is found: only it is dead-lettered', async () => {
    const server = await datadog();
    const work = tempDir();
    const records = Array.from({ length: 60 }, (_, i) => ({ eventTime: '2026-11-29T01:00:00.5Z', actorUserLuid: 'u', testSeq: i, ...(i === 37 ? { blob: 'x'.repeat(40_000) } : {}) }));
    writeRecords(work, records);
    server.respondNext({ status: 408 }, { status: 429, headers: { 'retry-after': '1' } }, { status: 503 });
    // an intake (or a proxy before it) with a smaller limit than our batch: 413 for anything over 20 kB
    server.setMaxPayloadBytes(20_000);
    const res = await run(writeConfig(work, { url: server.url }));
    expect(res.code, res.stderr).toBe(0);
    const counts = countBySeq(server.entries);
    expect(server.entries.length).toBe(59);
    expect(counts.has(37)).toBe(false);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(server.requests.some((r) => r.status === 413 && r.entries === 0)).toBe(true);
    const batches = deadLetters(work).filter((l) => l.kind === 'batch');
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({ status: 413, destination: 'datadog', reason: expect.stringMatching(/^HTTP 413: Payload Too Large: payload of \d+ bytes exceeds 20000/) });
    const letter = batches[0]!.records as Array<Record<string, unknown>>;
    expect(letter).toHaveLength(1);
    expect(letter[0]).toMatchObject({ line: 38, raw: JSON.stringify(records[37]) });
    expectSecretNowhere(API_KEY, work, res);
  });

  it('a wrong API key (403) holds the pipeline: retried, nothing dead-lettered, exit 1; once the key is accepted everything arrives', async () => {
    const server = await datadog();
    const wrong = 'dd-wrong-key-3e7f0a-NOT-FOR-LOGS';
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 10);
    const config = writeConfig(work, { url: server.url });
    const res = await run(config, { [KEY_ENV]: wrong }, ['--retry-for', '2s']);
    expect(res.code).toBe(1);
    expect(server.requests.filter((r) => r.status === 403).length).toBeGreaterThan(1);
    expect(deadLetters(work)).toEqual([]);
    expect(res.stderr).toMatch(/"destination":"datadog".*"status":403|"status":403.*"destination":"datadog"/);
    expect(res.stderr).toMatch(/HTTP 403: Forbidden: API key is invalid/);
    expectSecretNowhere(wrong, work, res);
    server.setApiKey(wrong);
    const again = await run(config, { [KEY_ENV]: wrong });
    expect(again.code, again.stderr).toBe(0);
    expect(server.entries).toHaveLength(10);
    expect(deadLetters(work)).toEqual([]);
  });
});

describe.skipIf(!hasOpenssl())('datadog over TLS', () => {
  it('an unknown CA is rejected by default; caFile makes it work', async () => {
    const certs = makeTestCertificates(tempDir('tao-certs-'));
    const server = await datadog({ apiKey: API_KEY, tls: { key: certs.key, cert: certs.cert } });
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 1, 30);
    const rejected = await run(writeConfig(work, { url: server.url }), { [KEY_ENV]: API_KEY }, ['--retry-for', '1s']);
    expect(rejected.code).toBe(1);
    expect(server.entries.length).toBe(0);
    expect(rejected.stderr).toMatch(/TLS error/);
    const ok = await run(writeConfig(work, { url: server.url, caFile: certs.caFile }));
    expect(ok.code, ok.stderr).toBe(0);
    expect(server.entries.length).toBe(tree.records.length);
    expectSecretNowhere(API_KEY, work, rejected, ok);
  });
});
