/**
 * `type: splunk-hec` end to end: the real CLI (`dist/cli.js`) reads a fixture tree and sends it
 * to a real HTTP(S) server that parses HEC batched events as Splunk documents them
 * (test/support/hec-server.ts). Encoder details (time literal, size split) are checked directly.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startHecServer, hasOpenssl, makeTestCertificates, splitConcatenatedJson, type HecServer, type HecEvent } from './support/hec-server.js';
import { runCli, type CliResult } from './support/cli-process.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { tempDir, writeFixtureTree, type FixtureRecord } from './support/activity-fixtures.js';
import { cimFields, createSplunkHecEncoder, epochSecondsLiteral, type SplunkHecEncoding } from '../src/export/splunk-hec/encoder.js';
import { splunkHecDestinationConfigSchema, hecEventUrl, hecAckUrl } from '../src/export/splunk-hec/config.js';
import { SplunkHecDestination } from '../src/export/splunk-hec/destination.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const TOKEN = 'hec-token-7f3a9c21-SECRET-e55d';
const TOKEN_ENV = 'TAO_TEST_HEC_TOKEN';
const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

const servers: HecServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function hec(options: Parameters<typeof startHecServer>[0] = { token: TOKEN }): Promise<HecServer> {
  const s = await startHecServer(options);
  servers.push(s);
  return s;
}

function writeConfig(work: string, destination: Record<string, unknown>, pipeline?: string): string {
  return writeDirectoryTenantConfig(work, [{ type: 'splunk-hec', tokenEnv: TOKEN_ENV, ...destination }], pipeline);
}

const run = (config: string, env: Record<string, string> = { [TOKEN_ENV]: TOKEN }): Promise<CliResult> => runCli(['run', '--once', '--config', config], { env });

function deadLetters(work: string): Array<Record<string, unknown>> {
  const dir = join(work, 'state', 'acme', 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The secret appears in no output line and no state file (dead letters, checkpoints). */
function expectSecretNowhere(secret: string, work: string, ...results: CliResult[]): void {
  for (const r of results) {
    expect(r.stdout.includes(secret), 'secret in stdout').toBe(false);
    expect(r.stderr.includes(secret), 'secret in stderr').toBe(false);
  }
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
  for (const f of walk(join(work, 'state'))) expect(readFileSync(f, 'utf8').includes(secret), `secret in ${f}`).toBe(false);
}

const seqOf = (e: HecEvent): number => ((e.value.event as { attributes: Record<string, unknown> }).attributes['tableau.test_seq'] as number);

function countBySeq(events: HecEvent[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const e of events) m.set(seqOf(e), (m.get(seqOf(e)) ?? 0) + 1);
  return m;
}

/** eventTime "2026-11-29T05:07:07.123456789Z" → "1795928827.123456789" (trailing zeros dropped). */
function expectedTimeLiteral(eventTime: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(eventTime)!;
  const seconds = Date.parse(`${m[1]}Z`) / 1000;
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac ? `${seconds}.${frac}` : String(seconds);
}

