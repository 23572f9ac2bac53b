/**
 * `type: google-secops` end to end: the real CLI sends a fixture tree to the SecOps ingestion
 * stand-in (test/support/secops-server.ts) with google-auth-library credentials (a service-account
 * key file with self-signed JWTs; workload identity federation through Application Default
 * Credentials and the STS stand-in), next to an OTLP receiver (fan-out): every record once in
 * both; per tenant (two tenants, two instances, two service accounts); 429/503 retried, 413 split
 * until the log too big alone is found; refused credentials hold the pipeline (exit 1 with
 * --once, nothing dead-lettered); no key or token anywhere.
 */
import { describe, it, expect, afterEach, beforeAll } from 'vitest';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startSecOpsServer, selfSignedJwtVerifier, decodeJwt, type SecOpsServer, type ImportedLog } from './support/secops-server.js';
import { startStsServer } from './support/google-sts-server.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { CHRONICLE_SCOPE, makeServiceAccountKey, pemBodyLines, startProxyTripwire, TEST_SA_EMAIL, TEST_SA_KEY_ID, WIF_AUDIENCE, writeWorkloadIdentityConfig, type ServiceAccountKey } from './support/google-credentials.js';
import { runCli, type CliResult } from './support/cli-process.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';

const INSTANCE = '7f1e2d3c-0000-4000-8000-00000000abcd';
const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

