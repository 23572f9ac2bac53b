/**
 * Security checks, each on the real CLI:
 *
 * - secrets: recognisable secrets seeded through the config (an OTLP header from `${VAR}`, a TCM
 *   PAT through `patEnv`, an S3 secret key through `secretAccessKeyEnv`), and servers that echo
 *   them back in errors (an OTLP receiver answering 400 with the Authorization header in its
 *   body, a TCM server quoting a wrong PAT). Every byte the daemon wrote (stdout, stderr, the
 *   state directory: checkpoints and dead letters) and /metrics, /readyz, /healthz are searched;
 * - tls: every destination type and every network source pointed at an HTTPS server whose
 *   certificate is self-signed: none may send a single request (verification is on by default);
 *   with the certificate trusted (NODE_EXTRA_CA_CERTS) the same OTLP destination delivers;
 * - tenants: two tenants, two receivers: each record only at its own tenant's, each dead letter
 *   only in its own tenant's folder;
 * - paths: a tenant id `../escape` is refused (validate and run, exit 2, nothing written), and
 *   object keys that look like paths (`../../…`, `/tmp/…`, `..%2F`, `..\\`) read from the TCM API
 *   are data only: no file is written outside the state directory, the records arrive.
 */
import { join, resolve, relative, isAbsolute } from 'node:path';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { startOtlpReceiver, type ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { startS3Server, putActivityTree, hoursBack } from '../../../test/support/s3-server.js';
import { startTcmServer } from '../../../test/support/tcm-server.js';
import { judge, logLines, readDeadLetters, resultOf, seqCounts, sleep, waitFor, type FaultContext, type Scenario, type ScenarioResult } from '../lib/harness.js';

/** Every file under `dir`, recursively (path → size). */
function listTree(dir: string, out = new Map<string, number>()): Map<string, number> {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listTree(p, out);
    else out.set(p, statSync(p).size);
  }
  return out;
}

function fileTexts(dir: string): string {
  return [...listTree(dir).keys()].map((f) => readFileSync(f).toString('latin1')).join('\n');
}

function get(url: string): Promise<string> {
  return new Promise((res) => {
    http
      .get(url, (r) => {
        let body = '';
        r.setEncoding('utf8').on('data', (d: string) => (body += d));
        r.on('end', () => res(body));
      })
      .on('error', (e) => res(`(error ${e.message})`));
  });
}

const SITE = 'b3a1c7e0-3333-4a2b-9c3d-000000000003';

function tcmSiteFile(path: string, seqs: number[], availableAt: number) {
  const text = seqs.map((s, i) => JSON.stringify({ eventTime: `2026-11-29T02:00:${String(i % 60).padStart(2, '0')}Z`, siteLuid: SITE, actorUserLuid: 'u-1', eventType: 'login_authentication', testSeq: s })).join('\n') + '\n';
  return { path, text, availableAt };
}

