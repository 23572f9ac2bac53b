/**
 * `type: google-secops`: the encoder (ImportLogsRequest bodies, split to the API's limits), and
 * the destination built through the registry against the ingestion stand-in
 * (test/support/secops-server.ts) with google-auth-library's real credential paths:
 * - a service-account key with self-signed JWTs (no token endpoint): the stand-in checks the
 *   JWT's RS256 signature with the key's public half, its scope, iss/sub, expiry;
 * - workload identity federation (external_account): the library exchanges the subject token at
 *   the STS stand-in (its `token_url`), the ingestion checks the token STS issued;
 * tokens refreshed before they expire, a 401 gets one fresh token then holds, a token endpoint's
 * refusal holds, 429/503 retried, 400/413 content refusals; no secret in any reason.
 */
import { describe, it, expect, beforeAll, afterEach } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDestination, destinationConfigSchema, loadDestinationTypes } from '../src/export/destination-registry.js';
import type { Destination, SendOutcome } from '../src/export/destination.js';
import { createEncoder } from '../src/export/encodings.js';
import { createGoogleSecOpsEncoder, rfc3339Nanos, type GoogleSecOpsEncoding } from '../src/export/google-secops/encoder.js';
import { googleSecOpsDestinationConfigSchema, secOpsImportUrl } from '../src/export/google-secops/config.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import { startSecOpsServer, selfSignedJwtVerifier, decodeJwt, type SecOpsServer } from './support/secops-server.js';
import { startStsServer, type StsServer } from './support/google-sts-server.js';
import { CHRONICLE_SCOPE, makeServiceAccountKey, pemBodyLines, TEST_SA_EMAIL, TEST_SA_KEY_ID, WIF_AUDIENCE, writeWorkloadIdentityConfig, type ServiceAccountKey } from './support/google-credentials.js';
import { tempDir } from './support/activity-fixtures.js';
import { waitFor } from './support/daemon-process.js';

const INSTANCE = '7f1e2d3c-0000-4000-8000-00000000abcd';
const SCOPE_INFO = { name: 'tableau-activity-otel', version: 'test' };

const record = (seq: number, attrs: Record<string, unknown> = {}, over: Partial<MappedLogRecord> = {}): MappedLogRecord => ({
  timeUnixNano: 1795928827123456789n + BigInt(seq),
  observedTimeUnixNano: 1795928900000000000n,
  severityNumber: 9,
  severityText: 'INFO',
  eventName: 'tableau.login',
  eventType: 'login',
  body: 'user signed in',
  attributes: { 'user.id': `u${seq}`, 'client.address': '10.1.2.3', 'tableau.test_seq': seq, 'log.record.uid': `uid-${seq}`, ...attrs } as MappedLogRecord['attributes'],
  resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 'acme', 'tableau.site_luid': 'S1' } },
  ...over,
});

interface Body {
  inlineSource: { logs: Array<{ data: string; logEntryTime: string; collectionTime: string; environmentNamespace?: string; labels?: Record<string, { value: string }> }>; forwarder?: string };
}
const parseBody = (b: Uint8Array, gzip = false): Body => JSON.parse(Buffer.from(gzip ? gunzipSync(b) : b).toString('utf8')) as Body;
const dataOf = (l: { data: string }): Record<string, unknown> => JSON.parse(Buffer.from(l.data, 'base64').toString('utf8')) as Record<string, unknown>;