let key: ServiceAccountKey;
const servers: Array<{ close(): Promise<void> }> = [];
beforeAll(() => {
  key = makeServiceAccountKey();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function secops(): Promise<SecOpsServer> {
  const s = await startSecOpsServer({ verify: selfSignedJwtVerifier({ publicKeyPem: key.publicKeyPem, email: TEST_SA_EMAIL, keyId: TEST_SA_KEY_ID, scope: CHRONICLE_SCOPE }) });
  servers.push(s);
  return s;
}

function destination(server: SecOpsServer, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'google-secops', endpoint: server.url, project: 'test-project', location: 'us', instance: INSTANCE, logType: 'TABLEAU_ACTIVITY', ...extra };
}

/** The key file in the work dir, and the config naming it (relative to the config file). */
function writeConfig(work: string, destinations: Array<Record<string, unknown>>, pipeline?: string): string {
  writeFileSync(join(work, 'secops-sa.json'), key.text);
  return writeDirectoryTenantConfig(work, destinations, pipeline);
}

const run = (config: string, env: Record<string, string> = {}, extra: string[] = []): Promise<CliResult> => runCli(['run', '--once', ...extra, '--config', config], { env });

function deadLetters(work: string): Array<Record<string, unknown>> {
  const dir = join(work, 'state', 'acme', 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** No secret in the run's output or anything it wrote under state/. */
function expectSecretsNowhere(secrets: string[], work: string, ...results: CliResult[]): void {
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
  const texts = [...results.flatMap((r) => [r.stdout, r.stderr]), ...walk(join(work, 'state')).map((f) => readFileSync(f, 'utf8'))];
  for (const s of secrets) for (const t of texts) expect(t.includes(s), `a secret (${s.slice(0, 12)}…) was written`).toBe(false);
}

const seqOf = (l: ImportedLog): number => (l.record.attributes as Record<string, number>)['tableau.test_seq']!;

function countBySeq(seqs: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const s of seqs) m.set(s, (m.get(s) ?? 0) + 1);
  return m;
}

describe('run --once → google-secops', () => {
  it('fan-out with OTLP: every record once in both; SecOps gets the mapped record JSON with event time, namespace and labels, a valid self-signed JWT, nothing else; the key and tokens show nowhere', async () => {
    const server = await secops();
    const otlp: OtlpReceiver = await startOtlpReceiver();
    servers.push(otlp);
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 700);
    const config = writeConfig(work, [destination(server, { credentialsFile: 'secops-sa.json', selfSignedJwt: true, namespace: 'tableau-prod', labels: { source: 'tao' } }), { type: 'otlp', endpoint: otlp.url }], 'batchSize: 2000, maxInFlightBatches: 2');
    const tripwire = await startProxyTripwire();
    servers.push(tripwire);
    const res = await run(config, tripwire.env);
    expect(res.code, res.stderr).toBe(0);
    // self-signed JWTs: google-auth-library called no token endpoint (nor anything else)
    expect(tripwire.seen).toEqual([]);
    expect(server.problems).toEqual([]);
    expect(server.requests.every((r) => r.status === 200 && r.authProblem === undefined)).toBe(true);
    // batches of 2000 records are split to the API's 1000 logs
    expect(Math.max(...server.requests.map((r) => r.logs))).toBe(1000);
    const secopsCounts = countBySeq(server.logs.map(seqOf));
    const otlpCounts = countBySeq(otlp.records().map((r) => r.attributes['tableau.test_seq'] as number));
    expect(server.logs).toHaveLength(tree.records.length);
    expect(otlp.records()).toHaveLength(tree.records.length);
    for (const { record } of tree.records) {
      expect(secopsCounts.get(record.testSeq as number)).toBe(1);
      expect(otlpCounts.get(record.testSeq as number)).toBe(1);
    }
    const bySeq = new Map(server.logs.map((l) => [seqOf(l), l]));
    for (const { key: objectKey, record } of tree.records) {
      const l = bySeq.get(record.testSeq as number)!;
      const type = /eventType=([^/]+)/.exec(objectKey)![1]!;
      expect(l.logType).toBe('TABLEAU_ACTIVITY');
      expect(l.parent).toBe(`projects/test-project/locations/us/instances/${INSTANCE}/logTypes/TABLEAU_ACTIVITY`);
      expect(l.environmentNamespace).toBe('tableau-prod');
      expect(l.labels).toEqual({ source: { value: 'tao' } });
      // the event time at full precision, as Tableau wrote it
      expect(l.logEntryTime).toBe(record.eventTime);
      expect(Date.parse(l.collectionTime)).toBeGreaterThanOrEqual(Date.parse(l.logEntryTime));
      expect(l.record).toMatchObject({ event_name: `tableau.${type}`, event_type: type, time: record.eventTime });
      const attrs = l.record.attributes as Record<string, unknown>;
      expect(attrs['user.id']).toBe(record.actorUserLuid);
      expect(typeof attrs['log.record.uid']).toBe('string');
      expect((l.record.resource as Record<string, unknown>)['tableau_activity_otel.tenant']).toBe('acme');
      if (type === 'vizql_http_request') expect(attrs['client.address']).toBe(record.ipAddress);
      // the mapped record, not the raw Tableau line
      expect(l.dataText).not.toContain('"actorUserLuid"');
      const failed = record.eventOutcome === 'unauthorized' || record.status === 'failure';
      if (failed) expect(l.record.outcome).toBe('failure');
    }
    expect(server.logs.some((l) => l.record.outcome === 'failure')).toBe(true);
    const tokens = [...new Set(server.requests.map((r) => r.authorization!.slice(7)))];
    expectSecretsNowhere([...tokens, ...pemBodyLines(key.privateKeyPem)], work, res);
    // the SecOps token went to SecOps only, not to the other destination of the fan-out
    expect(otlp.requests.length).toBeGreaterThan(0);
    for (const r of otlp.requests) {
      expect(r.headers.authorization).toBeUndefined();
      for (const t of tokens) expect(JSON.stringify(r.headers)).not.toContain(t);
    }
  });

  it("per tenant: two tenants, each with its own instance and service account; each tenant's records reach only its instance, signed by its own key", async () => {
    const keyB = makeServiceAccountKey('tao-secops-tenant-b@other-project.iam.gserviceaccount.com', 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0');
    const verifyA = selfSignedJwtVerifier({ publicKeyPem: key.publicKeyPem, email: TEST_SA_EMAIL, keyId: TEST_SA_KEY_ID, scope: CHRONICLE_SCOPE });
    const verifyB = selfSignedJwtVerifier({ publicKeyPem: keyB.publicKeyPem, email: keyB.json.client_email!, keyId: keyB.json.private_key_id!, scope: CHRONICLE_SCOPE });
    const server = await startSecOpsServer({ verify: (t) => (verifyA(t) === undefined || verifyB(t) === undefined ? undefined : `A: ${verifyA(t)}, B: ${verifyB(t)}`) });
    servers.push(server);
    const work = tempDir();
    writeFileSync(join(work, 'sa-a.json'), key.text);
    writeFileSync(join(work, 'sa-b.json'), keyB.text);
    const a = writeFixtureTree(join(work, 'logs-a'), 2, 150);
    const b = writeFixtureTree(join(work, 'logs-b'), 2, 150, 100_000);
    const INSTANCE_B = '0b0b0b0b-0000-4000-8000-00000000000b';
    const tenant = (id: string, logs: string, instance: string, keyFile: string): string[] => [
      `  - id: ${id}`,
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, logs))} } ]`,
      `    destinations: ${JSON.stringify([{ ...destination(server), instance, credentialsFile: keyFile, selfSignedJwt: true }])}`,
    ];
    const config = join(work, 'config.yaml');
    writeFileSync(config, [`state: { dir: ${JSON.stringify(join(work, 'state'))} }`, 'tenants:', ...tenant('acme', 'logs-a', INSTANCE, 'sa-a.json'), ...tenant('globex', 'logs-b', INSTANCE_B, 'sa-b.json')].join('\n'));
    const res = await run(config);
    expect(res.code, res.stderr).toBe(0);
    expect(server.problems).toEqual([]);
    expect(server.logs).toHaveLength(a.records.length + b.records.length);
    const kidOf = (authorization: string | undefined): unknown => decodeJwt(authorization!.slice(7))!.header.kid;
    for (const r of server.requests) {
      expect(r.status).toBe(200);
      expect(kidOf(r.authorization)).toBe(r.path.includes(INSTANCE_B) ? keyB.json.private_key_id : TEST_SA_KEY_ID);
    }
    for (const l of server.logs) {
      const tenantId = (l.record.resource as Record<string, unknown>)['tableau_activity_otel.tenant'];
      expect(l.parent.includes(INSTANCE_B) ? 'globex' : 'acme').toBe(tenantId);
      expect(seqOf(l) >= 100_000 ? 'globex' : 'acme').toBe(tenantId);
    }
    expect(countBySeq(server.logs.map(seqOf)).size).toBe(600);
  });

  it('workload identity through Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS → external_account): the subject token is exchanged once at the STS stand-in, its token used for every request', async () => {
    const subject = 'eyJhbGciOiJSUzI1NiJ9.k8s-service-account-token-SUBJECT.sig';
    const sts = await startStsServer({ subjectToken: subject, audience: WIF_AUDIENCE });
    servers.push(sts);
    const server = await startSecOpsServer({ verify: (t) => (sts.isValid(t) ? undefined : 'not issued by STS') });
    servers.push(server);
    const work = tempDir();
    const { configFile } = writeWorkloadIdentityConfig(work, sts.tokenUrl, subject);
    writeFixtureTree(join(work, 'logs'), 2, 300);
    const config = writeDirectoryTenantConfig(work, [destination(server)]);
    const tripwire = await startProxyTripwire();
    servers.push(tripwire);
    const res = await run(config, { ...tripwire.env, GOOGLE_APPLICATION_CREDENTIALS: configFile }, ['--retry-for', '20s']);
    expect(res.code, res.stderr).toBe(0);
    // the library talked to the STS stand-in only (no project lookup at cloudresourcemanager, no metadata server)
    expect(tripwire.seen).toEqual([]);
    expect(server.problems).toEqual([]);
    expect(server.logs).toHaveLength(600);
    expect(sts.exchanges).toHaveLength(1);
    expect(sts.exchanges[0]).toMatchObject({ subject_token: subject, scope: CHRONICLE_SCOPE });
    expect(server.requests.every((r) => r.authorization === `Bearer ${sts.issued[0]!.token}`)).toBe(true);
    expectSecretsNowhere([subject, sts.issued[0]!.token], work, res);
  });

  it('429 (Retry-After) and 503 are retried and arrive once; a 413 splits the batch until the log too big alone is found: only it is dead-lettered', async () => {
    const server = await secops();
    const work = tempDir();
    const records = Array.from({ length: 60 }, (_, i) => ({ eventTime: '2026-11-29T01:00:00.5Z', actorUserLuid: 'u', testSeq: i, ...(i === 37 ? { blob: 'x'.repeat(40_000) } : {}) }));
    const dir = join(work, 'logs', `pod=p/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'big.txt'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    server.respondNext({ status: 429, headers: { 'retry-after': '1' } }, { status: 503 });
    // a proxy (or the API) with a smaller limit than our body: 413 for anything over 30 kB
    server.setMaxPayloadBytes(30_000);
    const res = await run(writeConfig(work, [destination(server, { credentialsFile: 'secops-sa.json', selfSignedJwt: true })]));
    expect(res.code, res.stderr).toBe(0);
    const counts = countBySeq(server.logs.map(seqOf));
    expect(server.logs).toHaveLength(59);
    expect(counts.has(37)).toBe(false);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(server.requests.filter((r) => r.status === 429 || r.status === 503)).toHaveLength(2);
    const batches = deadLetters(work).filter((l) => l.kind === 'batch');
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({ status: 413, destination: 'google-secops', reason: expect.stringMatching(/^HTTP 413: RESOURCE_EXHAUSTED: request of \d+ bytes exceeds 30000/) });
    const letter = batches[0]!.records as Array<Record<string, unknown>>;
    expect(letter).toHaveLength(1);
    expect(letter[0]).toMatchObject({ line: 38, raw: JSON.stringify(records[37]) });
  });

  it('refused credentials (401 after one fresh token) hold the pipeline: retried, nothing dead-lettered, exit 1; once the account is accepted everything arrives', async () => {
    const server = await secops();
    server.setVerifier(() => 'service account disabled');
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 10);
    const config = writeConfig(work, [destination(server, { credentialsFile: 'secops-sa.json', selfSignedJwt: true })]);
    const res = await run(config, {}, ['--retry-for', '2s']);
    expect(res.code).toBe(1);
    expect(server.requests.filter((r) => r.status === 401).length).toBeGreaterThan(2);
    expect(server.logs).toHaveLength(0);
    expect(deadLetters(work)).toEqual([]);
    expect(res.stderr).toMatch(/"destination":"google-secops".*"status":401|"status":401.*"destination":"google-secops"/);
    expect(res.stderr).toMatch(/HTTP 401: UNAUTHENTICATED/);
    const tokens = [...new Set(server.requests.map((r) => r.authorization!.slice(7)))];
    expectSecretsNowhere([...tokens, ...pemBodyLines(key.privateKeyPem)], work, res);
    server.setVerifier(selfSignedJwtVerifier({ publicKeyPem: key.publicKeyPem, email: TEST_SA_EMAIL, keyId: TEST_SA_KEY_ID, scope: CHRONICLE_SCOPE }));
    const again = await run(config);
    expect(again.code, again.stderr).toBe(0);
    expect(server.logs).toHaveLength(10);
    expect(deadLetters(work)).toEqual([]);
  });
});