describe('splunk-hec encoder', () => {
  const record = (ns: bigint, attrs: Record<string, unknown> = {}): MappedLogRecord => ({
    timeUnixNano: ns,
    observedTimeUnixNano: 0n,
    severityNumber: 13,
    severityText: 'WARN',
    eventName: 'tableau.login',
    eventType: 'login',
    body: 'user signed in',
    attributes: { 'user.id': 'u1', 'tableau.count': 3, 'tableau.flag': true, 'tableau.obj': { a: [1, 'x'] }, 'tableau.list': ['a', 2], ...attrs } as MappedLogRecord['attributes'],
    resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 'S1' } },
  });
  const spec: SplunkHecEncoding = { kind: 'splunk-hec', sourcetype: 'tableau:activity', index: 'sec', host: 'h', source: 'src', fields: ['user.id', 'tableau.count', 'tableau.flag', 'tableau.obj', 'tableau.list', 'tableau.site_luid', 'absent'], cimFields: false, maxRequestBytes: 4096, compression: 'none' };

  it('writes time from the bigint: up to nine decimals, no float rounding', () => {
    expect(epochSecondsLiteral(1718561027203309000n)).toBe('1718561027.203309');
    expect(epochSecondsLiteral(1718561027123456789n)).toBe('1718561027.123456789');
    expect(epochSecondsLiteral(1718561027000000001n)).toBe('1718561027.000000001');
    expect(epochSecondsLiteral(1718561027000000000n)).toBe('1718561027');
    // a double cannot hold this: 1718561027.123456789 → 1718561027.1234567 as a float
    expect(String(Number('1718561027.123456789'))).not.toBe('1718561027.123456789');
  });

  it('concatenated event objects with event, fields (strings / string arrays only) and a size split', () => {
    const records = Array.from({ length: 40 }, (_, i) => record(1718561027123456789n + BigInt(i)));
    const { bodies } = createSplunkHecEncoder(spec).encode(records);
    expect(bodies.length).toBeGreaterThan(1);
    const objects = bodies.flatMap((b) => {
      expect(b.byteLength).toBeLessThanOrEqual(spec.maxRequestBytes);
      expect(b.byteOffset === 0 && b.byteLength === b.buffer.byteLength).toBe(true);
      return splitConcatenatedJson(new TextDecoder().decode(b));
    });
    expect(objects.length).toBe(40);
    expect(objects[1]!.timeLiteral).toBe('1718561027.12345679');
    const first = JSON.parse(objects[0]!.json);
    expect(Object.keys(first)).toEqual(['time', 'host', 'source', 'sourcetype', 'index', 'event', 'fields']);
    expect(first.event).toEqual({
      event_name: 'tableau.login',
      severity: 'WARN',
      severity_number: 13,
      body: 'user signed in',
      attributes: { 'user.id': 'u1', 'tableau.count': 3, 'tableau.flag': true, 'tableau.obj': { a: [1, 'x'] }, 'tableau.list': ['a', 2] },
      resource: { 'service.name': 'tableau-cloud', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 'S1' },
    });
    expect(first.fields).toEqual({ 'user.id': 'u1', 'tableau.count': '3', 'tableau.flag': 'true', 'tableau.obj': '{"a":[1,"x"]}', 'tableau.list': ['a', '2'], 'tableau.site_luid': 'S1' });
  });

  it('cimFields: Authentication fields for logins, Change fields for permission/user/group changes, the common ones for the rest; off by default', () => {
    const fieldsOf = (r: MappedLogRecord, cim: boolean): Record<string, unknown> | undefined =>
      JSON.parse(new TextDecoder().decode(createSplunkHecEncoder({ ...spec, fields: ['user.id'], cimFields: cim }).encode([r]).bodies[0]).trim()).fields;
    const login = record(1n, { 'tableau.event.category': 'authentication', 'tableau.event.action': 'login', 'tableau.status': 'failure', 'client.address': '198.51.100.7', 'user.name': 'ann' });
    expect(fieldsOf(login, true)).toEqual({ app: 'tableau', vendor_product: 'Tableau', signature: 'tableau.login', user: 'ann', src: '198.51.100.7', action: 'failure', 'user.id': 'u1' });
    expect(fieldsOf(login, false)).toEqual({ 'user.id': 'u1' });
    const grant = record(2n, { 'tableau.event.category': 'permission', 'tableau.event.action': 'create', 'tableau.event_outcome': 'success', 'tableau.target.id': 'wb-1', 'tableau.target.name': 'Sales' });
    expect(cimFields(grant)).toEqual({ app: 'tableau', vendor_product: 'Tableau', signature: 'tableau.login', user: 'u1', action: 'acl_modified', status: 'success', change_type: 'AAA', object_category: 'permission', object: 'Sales', object_id: 'wb-1' });
    const removed = record(3n, { 'tableau.event.category': 'user_management', 'tableau.event.action': 'delete', 'error.type': 'internal_error', 'tableau.event_outcome': 'internal_error', 'tableau.target.id': 'u9' });
    expect(cimFields(removed)).toMatchObject({ action: 'deleted', status: 'failure', object_category: 'user', object: 'u9', object_id: 'u9' });
    expect(cimFields(record(4n, { 'tableau.event.category': 'group_management', 'tableau.event.action': 'create' }))).toMatchObject({ action: 'created', object_category: 'group' });
    expect(cimFields(record(4n, { 'tableau.event.category': 'group_management', 'tableau.event.action': 'add' })).status).toBeUndefined();
    const view = cimFields(record(5n, { 'tableau.event.category': 'data_access', 'tableau.event_outcome': 'unauthorized' }));
    expect(view).toEqual({ app: 'tableau', vendor_product: 'Tableau', signature: 'tableau.login', user: 'u1', status: 'failure' });
    expect(splunkHecDestinationConfigSchema.parse({ type: 'splunk-hec', url: 'https://s', tokenEnv: 'T' }).cimFields).toBe(false);
  });

  it('gzip bodies; an event larger than maxRequestBytes goes alone', () => {
    const big = record(1n, { 'tableau.blob': 'x'.repeat(10_000) });
    const { bodies } = createSplunkHecEncoder({ ...spec, compression: 'gzip' }).encode([record(1n), big, record(2n)]);
    expect(bodies.length).toBe(3);
    expect(bodies.every((b) => b[0] === 0x1f && b[1] === 0x8b)).toBe(true);
  });

  it('config: strict, defaults, URLs', () => {
    const c = splunkHecDestinationConfigSchema.parse({ type: 'splunk-hec', url: 'https://splunk:8088', tokenEnv: 'T' });
    expect(c).toMatchObject({ sourcetype: 'tableau:activity', maxRequestBytes: 1_000_000, compression: 'gzip', insecureSkipVerify: false, fields: [] });
    expect(splunkHecDestinationConfigSchema.safeParse({ type: 'splunk-hec', url: 'https://s', tokenEnv: 'T', token: 'inline' }).success).toBe(false);
    expect(hecEventUrl('https://splunk:8088').href).toBe('https://splunk:8088/services/collector/event');
    expect(hecEventUrl('https://splunk:8088/services/collector/').href).toBe('https://splunk:8088/services/collector/event');
    expect(hecAckUrl(hecEventUrl('https://splunk:8088/services/collector/event')).href).toBe('https://splunk:8088/services/collector/ack');
  });
});