describe('google-secops encoder', () => {
  const spec: GoogleSecOpsEncoding = { kind: 'google-secops', namespace: 'tableau-prod', labels: { env: 'prod', team: 'secops' }, forwarder: 'projects/p/locations/us/instances/i/forwarders/f1', maxLogs: 1000, maxRequestBytes: 4_000_000, compression: 'none' };

  it('one Log per record: base64 JSON of the mapped record with its stable names, event time and collection time at ns precision, namespace, labels, forwarder', () => {
    const out = createGoogleSecOpsEncoder(spec).encode([record(1, { 'error.type': 'unauthorized', big: 12345678901234567890n })]);
    expect(out.bodies).toHaveLength(1);
    expect(out.counts).toEqual([1]);
    const body = parseBody(out.bodies[0]!);
    expect(body.inlineSource.forwarder).toBe(spec.forwarder);
    const [log] = body.inlineSource.logs;
    expect(log!.logEntryTime).toBe('2026-11-29T05:07:07.123456790Z');
    expect(log!.collectionTime).toBe('2026-11-29T05:08:20.000000000Z');
    expect(log!.environmentNamespace).toBe('tableau-prod');
    expect(log!.labels).toEqual({ env: { value: 'prod' }, team: { value: 'secops' } });
    const text = Buffer.from(log!.data, 'base64').toString('utf8');
    // a bigint keeps its digits
    expect(text).toContain('"big":12345678901234567890');
    const data = dataOf(log!);
    expect(data).toMatchObject({
      time: '2026-11-29T05:07:07.123456790Z',
      event_name: 'tableau.login',
      event_type: 'login',
      severity_text: 'INFO',
      severity_number: 9,
      outcome: 'failure',
      body: 'user signed in',
      resource: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 'acme', 'tableau.site_luid': 'S1' },
    });
    expect((data.attributes as Record<string, unknown>)['user.id']).toBe('u1');
    expect((data.attributes as Record<string, unknown>)['client.address']).toBe('10.1.2.3');
    expect((data.attributes as Record<string, unknown>)['log.record.uid']).toBe('uid-1');
  });

  it('collectionTime is never before logEntryTime (an event stamped in the future); no namespace, labels or forwarder unless configured', () => {
    const bare: GoogleSecOpsEncoding = { kind: 'google-secops', labels: {}, maxLogs: 1000, maxRequestBytes: 4_000_000, compression: 'gzip' };
    const out = createGoogleSecOpsEncoder(bare).encode([record(2, {}, { observedTimeUnixNano: 1795928800000000000n })]);
    const body = parseBody(out.bodies[0]!, true);
    expect(Object.keys(body.inlineSource)).toEqual(['logs']);
    const [log] = body.inlineSource.logs;
    expect(Object.keys(log!).sort()).toEqual(['collectionTime', 'data', 'logEntryTime']);
    expect(log!.collectionTime).toBe(log!.logEntryTime);
    expect(rfc3339Nanos(0n)).toBe('1970-01-01T00:00:00.000000000Z');
    expect(rfc3339Nanos(1n)).toBe('1970-01-01T00:00:00.000000001Z');
  });

  it('splits to at most maxLogs logs and maxRequestBytes bytes per body, records in order', () => {
    const records = Array.from({ length: 2500 }, (_, i) => record(i));
    const byCount = createGoogleSecOpsEncoder(spec).encode(records);
    expect(byCount.counts).toEqual([1000, 1000, 500]);
    const small = { ...spec, maxRequestBytes: 50_000 };
    const bySize = createGoogleSecOpsEncoder(small).encode(records.map((r) => ({ ...r, body: 'x'.repeat(2_000) })));
    expect(bySize.bodies.length).toBeGreaterThan(50);
    const seqs: number[] = [];
    bySize.bodies.forEach((b, i) => {
      expect(b.byteLength).toBeLessThanOrEqual(50_000);
      const logs = parseBody(b).inlineSource.logs;
      expect(logs.length).toBe(bySize.counts![i]);
      for (const l of logs) seqs.push((dataOf(l).attributes as Record<string, number>)['tableau.test_seq']!);
    });
    expect(seqs).toEqual(records.map((_, i) => i));
    // a log too big for any request goes alone (SecOps refuses it; the pipeline dead-letters it), not dropped
    const huge = createGoogleSecOpsEncoder(small).encode([record(1), { ...record(2), body: 'y'.repeat(60_000) }, record(3)]);
    expect(huge.counts).toEqual([1, 1, 1]);
  });

  it('config: strict, required instance coordinates, one credential source, the regional endpoint', () => {
    const base = { type: 'google-secops', project: 'my-proj', location: 'eu', instance: INSTANCE, logType: 'TABLEAU_ACTIVITY' };
    const c = googleSecOpsDestinationConfigSchema.parse(base);
    expect(c).toMatchObject({ apiVersion: 'v1beta', compression: 'none', selfSignedJwt: false, labels: {}, maxRequestBytes: 4_000_000 });
    expect(secOpsImportUrl(c).toString()).toBe(`https://chronicle.eu.rep.googleapis.com/v1beta/projects/my-proj/locations/eu/instances/${INSTANCE}/logTypes/TABLEAU_ACTIVITY/logs:import`);
    expect(secOpsImportUrl({ ...c, endpoint: 'https://proxy.example/chronicle/', apiVersion: 'v1alpha' }).toString()).toBe(`https://proxy.example/chronicle/v1alpha/projects/my-proj/locations/eu/instances/${INSTANCE}/logTypes/TABLEAU_ACTIVITY/logs:import`);
    expect(googleSecOpsDestinationConfigSchema.safeParse({ ...base, logType: 'tableau' }).success).toBe(false);
    expect(googleSecOpsDestinationConfigSchema.safeParse({ ...base, extra: 1 }).success).toBe(false);
    const both = googleSecOpsDestinationConfigSchema.safeParse({ ...base, credentialsFile: 'k.json', accessTokenEnv: 'T' });
    expect(both.success).toBe(false);
    expect(JSON.stringify(both.error?.issues)).toMatch(/exclude each other/);
    expect(googleSecOpsDestinationConfigSchema.safeParse({ ...base, labels: { 'bad key!': 'x' } }).success).toBe(false);
    expect(googleSecOpsDestinationConfigSchema.safeParse({ ...base, maxRequestBytes: 5_000_000 }).success).toBe(false);
  });
});