export const securitySecrets: Scenario = {
  name: 'security-secrets',
  title: 'seeded secrets never appear in logs, metrics, endpoints or state files',
  async run(ctx, { short }) {
    const token = (name: string): string => `SEEDED-${name}-${randomBytes(9).toString('hex')}`;
    const secrets = {
      otlpHeader: token('OTLP-TOKEN'),
      otlpEchoHeader: token('OTLP-ECHO-TOKEN'),
      tcmPat: token('TCM-PAT'),
      tcmWrongPat: token('TCM-WRONG-PAT'),
      s3Secret: token('S3-SECRET'),
      s3BadSecret: token('S3-BAD-SECRET'),
      hecToken: token('HEC-TOKEN'),
      ddKey: token('DD-API-KEY'),
    };
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    // a destination that refuses the content (400: dead-lettered; a 401 would hold the pipeline,
    // not dead-letter) quoting the credential it got
    const echo = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid credentials', youSent: req.headers }));
      });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    ctx.defer(() => new Promise<void>((r) => echo.close(() => r())));
    const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;

    const tcm = await startTcmServer({ pat: secrets.tcmPat, tenantId: 'tenant-1' });
    ctx.defer(() => tcm.close());
    const now = Date.now();
    const tcmSeqs = Array.from({ length: 50 }, (_, i) => 500_000 + i);
    tcm.publish(tcmSiteFile('tenant/eventType=login_authentication/a.txt', tcmSeqs, now - 3_600_000));
    const s3 = await startS3Server();
    ctx.defer(() => s3.close());
    await s3.createBucket('secrets-bucket');
    const tree = await putActivityTree(s3, { bucket: 'secrets-bucket', sites: [{ pod: 'prod-a', site: SITE }], hours: hoursBack(now, 3, 2), objectsPerHour: 2, recordsPerObject: short ? 200 : 1000 });

    const work = ctx.dir('work');
    writeFixtureTree(join(work, 'logs-bad'), 2, 20, 700_000);
    const state = join(work, 'state');
    const destinations: Array<Record<string, unknown>> = [
      { type: 'otlp', name: 'main', endpoint: receiver.url, headers: { authorization: 'Bearer ${FAULTS_OTLP_TOKEN}' } },
      { type: 'otlp', name: 'echoing', endpoint: echoUrl, headers: { authorization: 'Bearer ${FAULTS_OTLP_ECHO_TOKEN}' } },
    ];
    const badDestinations: Array<Record<string, unknown>> = [{ type: 'otlp', endpoint: receiver.url }];
    if (ctx.features.destinationTypes.includes('splunk-hec')) badDestinations.push({ type: 'splunk-hec', url: echoUrl, tokenEnv: 'FAULTS_HEC_TOKEN' });
    if (ctx.features.destinationTypes.includes('datadog')) badDestinations.push({ type: 'datadog', url: echoUrl, apiKeyEnv: 'FAULTS_DD_KEY' });
    const s3Source = (name: string, secretEnv: string, keyEnv: string) => ({ type: 's3', name, bucket: 'secrets-bucket', region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, accessKeyIdEnv: keyEnv, secretAccessKeyEnv: secretEnv, pollInterval: '1s' });
    const config = ctx.writeConfig(work, {
      stateDir: state,
      server: { address: '127.0.0.1:0' },
      tenants: [
        {
          id: 'good',
          sources: [
            { type: 'tcm', url: tcm.url, tenantId: 'tenant-1', patEnv: 'FAULTS_TCM_PAT', since: new Date(now - 2 * 86_400_000).toISOString(), pollInterval: '2s', maxRequestsPerSecond: 50 },
            s3Source('s3-good', 'FAULTS_S3_SECRET', 'FAULTS_S3_KEY'),
          ],
          destinations,
        },
        {
          id: 'bad-credentials',
          sources: [
            { type: 'directory', path: join(work, 'logs-bad'), pollInterval: '1s' },
            { type: 'tcm', url: tcm.url, tenantId: 'tenant-1', patEnv: 'FAULTS_TCM_WRONG_PAT', pollInterval: '2s' },
            s3Source('s3-bad', 'FAULTS_S3_BAD_SECRET', 'FAULTS_S3_BAD_KEY'),
          ],
          destinations: badDestinations.length > 1 ? badDestinations.slice(1) : badDestinations,
        },
      ],
    });
    const env = {
      FAULTS_OTLP_TOKEN: secrets.otlpHeader,
      FAULTS_OTLP_ECHO_TOKEN: secrets.otlpEchoHeader,
      FAULTS_TCM_PAT: secrets.tcmPat,
      FAULTS_TCM_WRONG_PAT: secrets.tcmWrongPat,
      FAULTS_S3_KEY: 'S3RVER',
      FAULTS_S3_SECRET: secrets.s3Secret,
      FAULTS_S3_BAD_KEY: 'NOT-A-KNOWN-KEY-ID',
      FAULTS_S3_BAD_SECRET: secrets.s3BadSecret,
      FAULTS_HEC_TOKEN: secrets.hecToken,
      FAULTS_DD_KEY: secrets.ddKey,
      LOG_LEVEL: 'debug',
    };
    const d = ctx.start(['run', '--config', config], env);
    const valid = [...tree.records.map((r) => r.record.testSeq as number), ...tcmSeqs];
    const want = new Set(valid);
    await waitFor(() => {
      const c = seqCounts(receiver.records());
      return [...want].every((s) => c.has(s)) || !d.alive;
    }, 60_000, 200);
    await sleep(3_000); // let the failing tenant fail a few more times
    const extra: string[] = [];
    const notes: string[] = [];
    let endpoints = '';
    const serving = logLines(d.output(), /serving \/healthz/)[0];
    if (ctx.features.server) {
      if (!serving) extra.push('no "serving /healthz" log line: endpoints not checked');
      else {
        const base = `http://${String(serving.address)}`;
        endpoints = [await get(`${base}/metrics`), await get(`${base}/readyz`), await get(`${base}/readyz?verbose`), await get(`${base}/healthz`)].join('\n');
        notes.push(`/metrics, /readyz, /healthz searched (${endpoints.length} bytes)`);
      }
    } else notes.push('this build has no HTTP endpoints: /metrics not checked');
    const r = await ctx.stop(d);
    if (r.code !== 0) extra.push(`daemon exited ${r.code} after SIGTERM`);
    const haystacks: Array<[string, string]> = [
      ['stdout/stderr', ctx.allOutput()],
      ['state directory', fileTexts(state)],
      ['HTTP endpoints', endpoints],
    ];
    let leaks = 0;
    for (const [name, secret] of Object.entries(secrets)) {
      for (const [where, text] of haystacks) {
        const variants = [secret, Buffer.from(secret).toString('base64'), encodeURIComponent(secret)];
        if (variants.some((v) => text.includes(v))) {
          leaks++;
          extra.push(`secret ${name} found in ${where}`);
        }
      }
    }
    // the servers did get the secrets (the search is meaningful): the echo destination answered with it
    if (!receiver.requests.some((q) => String(q.headers.authorization) === `Bearer ${secrets.otlpHeader}`)) extra.push('the OTLP header was never sent (seeding failed)');
    const echoed = readDeadLetters(state, 'good').filter((l) => l.kind === 'batch');
    if (echoed.length === 0) extra.push('no batch was rejected by the echoing destination (the echo path was not exercised)');
    const tcmRejected = logLines(ctx.allOutput(), /./).filter((l) => /sign-in rejected/.test(String(l.err ?? l.msg ?? ''))).length;
    if (tcmRejected === 0) notes.push('the wrong TCM PAT was not logged as rejected');
    const j = judge(receiver.records(), [], { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    const sizes = { out: ctx.allOutput().length, state: fileTexts(state).length };
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [
      `${Object.keys(secrets).length} seeded secrets, ${leaks} found`,
      `searched ${Math.round(sizes.out / 1024)} kB of logs (LOG_LEVEL=debug), ${Math.round(sizes.state / 1024)} kB of state files`,
      `${echoed.length} batches dead-lettered with the echoed 400 (scrubbed), ${tcmRejected} TCM sign-in rejections logged`,
      ...notes,
    ]);
  },
};

