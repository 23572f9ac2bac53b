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
    resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 'S1' } },
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
      'tableau_activity_otel.tenant': 'acme',
      'tableau.site_luid': 'S1',
      'user.id': 'u1',
      'tableau.count': 3,
      'attributes.message': 'an attribute named like a reserved field',
      evt: { name: 'tableau.login' },
      usr: { id: 'u1' },
    });
    expect([datadogStatus(9), datadogStatus(13), datadogStatus(17), datadogStatus(5)]).toEqual(['info', 'warn', 'error', 'info']);
  });

  it('the text writer and the object path give the same entry, key order included', () => {
    const plain = record();
    delete plain.attributes.message;
    const lifted = { ...plain, resource: { key: 'r2', attributes: { 'tableau_activity_otel.tenant': 'acme' } }, attributes: { ...plain.attributes, 'tableau.site_luid': 'S9', 'tableau.obj': { a: [1, { b: 'c"d' }] } } };
    const web = { ...plain, attributes: { ...plain.attributes, 'client.address': '10.1.2.3', 'url.path': '/p', 'user_agent.original': 'ua', 'error.type': 'internal_error' } };
    for (const r of [plain, lifted, web, { ...plain, body: undefined, severityNumber: 17 }] as MappedLogRecord[]) {
      const fast = new DatadogEntryWriter(spec).json(r);
      const slow = JSON.stringify(datadogEntry(spec, r));
      expect(fast).toBe(slow);
    }
  });

  it("Datadog standard attributes as nested objects, next to the OTel names; evt.outcome from error.type, else the record's outcome", () => {
    const encode = (r: MappedLogRecord): DatadogEntry => JSON.parse(new TextDecoder().decode(createDatadogEncoder(spec).encode([r]).bodies[0])) [0] as DatadogEntry;
    const web = record({
      message: undefined,
      'user.email': 'ann@example.com',
      'user.name': 'ann',
      'client.address': '203.0.113.9',
      'http.request.method': 'GET',
      'url.path': '/views/Sales',
      'url.query': 'a=1',
      'user_agent.original': 'Mozilla/5.0',
      'tableau.event_outcome': 'success',
    });
    delete web.attributes.message;
    const e = encode(web);
    expect(e.usr).toEqual({ id: 'u1', email: 'ann@example.com', name: 'ann' });
    expect(e.network).toEqual({ client: { ip: '203.0.113.9' } });
    expect(e.http).toEqual({ method: 'GET', url: '/views/Sales?a=1', useragent: 'Mozilla/5.0' });
    expect(e.evt).toEqual({ name: 'tableau.login', outcome: 'success' });
    expect(e).toMatchObject({ 'user.id': 'u1', 'user.email': 'ann@example.com', 'client.address': '203.0.113.9', 'http.request.method': 'GET', 'url.path': '/views/Sales' });
    expect(encode({ ...web, attributes: { ...web.attributes, 'url.full': 'https://t.example/views/Sales?a=1' } }).http).toMatchObject({ url: 'https://t.example/views/Sales?a=1' });
    expect(encode({ ...web, attributes: { ...web.attributes, 'error.type': 'unauthorized', 'tableau.event_outcome': 'unauthorized' } }).evt).toEqual({ name: 'tableau.login', outcome: 'failure' });
    expect(encode({ ...web, attributes: { 'tableau.status': 'failure' } }).evt).toEqual({ name: 'tableau.login', outcome: 'failure' });
    const bare = encode({ ...web, attributes: { 'tableau.count': 1 } });
    expect(bare.evt).toEqual({ name: 'tableau.login' });
    expect(['usr', 'network', 'http'].filter((k) => k in bare)).toEqual([]);
    // an attribute literally named like a standard attribute's object does not replace it
    expect(encode({ ...web, attributes: { 'user.id': 'u1', usr: 'mine' } as MappedLogRecord['attributes'] })).toMatchObject({ usr: { id: 'u1' }, 'attributes.usr': 'mine' });
  });

  it("service: the configured one wins, else the resource's service.name; a record attribute never overwrites its resource's", () => {
    const { service: _configured, ...unset } = spec;
    const r = record({ 'tableau.pod': 'record-pod', 'tableau.site_luid': 'S1', 'service.name': 'from-record' });
    r.resource = { key: 'r3', attributes: { ...r.resource.attributes, 'tableau.pod': 'resource-pod' } };
    for (const e of [JSON.parse(new DatadogEntryWriter(unset).json(r)) as DatadogEntry, datadogEntry(unset, r) as DatadogEntry]) {
      expect(e.service).toBe('tableau-cloud');
      expect(e['service.name']).toBe('tableau-cloud');
      expect(e['record.service.name']).toBe('from-record');
      expect(e['tableau.pod']).toBe('resource-pod');
      expect(e['record.tableau.pod']).toBe('record-pod');
      // the same value as the resource's is not repeated
      expect(e['tableau.site_luid']).toBe('S1');
      expect('record.tableau.site_luid' in e).toBe(false);
    }
    expect(JSON.parse(new DatadogEntryWriter(spec).json(r)).service).toBe('tableau');
    const noName = { ...record(), resource: { key: 'r4', attributes: { 'tableau_activity_otel.tenant': 'acme' } } };
    expect(JSON.parse(new DatadogEntryWriter(unset).json(noName)).service).toBe('tableau');
    expect(datadogEntry(unset, noName).service).toBe('tableau');
  });

  it("hostname: the configured one, else the resource's host.name (a Tableau Server node), on both paths; the tenant tag is our label", () => {
    const node = { ...record(), resource: { key: 'r5', attributes: { 'service.name': 'tableau-server', 'host.name': 'ts-node-2', 'tableau_activity_otel.tenant': 'acme', 'tableau.tenant.id': 'tableau-tenant-uuid' } } };
    const { hostname: _h, service: _s, ...unset } = spec;
    for (const e of [JSON.parse(new DatadogEntryWriter(unset).json(node)) as Record<string, unknown>, datadogEntry(unset, node)]) {
      expect(e.hostname).toBe('ts-node-2');
      expect(e.service).toBe('tableau-server');
      expect(String(e.ddtags).split(',')).toContain('tenant:acme');
    }
    const fixed: DatadogEncoding = { ...unset, hostname: 'configured-host' };
    expect(JSON.parse(new DatadogEntryWriter(fixed).json(node)).hostname).toBe('configured-host');
    expect(datadogEntry(fixed, node).hostname).toBe('configured-host');
    expect('hostname' in datadogEntry(unset, record())).toBe(false);
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
    expect(c).toMatchObject({ site: 'datadoghq.com', compression: 'gzip', insecureSkipVerify: false, tags: [] });
    expect(c.service).toBeUndefined();
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
      expect(e['tableau_activity_otel.tenant']).toBe('acme');
      expect(e.event_name).toBe(`tableau.${type}`);
    }
    expectSecretNowhere(API_KEY, work, res);
  });

  it("Datadog standard attributes arrive (usr, network.client.ip, http, evt); service is the resource's service.name; a record field never overwrites a resource attribute", async () => {
    const server = await datadog();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 50);
    // a record whose own `pod` field becomes tableau.pod, the resource attribute taken from the key (pod=p)
    writeRecords(work, [{ eventTime: '2026-11-29T01:00:00Z', actorUserLuid: 'u-pod', pod: 'pod-of-the-record', testSeq: 10_000 }]);
    const res = await run(writeConfig(work, { url: server.url }));
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.entries.length).toBe(tree.records.length + 1);
    const bySeq = new Map(server.entries.map((e) => [e['tableau.test_seq'] as number, e]));
    let failures = 0;
    for (const { key, record } of tree.records) {
      const e = bySeq.get(record.testSeq as number)!;
      const type = /eventType=([^/]+)/.exec(key)![1]!;
      expect(e.service).toBe('tableau-cloud');
      expect(e.usr).toEqual({ id: record.actorUserLuid });
      const failed = record.eventOutcome === 'unauthorized' || record.status === 'failure';
      if (failed) failures++;
      expect(e.evt).toEqual({ name: `tableau.${type}`, outcome: failed ? 'failure' : 'success' });
      if (type === 'vizql_http_request') {
        expect(e.network).toEqual({ client: { ip: record.ipAddress } });
        expect(e.http).toEqual({ method: 'POST', url: record.requestUri });
        expect(e['client.address']).toBe(record.ipAddress);
      } else {
        expect(e.network).toBeUndefined();
        expect(e.http).toBeUndefined();
      }
    }
    expect(failures).toBeGreaterThan(0);
    const clash = bySeq.get(10_000)!;
    expect(clash['tableau.pod']).toBe('p');
    expect(clash['record.tableau.pod']).toBe('pod-of-the-record');
    expect(clash.usr).toEqual({ id: 'u-pod' });
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