describe('google-secops destination against the ingestion stand-in', () => {
  let key: ServiceAccountKey;
  const servers: Array<{ close(): Promise<void> }> = [];
  const built: Destination[] = [];
  const signal = new AbortController().signal;

  beforeAll(async () => {
    key = makeServiceAccountKey();
    await loadDestinationTypes([{ type: 'google-secops' }]);
  });
  afterEach(async () => {
    await Promise.all(built.splice(0).map((d) => d.shutdown()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  const jwtVerifier = (): ReturnType<typeof selfSignedJwtVerifier> => selfSignedJwtVerifier({ publicKeyPem: key.publicKeyPem, email: TEST_SA_EMAIL, keyId: TEST_SA_KEY_ID, scope: CHRONICLE_SCOPE });

  async function secops(verify = jwtVerifier()): Promise<SecOpsServer> {
    const s = await startSecOpsServer({ verify });
    servers.push(s);
    return s;
  }

  function build(url: string, extra: Record<string, unknown>, env: Record<string, string> = {}, dir = tempDir()): Destination {
    const config = destinationConfigSchema.parse({ type: 'google-secops', endpoint: url, project: 'test-project', location: 'us', instance: INSTANCE, logType: 'TABLEAU_ACTIVITY', ...extra });
    const d = createDestination(config, { baseDir: dir, tenantId: 'acme', env });
    built.push(d);
    return d;
  }

  const bodyFor = (d: Destination, records = [record(1), record(2), record(3)]): Uint8Array => createEncoder(d.encoding, SCOPE_INFO).encode(records).bodies[0]!;

  function textsOf(o: SendOutcome): string[] {
    return o.kind === 'done' ? [] : [o.reason, ...(o.kind === 'rejected' && o.response !== undefined ? [o.response] : [])];
  }

  it('service-account key, self-signed JWT: the token is signed by the key (checked with its public half), carries the Chronicle scope and reaches the ingestion only', async () => {
    const server = await secops();
    const dir = tempDir();
    writeFileSync(join(dir, 'sa.json'), key.text);
    const d = build(server.url, { credentialsFile: 'sa.json', selfSignedJwt: true, namespace: 'tableau', labels: { env: 'test' } }, {}, dir);
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(server.problems).toEqual([]);
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.status).toBe(200);
    expect(req.path).toBe(`/v1beta/projects/test-project/locations/us/instances/${INSTANCE}/logTypes/TABLEAU_ACTIVITY/logs:import`);
    const jwt = decodeJwt(req.authorization!.slice('Bearer '.length))!;
    expect(jwt.header).toMatchObject({ alg: 'RS256', kid: TEST_SA_KEY_ID });
    expect(jwt.payload).toMatchObject({ iss: TEST_SA_EMAIL, sub: TEST_SA_EMAIL, scope: CHRONICLE_SCOPE });
    expect(server.logs.map((l) => (l.record.attributes as Record<string, unknown>)['user.id'])).toEqual(['u1', 'u2', 'u3']);
    expect(server.logs.every((l) => l.environmentNamespace === 'tableau' && l.labels?.env?.value === 'test' && l.logType === 'TABLEAU_ACTIVITY')).toBe(true);
    // a JWT signed by another key is refused by the stand-in: the check is real
    const other = makeServiceAccountKey();
    const forged = build(server.url, { credentialsEnv: 'SA_JSON', selfSignedJwt: true }, { SA_JSON: other.text });
    const refused = await forged.send(bodyFor(forged), 3, signal);
    expect(refused).toMatchObject({ kind: 'hold', status: 401 });
    expect(server.requests.slice(1).map((r) => r.authProblem)).toEqual(['bad signature', 'bad signature']);
    for (const t of textsOf(refused)) for (const line of pemBodyLines(other.privateKeyPem)) expect(t).not.toContain(line);
  });

  it('a 401 gets one fresh token and one more try at once; a second 401 holds (never dead-letters) and shows no token', async () => {
    const server = await secops();
    const d = build(server.url, { credentialsEnv: 'SA_JSON', selfSignedJwt: true }, { SA_JSON: key.text });
    server.respondNext({ status: 401, body: { error: { code: 401, message: 'token expired', status: 'UNAUTHENTICATED' } } });
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(server.requests.map((r) => r.status)).toEqual([401, 200]);
    expect(server.logs).toHaveLength(3);
    // refused for good: two requests per send, then a hold
    server.setVerifier(() => 'revoked');
    const held = await d.send(bodyFor(d), 3, signal);
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect(server.requests.map((r) => r.status)).toEqual([401, 200, 401, 401]);
    const token = server.requests.at(-1)!.authorization!.slice(7);
    for (const t of textsOf(held)) expect(t).not.toContain(token);
  });

  it('workload identity federation: the subject token is exchanged at the STS token_url; tokens are refreshed before they expire; a revoked token gets one fresh token', async () => {
    const subject = 'eyJhbGciOiJSUzI1NiJ9.workload-oidc-token-SUBJECT-123.sig';
    const sts = await startStsServer({ subjectToken: subject, audience: WIF_AUDIENCE, expiresIn: 3600 });
    servers.push(sts);
    const server = await secops((t) => (sts.isValid(t) ? undefined : 'not issued by STS, expired or revoked'));
    const dir = tempDir();
    const { configFile } = writeWorkloadIdentityConfig(dir, sts.tokenUrl, subject);
    const d = build(server.url, { credentialsFile: configFile }, {}, dir);

    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(sts.exchanges).toHaveLength(1);
    expect(sts.exchanges[0]).toMatchObject({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: subject, audience: WIF_AUDIENCE, scope: CHRONICLE_SCOPE });
    expect(server.requests[0]!.authorization).toBe(`Bearer ${sts.issued[0]!.token}`);
    // cached while valid
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(sts.exchanges).toHaveLength(1);

    // revoked before its expiry: 401, one fresh token, delivered
    sts.revoke(sts.issued[0]!.token);
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(sts.issued).toHaveLength(2);
    expect(server.requests.slice(-2).map((r) => [r.status, r.authorization])).toEqual([
      [401, `Bearer ${sts.issued[0]!.token}`],
      [200, `Bearer ${sts.issued[1]!.token}`],
    ]);

    // a short-lived token (5 min + 2 s: google-auth-library refreshes 5 minutes ahead) is replaced before it expires
    sts.setExpiresIn(302);
    sts.revoke(sts.issued[1]!.token);
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    const short = sts.issued.at(-1)!;
    await waitFor('the short token to reach its refresh time', () => Date.now() > short.issuedAt + 2_500, 20_000);
    const before = server.requests.length;
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    const after = server.requests.slice(before);
    // no 401 needed: a new token, asked for ahead of the old one's expiry, while the old one was still valid
    expect(after.map((r) => r.status)).toEqual([200]);
    expect(after[0]!.authorization).not.toBe(`Bearer ${short.token}`);
    expect(sts.isValid(short.token)).toBe(true);
    expect(server.problems).toEqual([]);
  });

  it("the token endpoint's refusal holds (nothing sent to the ingestion, no token or subject token in the reason); once the credential is good again the batch goes", async () => {
    const subject = 'workload-subject-token-SECRET-456';
    const sts = await startStsServer({ subjectToken: 'another-token', audience: WIF_AUDIENCE });
    servers.push(sts);
    const server = await secops((t) => (sts.isValid(t) ? undefined : 'not issued'));
    const dir = tempDir();
    const { configFile } = writeWorkloadIdentityConfig(dir, sts.tokenUrl, subject);
    const d = build(server.url, { credentialsFile: configFile }, {}, dir);
    const held = await d.send(bodyFor(d), 3, signal);
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect((held as { reason: string }).reason).toMatch(/cannot get a Google access token.*invalid_grant/);
    expect(server.requests).toHaveLength(0);
    for (const t of textsOf(held)) expect(t).not.toContain(subject);
    sts.setSubjectToken(subject);
    expect(await d.send(bodyFor(d), 3, signal)).toEqual({ kind: 'done' });
    expect(server.logs).toHaveLength(3);
  });

  it('a token endpoint that cannot be reached is an outage (retry), not a refusal', async () => {
    const server = await secops();
    const sts = await startStsServer({ subjectToken: 's', audience: WIF_AUDIENCE });
    const url = sts.tokenUrl;
    await sts.close();
    const dir = tempDir();
    const { configFile } = writeWorkloadIdentityConfig(dir, url, 's');
    const d = build(server.url, { credentialsFile: configFile }, {}, dir);
    const o = await d.send(bodyFor(d), 3, signal);
    expect(o.kind).toBe('retry');
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it("429 with Retry-After and 503 are retries; 413 and 400 INVALID_ARGUMENT blame the content with Google's message; 403 (no logs.import permission) and a 400 NOT_FOUND / FAILED_PRECONDITION hold", async () => {
    const server = await secops();
    const d = build(server.url, { credentialsEnv: 'SA_JSON', selfSignedJwt: true }, { SA_JSON: key.text });
    const payload = bodyFor(d);
    server.respondNext(
      { status: 429, headers: { 'Retry-After': '3' }, body: { error: { code: 429, message: 'Quota exceeded', status: 'RESOURCE_EXHAUSTED' } } },
      { status: 503, body: { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } } },
      { status: 403, body: { error: { code: 403, message: "Permission 'chronicle.logs.import' denied", status: 'PERMISSION_DENIED' } } },
    );
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'retry', retryAfterMs: 3000, reason: 'HTTP 429: RESOURCE_EXHAUSTED: Quota exceeded' });
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'retry', reason: expect.stringMatching(/^HTTP 503: UNAVAILABLE/) });
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'hold', status: 403 });
    server.setMaxPayloadBytes(100);
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'rejected', status: 413, reason: expect.stringMatching(/^HTTP 413: RESOURCE_EXHAUSTED: request of \d+ bytes exceeds 100/) });
    server.setMaxPayloadBytes(null);
    server.rejectLogs((r) => (r.attributes as Record<string, unknown>)['user.id'] === 'u2');
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'rejected', status: 400, reason: 'HTTP 400: INVALID_ARGUMENT: a log is refused' });
    server.rejectLogs(null);
    // a 400 that blames the target, not the logs (an unknown log type): held, never dead-lettered
    server.respondNext(
      { status: 400, body: { error: { code: 400, message: 'Log type TABLEAU_ACTIVITY not found', status: 'NOT_FOUND' } } },
      { status: 400, body: { error: { code: 400, message: 'instance is not ready', status: 'FAILED_PRECONDITION' } } },
    );
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'hold', status: 400, reason: expect.stringMatching(/^HTTP 400: NOT_FOUND: Log type TABLEAU_ACTIVITY not found \(the project, location, instance or logType is wrong/) });
    expect(await d.send(payload, 3, signal)).toMatchObject({ kind: 'hold', status: 400 });
    expect(server.logs).toHaveLength(0);
  });

  it('bad credentials are config errors naming the option, never the content', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'not-json.json'), `not json ${key.privateKeyPem}`);
    writeFileSync(join(dir, 'wrong-type.json'), JSON.stringify({ type: 'api_key', key: 'k' }));
    const attempt = (extra: Record<string, unknown>, env: Record<string, string> = {}): string => {
      try {
        build('http://127.0.0.1:1', extra, env, dir);
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };
    expect(attempt({ credentialsFile: 'missing.json' })).toMatch(/credentialsFile .*missing\.json: cannot read it \(ENOENT\)/);
    const notJson = attempt({ credentialsFile: 'not-json.json' });
    expect(notJson).toMatch(/not a JSON document/);
    for (const line of pemBodyLines(key.privateKeyPem)) expect(notJson).not.toContain(line);
    expect(attempt({ credentialsFile: 'wrong-type.json' })).toMatch(/not a Google credentials file/);
    expect(attempt({ credentialsEnv: 'NOPE' })).toMatch(/credentialsEnv: environment variable NOPE is not set/);
    expect(attempt({ selfSignedJwt: true })).toMatch(/selfSignedJwt needs a service-account key/);
    const { configFile } = writeWorkloadIdentityConfig(dir, 'http://127.0.0.1:1/v1/token', 's');
    expect(attempt({ credentialsFile: configFile, selfSignedJwt: true })).toMatch(/selfSignedJwt needs a service-account key, credentialsFile .* is external_account/);
  });
});

describe('google-secops security warnings', () => {
  it('an endpoint over plain http to another host is warned about (a bearer token travels in every request); loopback and https are not', async () => {
    const { securityWarnings } = await import('../src/daemon/security-warnings.js');
    const { configSchema } = await import('../src/daemon/config.js');
    const config = (endpoint: string): ReturnType<typeof configSchema.parse> =>
      configSchema.parse({
        tenants: [{ id: 'acme', sources: [{ type: 'directory', path: '/tmp/x' }], destinations: [{ type: 'google-secops', endpoint, project: 'p', location: 'us', instance: INSTANCE, logType: 'TABLEAU_ACTIVITY' }] }],
      });
    const warned = securityWarnings(config('http://chronicle-proxy.internal:8080'), {});
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toMatch(/plain http/);
    expect(warned[0]!.fields).toMatchObject({ tenant: 'acme', destination: 'google-secops', url: 'http://chronicle-proxy.internal:8080' });
    expect(securityWarnings(config('http://127.0.0.1:8080'), {})).toEqual([]);
    expect(securityWarnings(config('https://chronicle.us.rep.googleapis.com'), {})).toEqual([]);
  });
});