describe('run --once → splunk-hec', () => {
  it('cimFields: true puts the CIM fields in each event\'s indexed fields (Authentication for logins, Change for group changes); without it none', async () => {
    const server = await hec();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 40);
    const res = await run(writeConfig(work, { url: server.url, cimFields: true }));
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.events.length).toBe(tree.records.length);
    const bySeq = new Map(server.events.map((e) => [seqOf(e), e.value.fields as Record<string, unknown>]));
    const seen = new Set<string>();
    for (const { key, record } of tree.records) {
      const type = /eventType=([^/]+)/.exec(key)![1]!;
      const f = bySeq.get(record.testSeq as number)!;
      const outcome = record.eventOutcome === 'unauthorized' || record.status === 'failure' ? 'failure' : 'success';
      seen.add(`${type}:${outcome}`);
      const common = { app: 'tableau', vendor_product: 'Tableau', signature: `tableau.${type}`, user: record.actorUserLuid };
      if (type === 'login_authentication') expect(f).toEqual({ ...common, action: outcome });
      else if (type === 'add_delete_user_to_group') expect(f).toEqual({ ...common, action: 'modified', status: outcome, change_type: 'AAA', object_category: 'group' });
      else if (type === 'vizql_http_request') expect(f).toEqual({ ...common, src: record.ipAddress, status: outcome });
      else expect(f).toEqual({ ...common, status: outcome });
    }
    expect(seen.has('login_authentication:failure') && seen.has('hist_access_view:failure')).toBe(true);

    const plain = await hec();
    const work2 = tempDir();
    writeFixtureTree(join(work2, 'logs'), 4, 10);
    const res2 = await run(writeConfig(work2, { url: plain.url }));
    expect(res2.code, res2.stderr).toBe(0);
    expect(plain.events.length).toBe(40);
    for (const e of plain.events) expect('fields' in e.value).toBe(false);
  });

  it('every record once, as HEC events with fields, precise time, gzip, Authorization and requests under maxRequestBytes', async () => {
    const server = await hec();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 12, 50);
    const config = writeConfig(work, { url: server.url, index: 'tableau', source: 'tableau-activity-otel', host: 'collector-1', fields: ['user.id', 'tableau.site_luid', 'tableau.actor_user_id', 'client.address'], maxRequestBytes: 20_000 }, 'batchSize: 200, maxInFlightBatches: 2');
    const res = await run(config);
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.events.length).toBe(tree.records.length);
    const counts = countBySeq(server.events);
    for (const { record } of tree.records) expect(counts.get(record.testSeq as number), `seq ${String(record.testSeq)}`).toBe(1);

    const bySeq = new Map(server.events.map((e) => [seqOf(e), e]));
    for (const { record } of tree.records as FixtureRecord[]) {
      const e = bySeq.get(record.testSeq as number)!;
      const v = e.value as Record<string, unknown>;
      expect(Object.keys(v).sort()).toEqual(['event', 'fields', 'host', 'index', 'source', 'sourcetype', 'time']);
      expect(v).toMatchObject({ host: 'collector-1', source: 'tableau-activity-otel', sourcetype: 'tableau:activity', index: 'tableau' });
      expect(e.timeLiteral).toBe(expectedTimeLiteral(record.eventTime as string));
      const ev = v.event as Record<string, unknown>;
      expect(Object.keys(ev).sort()).toEqual(['attributes', 'body', 'event_name', 'resource', 'severity', 'severity_number']);
      expect(ev.event_name).toMatch(/^tableau\./);
      const failed = record.eventOutcome === 'unauthorized' || record.status === 'failure';
      expect(ev.severity_number).toBe(failed ? 13 : 9);
      expect(ev.severity).toBe(failed ? 'WARN' : 'INFO');
      const attrs = ev.attributes as Record<string, unknown>;
      expect(attrs['user.id']).toBe(record.actorUserLuid);
      expect(attrs['tableau.actor_user_id']).toBe(record.actorUserId);
      expect((ev.resource as Record<string, unknown>)['tableau_activity_otel.tenant']).toBe('acme');
      const fields = v.fields as Record<string, unknown>;
      expect(fields['user.id']).toBe(record.actorUserLuid);
      expect(fields['tableau.site_luid']).toBe(SITE);
      expect(fields['tableau.actor_user_id']).toBe(String(record.actorUserId));
      expect(fields['client.address']).toBe(record.ipAddress);
    }
    const posts = server.requests.filter((r) => r.path === '/services/collector/event');
    expect(posts.length).toBeGreaterThan(tree.records.length / 40); // split by size, not one per batch
    for (const r of posts) {
      expect(r.status).toBe(200);
      expect(r.headers.authorization).toBe(`Splunk ${TOKEN}`);
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.headers['x-splunk-request-channel']).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.rawBytes).toBeLessThanOrEqual(20_000);
      expect(r.wireBytes).toBeLessThan(r.rawBytes);
    }
    expectSecretNowhere(TOKEN, work, res);

    const again = await run(config);
    expect(again.code, again.stderr).toBe(0);
    expect(server.events.length).toBe(tree.records.length);
  });

  it('429 (Retry-After) and 503 are retried and arrive once; a 400 blaming one event dead-letters that event only, with HEC text; the token is never shown', async () => {
    const server = await hec();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 3, 100);
    // small bodies: a batch of 100 goes in several, and only the rejected body is split (no event of the others sent twice)
    const config = writeConfig(work, { url: server.url, compression: 'none', maxRequestBytes: 8192 });
    server.respondNext({ status: 429, headers: { 'retry-after': '1' }, body: JSON.stringify({ text: 'Too many requests', code: 9 }) }, { status: 503, body: JSON.stringify({ text: 'Server is busy', code: 9 }) });
    // HEC refuses any request holding event 150 (400, code 6, invalid-event-number)
    server.rejectEvents((e) => (e.event as { attributes: Record<string, unknown> }).attributes['tableau.test_seq'] === 150);
    const started = Date.now();
    const res = await run(config);
    expect(res.code, res.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000); // Retry-After honoured
    const counts = countBySeq(server.events);
    expect(server.events.length).toBe(299);
    expect(counts.has(150)).toBe(false);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(server.requests.filter((r) => r.status === 200).length).toBeGreaterThan(6); // several bodies per batch
    const batches = deadLetters(work).filter((l) => l.kind === 'batch');
    expect(batches).toHaveLength(1);
    const batch = batches[0]!;
    expect(batch.status).toBe(400);
    expect(batch.destination).toBe('splunk-hec');
    expect(batch.reason).toMatch(/HTTP 400: Invalid data format \(HEC code 6\)/);
    expect(batch.response).toMatch(/invalid-event-number/);
    const bad = tree.records.find((r) => r.record.testSeq === 150)!;
    expect(batch.records).toEqual([{ object: bad.key, uidPrefix: expect.any(String), line: bad.line, raw: JSON.stringify(bad.record) }]);
    expect(batch.lines).toEqual([JSON.stringify(bad.record)]);
    expect(res.stderr).toMatch(/retrying/);
    expect(res.stderr).toMatch(/rejected/);
    expectSecretNowhere(TOKEN, work, res);
  });

  it('a wrong token holds the pipeline (401 retried, nothing dead-lettered, exit 1 naming destination and status); once the server takes the token everything arrives', async () => {
    const server = await hec();
    const wrong = 'wrong-token-0b9e4d-NOT-FOR-LOGS';
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 10);
    const config = writeConfig(work, { url: server.url });
    const res = await runCli(['run', '--once', '--retry-for', '2s', '--config', config], { env: { [TOKEN_ENV]: wrong } });
    expect(res.code).toBe(1);
    expect(server.requests.filter((r) => r.status === 401).length).toBeGreaterThan(1); // retried, not given up at once
    expect(deadLetters(work)).toEqual([]);
    expect(server.events).toHaveLength(0);
    const held = res.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.status === 401 && l.destination === 'splunk-hec');
    expect(held, res.stderr).toBeDefined();
    expect(String(held!.reason)).toMatch(/HTTP 401: Invalid token \(HEC code 4\)/);
    expectSecretNowhere(wrong, work, res);

    // the token is rotated on the server side to the one we send: the held records are delivered
    server.setToken(wrong);
    const again = await runCli(['run', '--once', '--config', config], { env: { [TOKEN_ENV]: wrong } });
    expect(again.code, again.stderr).toBe(0);
    expect(server.events).toHaveLength(10);
    expect(deadLetters(work)).toEqual([]);
  });

  it('a missing token variable is a clear error naming the variable', async () => {
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 1);
    const res = await run(writeConfig(work, { url: 'http://127.0.0.1:9' }), {});
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(new RegExp(`${TOKEN_ENV} is not set`));
  });

  it('probe: an empty POST tells a working token (HEC "No data") from a wrong one, and indexes nothing', async () => {
    const server = await hec();
    const make = (token: string): SplunkHecDestination => new SplunkHecDestination(splunkHecDestinationConfigSchema.parse({ type: 'splunk-hec', url: server.url, tokenEnv: 'T' }), { baseDir: '.', env: { T: token } });
    const good = make(TOKEN);
    const bad = make('not-the-token');
    expect(await good.probe(new AbortController().signal)).toEqual({ kind: 'done' });
    expect(await bad.probe(new AbortController().signal)).toMatchObject({ kind: 'hold', status: 401, reason: expect.stringMatching(/^HTTP 401: Invalid token \(HEC code 4\)/) });
    await Promise.all([good.shutdown(), bad.shutdown()]);
    expect(server.events.length).toBe(0);
  });

  it('indexer acknowledgement: a batch is delivered once its ackId is acknowledged; an ack that never comes is retried', async () => {
    const server = await hec({ token: TOKEN, ack: { pollsUntilAcked: 2 } });
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 3, 100);
    const config = writeConfig(work, { url: server.url, ack: { enabled: true, pollInterval: '100ms', timeout: '10s' } });
    const res = await run(config);
    expect(res.code, res.stderr).toBe(0);
    expect(server.events.length).toBe(tree.records.length);
    const posts = server.requests.filter((r) => r.path === '/services/collector/event');
    const channels = new Set(posts.map((r) => r.headers['x-splunk-request-channel']));
    expect(channels.size).toBe(1);
    for (const r of posts) expect(server.acked.has(r.ackId!)).toBe(true);
    expect(server.ackPolls.length).toBeGreaterThan(0);
    expect(server.ackPolls.every((p) => channels.has(p.channel))).toBe(true);

    // ackId 0 is never acknowledged: after ack.timeout the body is sent again (at-least-once)
    const server2 = await hec({ token: TOKEN, ack: { neverAck: (id) => id === 0 } });
    const work2 = tempDir();
    const tree2 = writeFixtureTree(join(work2, 'logs'), 2, 50);
    const res2 = await run(writeConfig(work2, { url: server2.url, ack: { enabled: true, pollInterval: '100ms', timeout: '500ms' } }));
    expect(res2.code, res2.stderr).toBe(0);
    expect(res2.stderr).toMatch(/acknowledgement of ackId 0 not received within 500 ms/);
    const counts = countBySeq(server2.events);
    for (const { record } of tree2.records) expect(counts.get(record.testSeq as number)).toBeGreaterThanOrEqual(1);
    const firstBody = new Set(server2.events.filter((e) => e.request === server2.requests.findIndex((r) => r.ackId === 0)).map(seqOf));
    for (const [seq, n] of counts) expect(n).toBe(firstBody.has(seq) ? 2 : 1);
  });
});