function makeCert(dir: string): { key: string; cert: string; certFile: string } | undefined {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'pipe' });
  } catch {
    return undefined;
  }
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
}

interface TlsServer {
  url: string;
  requests: number;
  handshakeFailures: number;
  close(): Promise<void>;
}

async function tlsServer(key: string, cert: string): Promise<TlsServer> {
  const s: TlsServer = { url: '', requests: 0, handshakeFailures: 0, close: async () => undefined };
  const server = https.createServer({ key, cert }, (req, res) => {
    s.requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.on('tlsClientError', () => s.handshakeFailures++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  s.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.close = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });
  return s;
}

export const securityTls: Scenario = {
  name: 'security-tls',
  title: 'TLS verification is on by default for every destination and source',
  async run(ctx) {
    const work = ctx.dir('work');
    const cert = makeCert(work);
    if (!cert) return { eventsIn: 0, delivered: 0, duplicates: 0, deadLettered: 0, peakRssMb: 0, outcome: 'skip', notes: 'openssl not available to make a self-signed certificate' };
    const logs = join(work, 'logs');
    const tree = writeFixtureTree(logs, 2, 50);
    const kinds = ['otlp', ...['splunk-hec', 'datadog'].filter((t) => ctx.features.destinationTypes.includes(t)), 's3 source', 'tcm source'];
    const servers = new Map<string, TlsServer>();
    for (const k of kinds) {
      const s = await tlsServer(cert.key, cert.cert);
      servers.set(k, s);
      ctx.defer(() => s.close());
    }
    const dirSource = { type: 'directory', path: logs };
    const fileDest = (n: string) => ({ type: 'file', path: join(work, `${n}.jsonl`) });
    const tenants: Array<Record<string, unknown>> = [{ id: 't-otlp', sources: [dirSource], destinations: [{ type: 'otlp', endpoint: servers.get('otlp')!.url }] }];
    if (servers.has('splunk-hec')) tenants.push({ id: 't-hec', sources: [dirSource], destinations: [{ type: 'splunk-hec', url: servers.get('splunk-hec')!.url, tokenEnv: 'FAULTS_HEC_TOKEN' }] });
    if (servers.has('datadog')) tenants.push({ id: 't-datadog', sources: [dirSource], destinations: [{ type: 'datadog', url: servers.get('datadog')!.url, apiKeyEnv: 'FAULTS_DD_KEY' }] });
    tenants.push({ id: 't-s3', sources: [{ type: 's3', bucket: 'tls-bucket', region: 'us-east-1', endpoint: servers.get('s3 source')!.url, forcePathStyle: true, accessKeyIdEnv: 'FAULTS_S3_KEY', secretAccessKeyEnv: 'FAULTS_S3_SECRET' }], destinations: [fileDest('s3')] });
    tenants.push({ id: 't-tcm', sources: [{ type: 'tcm', url: servers.get('tcm source')!.url, tenantId: 'tenant-1', patEnv: 'FAULTS_TCM_PAT' }], destinations: [fileDest('tcm')] });
    const config = ctx.writeConfig(work, { pipeline: { retryFor: '5s' }, tenants });
    const env = { FAULTS_HEC_TOKEN: 'hec-token-value', FAULTS_DD_KEY: 'dd-api-key-value', FAULTS_S3_KEY: 'AKIAEXAMPLE', FAULTS_S3_SECRET: 'secret-value', FAULTS_TCM_PAT: 'tcm-pat-value' };
    const d = ctx.start(['run', '--once', '--config', config], env);
    // every client tried (a failed handshake on each server), or 60 s
    await waitFor(() => [...servers.values()].every((s) => s.handshakeFailures > 0) || !d.alive, 60_000, 100);
    await sleep(500);
    d.kill('SIGKILL');
    await d.exited;
    const extra: string[] = [];
    const notes: string[] = [];
    for (const [k, s] of servers) {
      if (s.requests > 0) extra.push(`${k}: ${s.requests} HTTP requests sent over a connection whose certificate is not trusted`);
      if (s.handshakeFailures === 0) extra.push(`${k}: never tried to connect (nothing proven)`);
      notes.push(`${k}: ${s.handshakeFailures} handshakes refused, ${s.requests} requests`);
    }
    for (const n of ['s3', 'tcm']) if (existsSync(join(work, `${n}.jsonl`)) && readFileSync(join(work, `${n}.jsonl`), 'utf8').trim() !== '') extra.push(`${n}: records were read over an untrusted connection`);

    // positive control: the same OTLP destination with the certificate trusted delivers
    const okServer = await startTlsOtlp(cert.key, cert.cert);
    ctx.defer(() => okServer.close());
    const work2 = ctx.dir('trusted');
    const config2 = ctx.writeConfig(work2, { pipeline: { retryFor: '10s' }, tenants: [{ id: 't-otlp', sources: [dirSource], destinations: [{ type: 'otlp', endpoint: okServer.url }] }] });
    const r2 = await ctx.run(['run', '--once', '--config', config2], { NODE_EXTRA_CA_CERTS: cert.certFile });
    if (r2.code !== 0) extra.push(`with the certificate trusted, the run exited ${r2.code}`);
    const delivered = okServer.records();
    const j = judge(delivered, [], { valid: tree.records.map((r) => r.record.testSeq as number), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    notes.push(`trusted (NODE_EXTRA_CA_CERTS): ${j.delivered} of ${tree.records.length} delivered over HTTPS`);
    return resultOf(j, tree.records.length, ctx.peakRssMb, extra, notes);
  },
};

/** An OTLP/HTTP receiver over HTTPS: a TLS-terminating proxy in front of the plain test receiver. */
async function startTlsOtlp(key: string, cert: string): Promise<{ url: string; records(): ReceivedLogRecord[]; close(): Promise<void> }> {
  const inner = await startOtlpReceiver();
  const target = new URL(inner.url);
  const server = https.createServer({ key, cert }, (req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    records: () => inner.records(),
    close: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      await inner.close();
    },
  };
}

export const securityTenants: Scenario = {
  name: 'security-tenants',
  title: "a tenant's records never reach another tenant's destination",
  async run(ctx, { short }) {
    const ra = await startOtlpReceiver();
    ctx.defer(() => ra.close());
    const rb = await startOtlpReceiver();
    ctx.defer(() => rb.close());
    const work = ctx.dir('work');
    const per = short ? 200 : 1000;
    const ta = writeFixtureTree(join(work, 'logs-a'), 8, per, 0, 'a');
    const tb = writeFixtureTree(join(work, 'logs-b'), 8, per, 1_000_000, 'b');
    // one bad line each, to check the dead letters stay apart too
    writeFileSync(join(work, 'logs-a', 'bad-a.txt'), 'not json for tenant a\n');
    writeFileSync(join(work, 'logs-b', 'bad-b.txt'), 'not json for tenant b\n');
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        { id: 'tenant-a', sources: [{ type: 'directory', path: join(work, 'logs-a') }], destinations: [{ type: 'otlp', endpoint: ra.url }] },
        { id: 'tenant-b', sources: [{ type: 'directory', path: join(work, 'logs-b') }], destinations: [{ type: 'otlp', endpoint: rb.url }] },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', config]);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const aSeqs = new Set(ta.records.map((x) => x.record.testSeq as number));
    const bSeqs = new Set(tb.records.map((x) => x.record.testSeq as number));
    const strayA = ra.records().filter((x) => bSeqs.has(x.attributes['tableau.test_seq'] as number) || x.resource['tableau_activity_otel.tenant'] !== 'tenant-a').length;
    const strayB = rb.records().filter((x) => aSeqs.has(x.attributes['tableau.test_seq'] as number) || x.resource['tableau_activity_otel.tenant'] !== 'tenant-b').length;
    if (strayA > 0) extra.push(`${strayA} records at tenant-a's destination that are not tenant-a's`);
    if (strayB > 0) extra.push(`${strayB} records at tenant-b's destination that are not tenant-b's`);
    const dla = readDeadLetters(state, 'tenant-a');
    const dlb = readDeadLetters(state, 'tenant-b');
    if (dla.length !== 1 || !String(dla[0]!.object).endsWith('bad-a.txt')) extra.push(`tenant-a's dead letters: ${dla.map((l) => l.object).join(', ')}`);
    if (dlb.length !== 1 || !String(dlb[0]!.object).endsWith('bad-b.txt')) extra.push(`tenant-b's dead letters: ${dlb.map((l) => l.object).join(', ')}`);
    const ja = judge(ra.records(), dla, { valid: aSeqs, bad: [{ label: 'a', object: 'bad-a.txt', line: 1, reason: /invalid JSON/ }], dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    const jb = judge(rb.records(), dlb, { valid: bSeqs, bad: [{ label: 'b', object: 'bad-b.txt', line: 1, reason: /invalid JSON/ }], dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    const j = { delivered: ja.delivered + jb.delivered, duplicates: ja.duplicates + jb.duplicates, deadLettered: ja.deadLettered + jb.deadLettered, failures: [...ja.failures.map((f) => `tenant-a: ${f}`), ...jb.failures.map((f) => `tenant-b: ${f}`)] };
    return resultOf(j, aSeqs.size + bSeqs.size + 2, ctx.peakRssMb, extra, [`tenant-a ${ja.delivered} and tenant-b ${jb.delivered} records, 0 at the other's destination`, 'each dead letter in its own tenant folder']);
  },
};

export const securityPaths: Scenario = {
  name: 'security-paths',
  title: 'no file path built from a tenant id or an object key escapes the state directory',
  async run(ctx): Promise<ScenarioResult> {
    const work = ctx.dir('work');
    const state = join(work, 'state');
    const extra: string[] = [];
    const notes: string[] = [];
    const marker = `tao-escape-${randomBytes(6).toString('hex')}`;

    // 1. a tenant id that is a path
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const logs = join(work, 'logs');
    writeFixtureTree(logs, 1, 5, 900_000);
    for (const id of ['../' + marker, '/tmp/' + marker, marker + '/..', '..', '.']) {
      const cfg = ctx.writeConfig(work, { stateDir: state, tenants: [{ id, sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }] });
      const v = await ctx.run(['validate', '--config', cfg]);
      const r = await ctx.run(['run', '--once', '--config', cfg]);
      if (v.code !== 2) extra.push(`validate accepted tenant id ${JSON.stringify(id)} (exit ${v.code})`);
      if (r.code !== 2) extra.push(`run accepted tenant id ${JSON.stringify(id)} (exit ${r.code})`);
    }
    if (existsSync(state) && listTree(state).size > 0) extra.push(`the refused configs wrote ${listTree(state).size} files`);
    if (receiver.records().length > 0) extra.push('a refused config delivered records');
    notes.push('tenant ids ../x, /tmp/x, x/.., .., . refused by validate and run (exit 2), nothing written');

    // 2. object keys that look like paths, from the TCM API; a source name that does too
    const tcm = await startTcmServer({ pat: 'path-test-pat-value', tenantId: 'tenant-1' });
    ctx.defer(() => tcm.close());
    const now = Date.now();
    const keys = [
      `../../../../../../../../tmp/${marker}/eventType=login_authentication/dotdot.txt`,
      `/tmp/${marker}/eventType=login_authentication/absolute.txt`,
      `..%2F..%2F..%2F${marker}%2Fencoded.txt`,
      `..\\..\\..\\${marker}\\backslash.txt`,
      `tenant/eventType=login_authentication/../../../${marker}/middle.txt`,
      `tenant/eventType=login_authentication/${marker}/\u0000nul.txt`,
    ];
    const valid: number[] = [];
    keys.forEach((k, i) => {
      const seqs = [800_000 + i * 10, 800_000 + i * 10 + 1];
      valid.push(...seqs);
      tcm.publish(tcmSiteFile(k, seqs, now - 3_600_000 + i));
    });
    const before = new Set(listTree(ctx.root).keys());
    const tmpBefore = new Set(readdirSync(tmpdir()));
    const cfg = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        {
          id: 'paths',
          sources: [{ type: 'tcm', name: `../../../${marker}/source-name`, url: tcm.url, tenantId: 'tenant-1', patEnv: 'FAULTS_TCM_PAT', since: new Date(now - 86_400_000).toISOString(), maxRequestsPerSecond: 50 }],
          destinations: [{ type: 'otlp', endpoint: receiver.url }],
        },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', cfg], { FAULTS_TCM_PAT: 'path-test-pat-value' });
    if (r.code !== 0) extra.push(`run with path-like keys exited ${r.code}`);
    const stateAbs = resolve(state);
    const created = [...listTree(ctx.root).keys()].filter((f) => !before.has(f));
    const outside = created.filter((f) => {
      const rel = relative(stateAbs, f);
      return rel.startsWith('..') || isAbsolute(rel);
    }).filter((f) => !/cli-\d+\.log$/.test(f) && f !== cfg);
    if (outside.length > 0) extra.push(`files written outside the state directory: ${outside.join(', ')}`);
    const tmpNew = readdirSync(tmpdir()).filter((n) => !tmpBefore.has(n) && n.includes(marker));
    if (tmpNew.length > 0) extra.push(`created in ${tmpdir()}: ${tmpNew.join(', ')}`);
    const anyMarkerPath = [...listTree(ctx.root).keys()].filter((f) => f.includes(marker));
    if (anyMarkerPath.length > 0) extra.push(`paths named after a key: ${anyMarkerPath.join(', ')}`);
    const cp = readFileSync(join(state, 'paths', 'checkpoints.json'), 'utf8');
    if (!cp.includes(marker)) notes.push('(the keys are not in the checkpoint: it keeps only positions)');
    else notes.push('the keys are stored as data in checkpoints.json');
    notes.push(`${keys.length} path-like object keys and a path-like source name: ${created.length} files created, all under <state>/paths/`);
    const j = judge(receiver.records(), readDeadLetters(state, 'paths'), { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, notes);
  },
};

export type { FaultContext };
