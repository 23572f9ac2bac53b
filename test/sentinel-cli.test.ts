/**
 * `type: sentinel` end to end: the real CLI (dist/, `npm run build` first) reads a fixture tree
 * and sends it to the Logs Ingestion stand-in and, side by side, an OTLP receiver (fan-out);
 * tokens come from the Entra stand-in over TLS, the test CA trusted through NODE_EXTRA_CA_CERTS
 * in the child's environment (no caFile anywhere). Every record reaches both once, the client
 * secret and the tokens show nowhere (stdout, stderr, state, dead letters), a token refused
 * mid-run gets one fresh token, and a refused client secret holds the pipeline without a dead
 * letter until the secret is fixed; two tenants each reach only their own data collection rule.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEntraServer, type EntraServer } from './support/entra-server.js';
import { startIngestionServer, type IngestionServer } from './support/logs-ingestion-server.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { hasOpenssl, makeTestCertificates, type TestCertificates } from './support/hec-server.js';
import { runCli, type CliResult } from './support/cli-process.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';

const TENANT = '7f3c1a2b-0000-4000-8000-00000000aaaa';
const CLIENT = '0b8e5d11-0000-4000-8000-00000000bbbb';
const SECRET = 'entra-cli-SECRET-8e1f44a09b2c';
const SECRET_ENV = 'TAO_TEST_AZURE_CLIENT_SECRET';
const DCR = 'dcr-00112233445566778899aabbccddeeff';

let entra: EntraServer | undefined;
let ingestion: IngestionServer | undefined;
let otlp: OtlpReceiver | undefined;
afterEach(async () => {
  await Promise.all([entra?.close(), ingestion?.close(), otlp?.close()]);
  entra = ingestion = otlp = undefined;
});

async function setup(): Promise<{ certs: TestCertificates; work: string; entra: EntraServer; ingestion: IngestionServer; otlp: OtlpReceiver }> {
  const work = tempDir('tao-sentinel-cli-');
  const certs = makeTestCertificates(work);
  entra = await startEntraServer({ tls: certs, tenantId: TENANT, clientId: CLIENT, clientSecret: SECRET });
  ingestion = await startIngestionServer({ dcrImmutableId: DCR, stream: 'Custom-TableauActivity_CL', validToken: entra.valid, tls: certs });
  otlp = await startOtlpReceiver();
  return { certs, work, entra, ingestion, otlp };
}

function config(work: string, endpoint: string, authorityHost: string, otlpUrl: string): string {
  return writeDirectoryTenantConfig(work, [
    { type: 'sentinel', endpoint, dcrImmutableId: DCR, credential: { type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretEnv: SECRET_ENV, authorityHost } },
    { type: 'otlp', endpoint: otlpUrl },
  ]);
}

const run = (file: string, certs: TestCertificates, secret: string, extra: string[] = []): Promise<CliResult> =>
  runCli(['run', '--once', ...extra, '--config', file], { env: { [SECRET_ENV]: secret, NODE_EXTRA_CA_CERTS: certs.caFile } });

function deadLetters(work: string): string[] {
  const dir = join(work, 'state', 'acme', 'dead-letter');
  return existsSync(dir) ? readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)) : [];
}

function expectNowhere(secrets: string[], work: string, ...results: CliResult[]): void {
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
  const files = walk(join(work, 'state'));
  for (const s of secrets) {
    for (const r of results) {
      expect(r.stdout.includes(s), `a secret in stdout`).toBe(false);
      expect(r.stderr.includes(s), `a secret in stderr`).toBe(false);
    }
    for (const f of files) expect(readFileSync(f, 'utf8').includes(s), `a secret in ${f}`).toBe(false);
  }
}

function seqCounts(seqs: unknown[]): Map<unknown, number> {
  const m = new Map<unknown, number>();
  for (const s of seqs) m.set(s, (m.get(s) ?? 0) + 1);
  return m;
}

describe.runIf(hasOpenssl())('sentinel through the CLI', () => {
  it('fans out: every record reaches the ingestion API (as rows, with the issued token) and the OTLP receiver once', async () => {
    const { certs, work, entra, ingestion, otlp } = await setup();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 60);
    const res = await run(config(work, ingestion.url, entra.url, otlp.url), certs, SECRET);
    expect(res.code, res.stderr).toBe(0);

    const rowSeqs = seqCounts(ingestion.rows.map((r) => (r.Attributes as Record<string, unknown>)['tableau.test_seq']));
    const otlpSeqs = seqCounts(otlp.records().map((r) => r.attributes['tableau.test_seq']));
    for (const { record } of tree.records) {
      expect(rowSeqs.get(record.testSeq)).toBe(1);
      expect(otlpSeqs.get(record.testSeq)).toBe(1);
    }
    expect(ingestion.rows).toHaveLength(tree.records.length);
    expect(ingestion.problems).toEqual([]);
    // the rows a KQL user queries
    const login = ingestion.rows.find((r) => r.EventType === 'login_authentication')!;
    expect(login).toMatchObject({ EventName: 'tableau.login_authentication', ConnectorTenant: 'acme', ServiceName: 'tableau-cloud', SiteLuid: expect.any(String), RecordId: expect.any(String) });
    expect(login.TimeGenerated).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    // one sign-in for the whole run; every call carried the token Entra issued
    expect(entra.requests.map((r) => r.status)).toEqual([200]);
    expect(new Set(ingestion.calls.map((c) => c.token))).toEqual(new Set([entra.tokens[0]!.token]));
    expect(deadLetters(work)).toEqual([]);
    expectNowhere([SECRET, ...entra.tokens.map((t) => t.token)], work, res);
  });

  it('per tenant: the records of each tenant go to its own data collection rule, and only there', async () => {
    const { certs, work, entra, ingestion } = await setup();
    const other = await startIngestionServer({ dcrImmutableId: 'dcr-99999999999999999999999999999999', stream: 'Custom-GlobexActivity_CL', validToken: entra.valid, tls: certs });
    try {
      const acme = writeFixtureTree(join(work, 'logs-acme'), 2, 30);
      const globex = writeFixtureTree(join(work, 'logs-globex'), 2, 20, 50_000);
      const sentinelOf = (endpoint: string, dcr: string, stream: string): Record<string, unknown> => ({
        type: 'sentinel',
        endpoint,
        dcrImmutableId: dcr,
        stream,
        credential: { type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretEnv: SECRET_ENV, authorityHost: entra.url },
      });
      const file = join(work, 'two-tenants.yaml');
      writeFileSync(
        file,
        [
          `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
          'tenants:',
          '  - id: acme',
          `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs-acme'))} } ]`,
          `    destinations: ${JSON.stringify([sentinelOf(ingestion.url, DCR, 'Custom-TableauActivity_CL')])}`,
          '  - id: globex',
          `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs-globex'))} } ]`,
          `    destinations: ${JSON.stringify([sentinelOf(other.url, 'dcr-99999999999999999999999999999999', 'Custom-GlobexActivity_CL')])}`,
        ].join('\n'),
      );
      const res = await run(file, certs, SECRET);
      expect(res.code, res.stderr).toBe(0);
      const seqs = (rows: Array<Record<string, unknown>>): unknown[] => rows.map((r) => (r.Attributes as Record<string, unknown>)['tableau.test_seq']).sort((a, b) => Number(a) - Number(b));
      expect(seqs(ingestion.rows)).toEqual(acme.records.map((r) => r.record.testSeq));
      expect(seqs(other.rows)).toEqual(globex.records.map((r) => r.record.testSeq));
      expect(new Set(ingestion.rows.map((r) => r.ConnectorTenant))).toEqual(new Set(['acme']));
      expect(new Set(other.rows.map((r) => r.ConnectorTenant))).toEqual(new Set(['globex']));
    } finally {
      await other.close();
    }
  });

  it('a token refused mid-run gets one fresh token, nothing is lost or sent twice; a refused secret holds without dead letters until it is fixed', async () => {
    const { certs, work, entra, ingestion, otlp } = await setup();
    const tree = writeFixtureTree(join(work, 'logs'), 2, 40);
    const file = config(work, ingestion.url, entra.url, otlp.url);

    // the first call's token is refused (revoked at Entra): one fresh token, then everything goes through
    ingestion.respondNext({ status: 401, body: { error: { code: 'InvalidToken', message: 'The provided token is expired' } } });
    const first = await run(file, certs, SECRET);
    expect(first.code, first.stderr).toBe(0);
    expect(entra.tokens).toHaveLength(2);
    expect(ingestion.calls.filter((c) => c.status === 401)).toHaveLength(1);
    expect(ingestion.rows).toHaveLength(tree.records.length);

    // new files, and the client secret is wrong (expired, rotated): held and retried, exit 1, no dead letter
    const more = writeFixtureTree(join(work, 'logs'), 1, 30, 10_000, 'later');
    const wrong = 'entra-cli-WRONG-secret-0d9c8b7a';
    const held = await run(file, certs, wrong, ['--retry-for', '2s']);
    expect(held.code).toBe(1);
    expect(entra.requests.filter((r) => r.status === 401).length).toBeGreaterThan(1);
    expect(held.stderr).toMatch(/AADSTS7000215: Invalid client secret provided/);
    expect(deadLetters(work)).toEqual([]);
    expect(ingestion.rows).toHaveLength(tree.records.length);

    // the secret fixed: the held records arrive, once
    const fixed = await run(file, certs, SECRET);
    expect(fixed.code, fixed.stderr).toBe(0);
    const seqs = seqCounts(ingestion.rows.map((r) => (r.Attributes as Record<string, unknown>)['tableau.test_seq']));
    for (const { record } of [...tree.records, ...more.records]) expect(seqs.get(record.testSeq)).toBe(1);
    expect(deadLetters(work)).toEqual([]);
    expectNowhere([SECRET, wrong, ...entra.tokens.map((t) => t.token)], work, first, held, fixed);
  });
});