describe.skipIf(!hasOpenssl())('splunk-hec over TLS (certificates made with the openssl CLI)', () => {
  it('an unknown CA is rejected by default (nothing accepted, clear error); caFile and insecureSkipVerify make it work', async () => {
    const certs = makeTestCertificates(tempDir('tao-certs-'));
    const server = await hec({ token: TOKEN, tls: { key: certs.key, cert: certs.cert } });
    expect(server.url).toMatch(/^https:/);

    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 2, 20);
    const rejected = await runCli(['run', '--once', '--retry-for', '1s', '--config', writeConfig(work, { url: server.url })], { env: { [TOKEN_ENV]: TOKEN } });
    expect(rejected.code).toBe(1);
    expect(server.events.length).toBe(0);
    expect(server.requests.length).toBe(0); // the handshake failed: no request reached the server
    expect(rejected.stderr).toMatch(/TLS error talking to https:\/\/127\.0\.0\.1:\d+: .*(self[- ]signed|unable to (get|verify))/i);
    expect(rejected.stderr).toMatch(/unreachable|unavailable/);

    const withCa = await run(writeConfig(work, { url: server.url, caFile: certs.caFile }));
    expect(withCa.code, withCa.stderr).toBe(0);
    expect(server.events.length).toBe(tree.records.length);

    const work2 = tempDir();
    mkdirSync(join(work2, 'logs'));
    writeFixtureTree(join(work2, 'logs'), 1, 5);
    const skip = await run(writeConfig(work2, { url: server.url, insecureSkipVerify: true }));
    expect(skip.code, skip.stderr).toBe(0);
    expect(server.events.length).toBe(tree.records.length + 5);
    expectSecretNowhere(TOKEN, work, rejected, withCa);
  });
});
