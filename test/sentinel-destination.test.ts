/**
 * `type: sentinel` against local stand-ins on 127.0.0.1: a Microsoft Entra ID token endpoint
 * over TLS with a CA this test makes (test/support/entra-server.ts; @azure/identity takes only
 * an https authority) and the Logs Ingestion API (test/support/logs-ingestion-server.ts), which
 * decodes the gzip JSON rows and takes only tokens the Entra stand-in issued. The destination is
 * built through the registry as the daemon builds it, with the real @azure/identity credentials:
 * client secret (variable and file), workload identity (a federated token file), managed
 * identity (App Service's IDENTITY_ENDPOINT on loopback). No request leaves 127.0.0.1: every
 * host name lookup fails the test (the stand-ins are addressed by IP).
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from 'vitest';
import dns from 'node:dns';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startEntraServer, type EntraServer } from './support/entra-server.js';
import { startIngestionServer, INGESTION_MAX_CALL_BYTES, type IngestionServer } from './support/logs-ingestion-server.js';
import { hasOpenssl, makeTestCertificates, type TestCertificates } from './support/hec-server.js';
import { tempDir } from './support/activity-fixtures.js';
import { waitFor } from './support/daemon-process.js';
import { createDestination, destinationConfigSchema, loadDestinationTypes } from '../src/export/destination-registry.js';
import type { Destination, SendOutcome } from '../src/export/destination.js';
import { createEncoder } from '../src/export/encodings.js';
import { sentinelDestinationConfigSchema, sentinelUploadUrl } from '../src/export/sentinel/config.js';
import { isoNanos } from '../src/export/sentinel/encoder.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const TENANT = '7f3c1a2b-0000-4000-8000-00000000aaaa';
const CLIENT = '0b8e5d11-0000-4000-8000-00000000bbbb';
const SECRET = 'entra-client-SECRET-5f2e9c0d7a41';
const FEDERATED = 'eyJhbGciOiJSUzI1NiJ9.federated-SA-TOKEN-0a1b2c3d.sig';
const IDENTITY_HEADER = 'msi-identity-HEADER-77aa88bb99cc';
const DCR = 'dcr-0123456789abcdef0123456789abcdef';
const STREAM = 'Custom-TableauActivity_CL';
const SCOPE = { name: 'tableau-activity-otel', version: 'test' };
const signal = new AbortController().signal;

function record(seq: number, extra: Partial<MappedLogRecord> = {}): MappedLogRecord {
  return {
    timeUnixNano: 1795928827123456789n + BigInt(seq),
    observedTimeUnixNano: 1795928828000000001n,
    severityNumber: 9,
    severityText: 'INFO',
    eventName: 'tableau.login_authentication',
    eventType: 'login_authentication',
    body: `user ${seq} signed in`,
    attributes: { 'user.id': `u${seq}`, 'user.email': `u${seq}@example.com`, 'client.address': '203.0.113.7', 'tableau.status': 'failure', 'log.record.uid': `uid-${seq}`, 'tableau.test_seq': seq, 'tableau.big': 12345678901234567890n },
    resource: { key: 'r1', attributes: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 'tableau-tenant-1', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 'SITE-1' } },
    ...extra,
  };
}

const lookups: string[] = [];
const realLookup = dns.lookup;
let certs: TestCertificates;
let dir: string;
let entra: EntraServer;
let ingestion: IngestionServer;
const built: Destination[] = [];

beforeAll(async () => {
  // any other host name looked up would be traffic meant to leave 127.0.0.1 (login.microsoftonline.com, IMDS by name…)
  (dns as { lookup: unknown }).lookup = (host: string, ...rest: unknown[]) => {
    if (host === '127.0.0.1' || host === 'localhost') return (realLookup as (...a: unknown[]) => void)(host, ...rest);
    lookups.push(host);
    const cb = rest.at(-1) as (err: Error) => void;
    cb(Object.assign(new Error(`test: no lookups allowed (${host})`), { code: 'ENOTFOUND' }));
  };
  await loadDestinationTypes([{ type: 'sentinel' }]);
});
afterAll(() => {
  (dns as { lookup: unknown }).lookup = realLookup;
});
afterEach(async () => {
  await Promise.all(built.splice(0).map((d) => d.shutdown()));
  await entra?.close();
  await ingestion?.close();
  expect(lookups, 'host names looked up (traffic leaving 127.0.0.1)').toEqual([]);
});

async function servers(): Promise<void> {
  dir = tempDir('tao-sentinel-');
  certs = makeTestCertificates(dir);
  entra = await startEntraServer({ tls: certs, tenantId: TENANT, clientId: CLIENT, clientSecret: SECRET, federatedToken: FEDERATED, identityHeader: IDENTITY_HEADER });
  ingestion = await startIngestionServer({ dcrImmutableId: DCR, stream: STREAM, validToken: entra.valid, tls: certs });
}

function build(credential: Record<string, unknown>, env: Record<string, string> = {}, extra: Record<string, unknown> = {}): Destination {
  const config = destinationConfigSchema.parse({ type: 'sentinel', endpoint: ingestion.url, dcrImmutableId: DCR, stream: STREAM, caFile: certs.caFile, credential, ...extra });
  const d = createDestination(config, { baseDir: dir, tenantId: 'acme', env });
  built.push(d);
  return d;
}

const clientSecret = (): Record<string, unknown> => ({ type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretEnv: 'TEST_AZURE_SECRET', authorityHost: entra.url, caFile: certs.caFile });
const secretEnv = { TEST_AZURE_SECRET: SECRET };

function bodies(d: Destination, records: MappedLogRecord[]): { bodies: Uint8Array[]; counts: number[] } {
  const out = createEncoder(d.encoding, SCOPE).encode(records);
  return { bodies: out.bodies, counts: out.counts ?? [records.length] };
}

function textsOf(o: SendOutcome): string[] {
  return o.kind === 'done' ? [] : [o.reason, ...(o.kind === 'rejected' && o.response ? [o.response] : [])];
}

describe.runIf(hasOpenssl())('sentinel destination', () => {
  it('client secret: the token Entra issued travels as the bearer token; gzip JSON rows with flat columns arrive; the token is reused', async () => {
    await servers();
    const d = build(clientSecret(), secretEnv);
    const { bodies: [body] } = bodies(d, [record(1), record(2)]);
    expect(await d.send(body!, 2, signal)).toEqual({ kind: 'done' });
    expect(await d.send(bodies(d, [record(3)]).bodies[0]!, 1, signal)).toEqual({ kind: 'done' });

    // one sign-in at our authority (its metadata, then the token), the secret in the form, for the Logs Ingestion scope
    expect(entra.paths).toEqual([`/${TENANT}/v2.0/.well-known/openid-configuration`, `/${TENANT}/oauth2/v2.0/token`]);
    expect(entra.requests).toHaveLength(1);
    expect(entra.requests[0]!.form).toMatchObject({ grant_type: 'client_credentials', client_id: CLIENT, client_secret: SECRET, scope: 'https://monitor.azure.com//.default' });
    expect(entra.tokens).toHaveLength(1);
    const issued = entra.tokens[0]!.token;
    expect(ingestion.calls.map((c) => [c.status, c.token, c.headers['content-encoding']])).toEqual([
      [204, issued, 'gzip'],
      [204, issued, 'gzip'],
    ]);
    // the secret never went to the ingestion host
    for (const c of ingestion.calls) expect(JSON.stringify(c.headers)).not.toContain(SECRET);

    const rows = ingestion.rows;
    expect(rows.map((r) => r.UserId)).toEqual(['u1', 'u2', 'u3']);
    expect(rows[0]).toEqual({
      TimeGenerated: '2026-11-29T05:07:07.123456790Z',
      ObservedTime: '2026-11-29T05:07:08.000000001Z',
      EventName: 'tableau.login_authentication',
      EventType: 'login_authentication',
      Severity: 'INFO',
      SeverityNumber: 9,
      Outcome: 'failure',
      UserId: 'u1',
      UserEmail: 'u1@example.com',
      ClientIP: '203.0.113.7',
      RecordId: 'uid-1',
      SiteLuid: 'SITE-1',
      TableauTenantId: 'tableau-tenant-1',
      ConnectorTenant: 'acme',
      ServiceName: 'tableau-cloud',
      Body: 'user 1 signed in',
      Attributes: { 'user.id': 'u1', 'user.email': 'u1@example.com', 'client.address': '203.0.113.7', 'tableau.status': 'failure', 'log.record.uid': 'uid-1', 'tableau.test_seq': 1, 'tableau.big': 12345678901234567000 },
      ResourceAttributes: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 'tableau-tenant-1', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 'SITE-1' },
    });
    // the big integer went as its digits (JSON.parse above rounds it; the wire has them all)
    expect(gunzipSync(Buffer.from(body!)).toString()).toContain('"tableau.big":12345678901234567890');
  });

  it('TimeGenerated keeps all nine fractional digits', () => {
    expect(isoNanos(1718561027203309001n)).toBe('2024-06-16T18:03:47.203309001Z');
    expect(isoNanos(1718561027000000000n)).toBe('2024-06-16T18:03:47.000000000Z');
    expect(isoNanos(5n)).toBe('1970-01-01T00:00:00.000000005Z');
  });

  it('the upload URL is the DCR stream call of api-version 2023-01-01', () => {
    const c = sentinelDestinationConfigSchema.parse({ type: 'sentinel', endpoint: 'https://dce-x.westeurope-1.ingest.monitor.azure.com/', dcrImmutableId: DCR, credential: { type: 'managed-identity' } });
    expect(sentinelUploadUrl(c).toString()).toBe(`https://dce-x.westeurope-1.ingest.monitor.azure.com/dataCollectionRules/${DCR}/streams/Custom-TableauActivity_CL?api-version=2023-01-01`);
    // a bearer token never goes over plain http to another host
    expect(sentinelDestinationConfigSchema.safeParse({ ...c, endpoint: 'http://dce-x.example.com' }).success).toBe(false);
    expect(sentinelDestinationConfigSchema.safeParse({ ...c, credential: { type: 'client-secret', tenantId: TENANT, clientId: CLIENT } }).error?.issues[0]?.message).toMatch(/exactly one of clientSecretEnv and clientSecretFile/);
    expect(sentinelDestinationConfigSchema.safeParse({ ...c, credential: { type: 'managed-identity', clientSecretEnv: 'X' } }).error?.issues[0]?.message).toMatch(/does not apply to credential type managed-identity/);
  });

  it('the token is fetched again before it expires, in the background (no 401 needed, no call waits for it)', async () => {
    await servers();
    // a short-lived token: due for refresh half-way through its lifetime, no longer used in its last quarter
    // (a real one: 5 minutes and 30 s before it expires); the library rounds the expiry up to the second
    entra.setLifetime(20);
    const d = build(clientSecret(), secretEnv);
    const body = bodies(d, [record(1)]).bodies[0]!;
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    const first = entra.tokens[0]!;
    entra.setLifetime(3600);
    await waitFor('past the refresh point', () => Date.now() > first.expiresAtMs - 8_900, 20_000);
    // due for refresh: this call still carries the first token while the fresh one is fetched
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    expect(ingestion.calls.map((c) => [c.status, c.token])).toEqual([
      [204, first.token],
      [204, first.token],
    ]);
    // the next calls carry the fresh token as soon as it has arrived
    await waitFor('a call with the fresh token', async () => (await d.send(body, 1, signal)).kind === 'done' && ingestion.calls.at(-1)!.token !== first.token, 15_000, 100);
    expect(entra.tokens).toHaveLength(2); // one refresh, however many calls
    expect(ingestion.calls.at(-1)!.token).toBe(entra.tokens[1]!.token);
    expect(ingestion.calls.every((c) => c.status === 204)).toBe(true);
  }, 90_000);

  it('a token too close to its expiry is not used: the call waits for the fresh one', async () => {
    await servers();
    entra.setLifetime(4); // usable for its first 3 s at most
    const d = build(clientSecret(), secretEnv);
    const body = bodies(d, [record(1)]).bodies[0]!;
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    const first = entra.tokens[0]!;
    await waitFor('the last quarter of its lifetime', () => Date.now() > first.expiresAtMs, 15_000);
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    expect(ingestion.calls.map((c) => [c.status, c.token])).toEqual([
      [204, first.token],
      [204, entra.tokens[1]!.token],
    ]);
  });

  it('a token refused mid-run (401) gets one fresh token and the call goes through; a second 401 holds, never dead-letters', async () => {
    await servers();
    const d = build(clientSecret(), secretEnv);
    const body = bodies(d, [record(1)]).bodies[0]!;
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    const first = entra.tokens[0]!.token;
    entra.revoke(first); // revoked (or expired early) at Entra: the ingestion API answers 401
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    expect(entra.tokens).toHaveLength(2);
    const second = entra.tokens[1]!.token;
    expect(ingestion.calls.map((c) => [c.status, c.token])).toEqual([
      [204, first],
      [401, first],
      [204, second],
    ]);

    // the identity lost its access: every token is refused
    ingestion.respondNext(
      { status: 401, body: { error: { code: 'InvalidToken', message: `token ${second} refused` } } },
      { status: 401, body: { error: { code: 'InvalidToken', message: 'refused' } } },
    );
    const before = ingestion.calls.length;
    const held = await d.send(body, 1, signal);
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect((held as { reason: string }).reason).toMatch(/HTTP 401: InvalidToken.*freshly issued token was refused too/);
    expect(ingestion.calls.length - before).toBe(2); // one fresh token, not a loop
    expect(entra.tokens).toHaveLength(3);
    for (const t of textsOf(held)) for (const tok of entra.tokens) expect(t).not.toContain(tok.token);
  });

  it('a refused client secret holds (secret never in the reason); a replaced secret file is read again', async () => {
    await servers();
    const file = join(dir, 'client-secret');
    writeFileSync(file, 'an-old-SECRET-that-was-rotated\n');
    const d = build({ type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretFile: file, authorityHost: entra.url, caFile: certs.caFile });
    const body = bodies(d, [record(1)]).bodies[0]!;
    const held = await d.send(body, 1, signal);
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect((held as { reason: string }).reason).toMatch(/invalid_client.*AADSTS7000215.*credential is refused; held/);
    expect((held as { reason: string }).reason).not.toContain('an-old-SECRET');
    expect(ingestion.calls).toHaveLength(0); // nothing sent without a token
    writeFileSync(file, `${SECRET}\n`);
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
    expect(ingestion.rows).toHaveLength(1);
  });

  it('Entra busy (503) or unreachable is a retry (an outage), not a refusal', async () => {
    await servers();
    const busy = build(clientSecret(), secretEnv);
    entra.respondNext(...Array.from({ length: 10 }, () => ({ status: 503, body: { error: 'temporarily_unavailable', error_description: 'AADSTS90033: A transient error has occurred.' } })));
    const b = await busy.send(bodies(busy, [record(1)]).bodies[0]!, 1, signal);
    expect(b.kind, JSON.stringify(b)).toBe('retry');
    expect(ingestion.calls).toHaveLength(0);
    const d = build(clientSecret(), secretEnv);
    await entra.close();
    const o = await d.send(bodies(d, [record(1)]).bodies[0]!, 1, signal);
    expect(o.kind).toBe('retry');
    expect((o as { reason: string }).reason).toMatch(/^Microsoft Entra ID: /);
    expect(ingestion.calls).toHaveLength(0);
  }, 120_000); // the library retries a busy Entra itself (with backoff) before it gives up

  it('workload identity: the federated token file is the client assertion', async () => {
    await servers();
    const tokenFile = join(dir, 'azure-identity-token');
    writeFileSync(tokenFile, FEDERATED);
    const d = build({ type: 'workload-identity', authorityHost: entra.url, caFile: certs.caFile }, { AZURE_TENANT_ID: TENANT, AZURE_CLIENT_ID: CLIENT, AZURE_FEDERATED_TOKEN_FILE: tokenFile });
    expect(await d.send(bodies(d, [record(1)]).bodies[0]!, 1, signal)).toEqual({ kind: 'done' });
    expect(entra.requests[0]!.form).toMatchObject({ client_id: CLIENT, client_assertion: FEDERATED, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' });
    expect(entra.tokens.map((t) => t.via)).toEqual(['workload-identity']);
    expect(ingestion.calls.map((c) => c.token)).toEqual([entra.tokens[0]!.token]);

    // a federated token Entra does not match: held, the token never in the reason
    writeFileSync(tokenFile, 'eyJ.another-SA-TOKEN-not-federated.sig');
    const other = build({ type: 'workload-identity', tenantId: TENANT, clientId: CLIENT, tokenFile, authorityHost: entra.url, caFile: certs.caFile });
    const held = await other.send(bodies(d, [record(2)]).bodies[0]!, 1, signal);
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect((held as { reason: string }).reason).not.toContain('another-SA-TOKEN');
  });

  it('managed identity: the App Service identity endpoint (IDENTITY_ENDPOINT on loopback) issues the token', async () => {
    await servers();
    process.env.IDENTITY_ENDPOINT = entra.msiEndpoint;
    process.env.IDENTITY_HEADER = IDENTITY_HEADER;
    try {
      const d = build({ type: 'managed-identity' });
      expect(await d.send(bodies(d, [record(1)]).bodies[0]!, 1, signal)).toEqual({ kind: 'done' });
    } finally {
      delete process.env.IDENTITY_ENDPOINT;
      delete process.env.IDENTITY_HEADER;
    }
    expect(entra.requests).toHaveLength(1);
    expect(entra.requests[0]!.form).toMatchObject({ resource: 'https://monitor.azure.com/', 'api-version': '2019-08-01' });
    expect(entra.tokens.map((t) => t.via)).toEqual(['managed-identity']);
    expect(ingestion.calls.map((c) => [c.status, c.token])).toEqual([[204, entra.tokens[0]!.token]]);
  });

  it('a credential that cannot work is an error at start naming the option or variable, never a value', async () => {
    await servers();
    expect(() => build(clientSecret(), {})).toThrow(/credential\.clientSecretEnv: environment variable TEST_AZURE_SECRET is not set/);
    expect(() => build({ type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretFile: join(dir, 'missing'), authorityHost: entra.url })).toThrow(/credential\.clientSecretFile: cannot read .*missing: ENOENT/);
    expect(() => build({ type: 'workload-identity', authorityHost: entra.url }, { AZURE_CLIENT_ID: CLIENT })).toThrow(/tenantId is not set and neither is AZURE_TENANT_ID/);
    expect(() => build({ type: 'access-token', accessTokenEnv: 'TEST_NO_TOKEN' })).toThrow(/accessTokenEnv: environment variable TEST_NO_TOKEN is not set/);
    expect(() => build(clientSecret(), { ...secretEnv, AZURE_AUTHORITY_HOST: 'http://127.0.0.1:1' }, {})).not.toThrow(); // the configured authorityHost wins
    expect(() => build({ ...clientSecret(), authorityHost: undefined }, { ...secretEnv, AZURE_AUTHORITY_HOST: 'http://login.example' })).toThrow(/AZURE_AUTHORITY_HOST\) must be an https URL/);
  });

  it('429 is retried after its Retry-After; 503 is retried', async () => {
    await servers();
    const d = build(clientSecret(), secretEnv);
    const body = bodies(d, [record(1)]).bodies[0]!;
    ingestion.respondNext({ status: 429, headers: { 'Retry-After': '12' }, body: { error: { code: 'TooManyRequests', message: 'slow down' } } }, { status: 503 });
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'retry', reason: 'HTTP 429: TooManyRequests: slow down', retryAfterMs: 12_000 });
    expect(await d.send(body, 1, signal)).toMatchObject({ kind: 'retry', reason: expect.stringMatching(/^HTTP 503/) });
    expect(await d.send(body, 1, signal)).toEqual({ kind: 'done' });
  });

  it('a batch over 1 MB is split into calls of at most 1 MB; a 413 blames the content (the pipeline splits it further)', async () => {
    await servers();
    const d = build(clientSecret(), secretEnv);
    const big = 'x'.repeat(20_000);
    const records = Array.from({ length: 120 }, (_, i) => record(i, { body: `${i}:${big}` })); // ~2.4 MB of rows
    const enc = bodies(d, records);
    expect(enc.bodies.length).toBeGreaterThanOrEqual(3);
    expect(enc.counts.reduce((a, b) => a + b, 0)).toBe(120);
    for (const b of enc.bodies) expect(gunzipSync(Buffer.from(b)).length).toBeLessThanOrEqual(1_000_000);
    for (const [i, b] of enc.bodies.entries()) expect(await d.send(b, enc.counts[i]!, signal)).toEqual({ kind: 'done' });
    expect(ingestion.rows.map((r) => (r.Attributes as Record<string, unknown>)['tableau.test_seq'])).toEqual(records.map((_, i) => i));
    expect(Math.max(...ingestion.calls.map((c) => c.rawBytes))).toBeLessThanOrEqual(INGESTION_MAX_CALL_BYTES);

    ingestion.setMaxCallBytes(100_000);
    const refused = await d.send(enc.bodies[0]!, enc.counts[0]!, signal);
    expect(refused).toMatchObject({ kind: 'rejected', status: 413, reason: expect.stringMatching(/^HTTP 413: ContentLengthLimitExceeded/) });
  });

  it('maxRequestBytes bounds each call below 1 MB', async () => {
    await servers();
    const d = build(clientSecret(), secretEnv, { maxRequestBytes: 50_000 });
    const records = Array.from({ length: 40 }, (_, i) => record(i, { body: 'y'.repeat(5_000) }));
    const enc = bodies(d, records);
    expect(enc.bodies.length).toBeGreaterThanOrEqual(4);
    for (const b of enc.bodies) expect(gunzipSync(Buffer.from(b)).length).toBeLessThanOrEqual(50_000);
    expect(sentinelDestinationConfigSchema.safeParse({ type: 'sentinel', endpoint: 'https://x.example', dcrImmutableId: DCR, credential: { type: 'managed-identity' }, maxRequestBytes: 2_000_000 }).success).toBe(false);
  });
});
