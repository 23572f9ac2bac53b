/**
 * The TCM source's credentials and downloads (issue 16), against the local TCM server
 * (test/support/tcm-server.ts) and "trap" servers on 127.0.0.1 that record whatever reaches them:
 *
 * - sign-in, listings and URL requests answered with 307/308 to another host: never followed
 *   (the trap sees no request, so neither the PAT nor the session token), retried as an outage,
 *   and an error naming the target's origin (not its query) when it persists;
 * - API answers larger than maxResponseBytes: a clear error, not read on;
 * - download URLs to a "metadata" server, `data:` URLs, loopback hosts by name, and redirect hops
 *   to a refused host: never contacted (no TCP connection), the URL asked for again once, then
 *   the file is dead-lettered with the reason (through the real CLI);
 * - `downloadHosts` lets a trusted non-public storage host (and redirect hops to it) through;
 * - the address rules themselves (refusedAddress, DownloadPolicy.check), without any network.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTcmServer, startTrapServer, type TcmServer, type TrapServer } from './support/tcm-server.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { TcmSource, tcmSourceConfigSchema } from '../src/sources/tcm/tcm-source.js';
import { TcmClient, MAX_DOWNLOAD_REDIRECTS } from '../src/sources/tcm/tcm-client.js';
import { DownloadPolicy, DownloadRefusedError, refusedAddress } from '../src/sources/tcm/download-guard.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import type { SourceObject } from '../src/sources/source.js';
import { silentLogger } from '../src/daemon/logger.js';
import type { SourceMetrics } from '../src/daemon/metrics.js';

const TENANT = 'db7fad32-0175-431a-b176-7a71be70c2ac';
const SITE = '46a64a61-5e8c-4e4a-b2e0-76740ab0d02b';
const HOUR = 3_600_000;
const FAST_RETRY = { initialDelayMs: 20, maxDelayMs: 100, maxElapsedMs: Infinity, maxAttempts: 4 };
const metrics: SourceMetrics = { request: () => undefined, newestPartition: () => undefined };

let seq = 0;
/** A site file of `n` records, each with a unique testSeq. */
function file(availableAt: number, n: number): { site: string; path: string; text: string; availableAt: number; seqs: number[] } {
  const seqs = Array.from({ length: n }, () => seq++);
  const text = seqs.map((s, i) => JSON.stringify({ eventTime: new Date(availableAt - 60_000 + i * 1000).toISOString(), siteLuid: SITE, actorUserLuid: 'u-1', eventType: 'login_authentication', testSeq: s })).join('\n') + '\n';
  return { site: SITE, path: `pod=prod-a/siteLuid=${SITE}/eventType=login_authentication/${randomUUID()}.txt`, text, availableAt, seqs };
}

async function readObject(o: SourceObject): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of o.open(new AbortController().signal)) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks).toString('utf8');
}

async function readError(o: SourceObject): Promise<Error & { permanent?: boolean }> {
  try {
    await readObject(o);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`${o.key} was read although its download should have been refused`);
}

// ---------------------------------------------------------------------------------------------

describe('download address rules (no network)', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast, reserved and IPv6 forms embedding them; lets public addresses through', () => {
    const refused = [
      '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', '100.127.255.255',
      '169.254.169.254', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.1.1.1', '255.255.255.255', '240.0.0.1', '192.0.2.10', '198.18.0.1',
      '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254',
      '::ffff:10.0.0.1', '64:ff9b::a9fe:a9fe', '2002:7f00:1::1', '2002:c0a8:0101::1', '::127.0.0.1', '2001:db8::1', '[::1]',
    ];
    for (const a of refused) expect(refusedAddress(a), a).toBeDefined();
    const allowed = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '172.15.255.255', '100.128.0.1', '100.63.255.255', '52.216.8.1', '2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:0808:0808::1'];
    for (const a of allowed) expect(refusedAddress(a), a).toBeUndefined();
    expect(refusedAddress('169.254.169.254')).toMatch(/link-local/);
    expect(refusedAddress('::ffff:127.0.0.1')).toMatch(/loopback/);
  });

  it('only https (http only with a loopback TCM url), no data:/file:, address hosts checked before any connection, downloadHosts by host, port and suffix', () => {
    const prod = new DownloadPolicy('https://cloudmanager.tableau.com');
    expect(prod.check(new URL('https://s3.us-west-2.amazonaws.com/bucket/key?X-Amz-Signature=abc'), 'download URL')).toEqual({ checkAddresses: true });
    const refusal = (p: DownloadPolicy, url: string): string => {
      try {
        p.check(new URL(url), 'download URL');
      } catch (err) {
        expect(err).toBeInstanceOf(DownloadRefusedError);
        expect((err as DownloadRefusedError).permanent).toBe(true);
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(refusal(prod, 'http://s3.amazonaws.com/bucket/key?X-Amz-Signature=SIG1')).toMatch(/^download URL http:\/\/s3\.amazonaws\.com refused: plain http is not fetched/);
    expect(refusal(prod, 'data:application/json;base64,eyJhIjoxfQ==')).toMatch(/data: URL refused: the scheme data: is not fetched/);
    expect(refusal(prod, 'file:///etc/passwd')).toMatch(/scheme file: is not fetched/);
    expect(refusal(prod, 'https://169.254.169.254/latest/meta-data/?sig=SIG2')).toMatch(/169\.254\.169\.254 is a link-local address/);
    expect(refusal(prod, 'https://[::ffff:a9fe:a9fe]/latest')).toMatch(/link-local/);
    expect(refusal(prod, 'https://2130706433/')).toMatch(/127\.0\.0\.1 is a loopback address/); // the URL parser's spelling of 127.0.0.1
    expect(refusal(prod, 'https://user:pw@s3.amazonaws.com/x')).toMatch(/user credentials/);
    for (const url of ['http://s3.amazonaws.com/bucket/key?X-Amz-Signature=SIG1', 'https://169.254.169.254/latest/meta-data/?sig=SIG2']) expect(refusal(prod, url)).not.toMatch(/SIG|bucket|latest/);

    const listed = new DownloadPolicy('https://cloudmanager.tableau.com', ['10.1.2.3', 'storage.internal:8443', '*.vpce.amazonaws.com']);
    expect(listed.check(new URL('https://10.1.2.3/x'), 'u')).toEqual({ checkAddresses: false });
    expect(listed.check(new URL('https://storage.internal:8443/x'), 'u')).toEqual({ checkAddresses: false });
    expect(listed.check(new URL('https://storage.internal/x'), 'u')).toEqual({ checkAddresses: true }); // another port: checked as usual
    expect(listed.check(new URL('https://bucket.vpce-0abc.s3.us-east-1.vpce.amazonaws.com/k'), 'u')).toEqual({ checkAddresses: false });
    expect(refusal(listed, 'https://10.1.2.4/x')).toMatch(/private address/);
    expect(refusal(listed, 'http://10.1.2.3/x')).toMatch(/plain http/); // listed, but still https only

    const local = new DownloadPolicy('http://127.0.0.1:8080');
    expect(local.allowHttp).toBe(true);
    expect(local.check(new URL('http://127.0.0.1:8080/storage/x'), 'u')).toEqual({ checkAddresses: false }); // the loopback TCM server's own origin
    expect(refusal(local, 'http://127.0.0.1:9999/latest/meta-data/')).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(refusal(local, 'http://127.0.0.2:8080/')).toMatch(/loopback/);

    expect(tcmSourceConfigSchema.safeParse({ type: 'tcm', tenantId: TENANT, patEnv: 'P', downloadHosts: ['bad host/'] }).success).toBe(false);
    expect(tcmSourceConfigSchema.safeParse({ type: 'tcm', tenantId: TENANT, patEnv: 'P', downloadHosts: ['a.example:443', '*.b.example', '[fd00::1]:9000'], maxResponseBytes: 1_000_000 }).success).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

describe('tcm source in process: redirects, response size, download URLs', () => {
  let server: TcmServer;
  let trap: TrapServer;
  const PAT = `TCMPAT-${randomBytes(10).toString('hex')}`;

  beforeEach(async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, sites: [SITE] });
    trap = await startTrapServer();
  });
  afterEach(async () => {
    await server.close();
    await trap.close();
  });

  function source(extra: Record<string, unknown> = {}): TcmSource {
    const config = tcmSourceConfigSchema.parse({ type: 'tcm', url: server.url, tenantId: TENANT, patEnv: 'TCM_PAT', scope: 'sites', sites: [SITE], maxRequestsPerSecond: 500, ...extra });
    return new TcmSource(config, { baseDir: process.cwd(), metrics, log: silentLogger(), env: { TCM_PAT: PAT }, retry: FAST_RETRY });
  }

  it('never follows a redirect of sign-in, listing or URL request: retried as an outage, nothing reaches the other host', async () => {
    const files = [file(Date.now() - HOUR, 3), file(Date.now() - HOUR + 1000, 2)];
    server.publish(...files);
    const to = (p: string) => ({ headers: { location: `${trap.url}${p}` } });
    server.respondNext('login', { status: 307, ...to('/api/v1/pat/login') }, { status: 308, ...to('/api/v1/pat/login') });
    server.respondNext('list', { status: 307, ...to(`/api/v1/tenants/${TENANT}/sites/${SITE}/activitylog`) });
    server.respondNext('urls', { status: 308, ...to(`/api/v1/tenants/${TENANT}/sites/${SITE}/activitylog`) });
    const src = source();
    const objects = await src.pending({ objects: {} }, new AbortController().signal);
    expect(objects.map((o) => o.key).sort()).toEqual(files.map((f) => f.path).sort());
    for (const o of objects) expect(await readObject(o)).toBe(files.find((f) => f.path === o.key)!.text);
    await src.close();
    // each redirect answered once, then the same call again to the TCM server
    const statuses = (kind: string) => server.requests.filter((r) => r.kind === kind).map((r) => r.status);
    expect(statuses('login')).toEqual([307, 308, 200]);
    expect(statuses('list')).toEqual([307, 200]);
    expect(statuses('urls')).toEqual([308, 200]);
    expect(trap.connections).toBe(0);
    expect(trap.requests).toEqual([]);
  });

  it('a redirect that persists is an error naming the target origin, not its query or the secrets', async () => {
    server.publish(file(Date.now() - HOUR, 1));
    const src = source();
    await src.pending({ objects: {} }, new AbortController().signal); // signed in
    server.respondNext('list', ...Array.from({ length: FAST_RETRY.maxAttempts }, () => ({ status: 307, headers: { location: `${trap.url}/steal?sig=LOCATION-SECRET` } })));
    const err = await src.pending({ objects: {} }, new AbortController().signal).then(
      () => new Error('listing succeeded'),
      (e: Error) => e,
    );
    expect(err.message).toMatch(new RegExp(`HTTP 307 redirect to ${trap.url.replace(/\./g, '\\.')} \\(not followed.*after ${FAST_RETRY.maxAttempts} attempts`));
    expect(err.message).not.toMatch(/LOCATION-SECRET|steal/);
    expect(err.message).not.toContain(PAT);
    expect(server.requests.filter((r) => r.kind === 'list' && r.status === 307)).toHaveLength(FAST_RETRY.maxAttempts);
    expect(trap.connections).toBe(0);

    // sign-in redirected for good: the same, and the PAT body never left for the other host
    const fresh = source();
    server.respondNext('login', ...Array.from({ length: FAST_RETRY.maxAttempts }, () => ({ status: 307, headers: { location: `${trap.url}/api/v1/pat/login` } })));
    await expect(fresh.pending({ objects: {} }, new AbortController().signal)).rejects.toThrow(/tcm sign-in failed: HTTP 307 redirect to http:\/\/127\.0\.0\.1:\d+ \(not followed/);
    expect(trap.saw(PAT)).toBe(false);
    expect(trap.connections).toBe(0);
    await src.close();
    await fresh.close();
  });

  it('an API answer larger than maxResponseBytes is an error, with or without Content-Length', async () => {
    server.publish(file(Date.now() - HOUR, 1));
    const big = JSON.stringify({ files: Array.from({ length: 2000 }, (_, i) => ({ path: `pod=p/siteLuid=${SITE}/eventType=x/${i}-${'a'.repeat(40)}.txt`, size: 1 })) });
    expect(big.length).toBeGreaterThan(64 * 1024);
    const src = source({ maxResponseBytes: 64 * 1024 });
    server.respondNext('list', { status: 200, body: big }, { status: 200, headers: { 'transfer-encoding': 'chunked' }, body: big });
    for (let i = 0; i < 2; i++) {
      await expect(src.pending({ objects: {} }, new AbortController().signal)).rejects.toThrow(/the response \(HTTP 200\) is larger than maxResponseBytes \(65536 bytes\)/);
    }
    expect(server.requests.filter((r) => r.kind === 'list')).toHaveLength(2); // not retried: the same answer would come back
    // the default (4 MB) reads the same answer
    server.respondNext('list', { status: 200, body: big });
    const objects = await source().pending({ objects: {} }, new AbortController().signal);
    expect(objects.length).toBe(2000);
    await src.close();
  });

  it('download URLs to a metadata server, data:, a loopback name or through a redirect hop are refused without a connection; asked for again once, then a permanent error', async () => {
    const now = Date.now();
    const [metadata, dataUrl, byName, hopAlways, hopOnce, plain] = [0, 1, 2, 3, 4, 5].map((i) => file(now - HOUR + i * 1000, 2));
    server.publish(metadata!, dataUrl!, byName!, hopAlways!, hopOnce!, plain!);
    const trapPort = new URL(trap.url).port;
    server.overrideDownloadUrl((path, issued, signed) => {
      if (path === metadata!.path) return `${trap.url}/latest/meta-data/iam/security-credentials/role?X-Amz-Signature=SIG-META`;
      if (path === dataUrl!.path) return `data:application/x-ndjson;base64,${Buffer.from(dataUrl!.text).toString('base64')}`;
      if (path === byName!.path) return `http://localhost:${trapPort}/file?X-Amz-Signature=SIG-NAME`;
      if (path === hopAlways!.path) return `${server.storageUrl}/redirect?to=${encodeURIComponent(`${trap.url}/latest/meta-data/`)}`;
      if (path === hopOnce!.path && issued === 1) return `${server.storageUrl}/redirect?to=${encodeURIComponent(`${trap.url}/x`)}`;
      return signed;
    });
    const src = source();
    const objects = await src.pending({ objects: {} }, new AbortController().signal);
    const byKey = new Map(objects.map((o) => [o.key, o]));
    expect(byKey.size).toBe(6);

    // read in the listing's order, as the pipeline does (URLs are asked for in that order)
    const refusedPaths = new Set([metadata!, dataUrl!, byName!, hopAlways!].map((f) => f.path));
    const reasons = new Map<string, string>();
    const texts = new Map<string, string>();
    for (const o of objects) {
      if (!refusedPaths.has(o.key)) {
        texts.set(o.key, await readObject(o));
        continue;
      }
      const err = await readError(o);
      expect(err.permanent, err.message).toBe(true);
      expect(err.message.startsWith(`download of ${o.key} refused twice`), err.message).toBe(true);
      expect(err.message).not.toMatch(/SIG-|X-Amz-Signature|meta-data|base64/);
      reasons.set(o.key, err.message);
    }
    expect(reasons.get(metadata!.path)).toMatch(new RegExp(`download URL http://127\\.0\\.0\\.1:${trapPort} refused: 127\\.0\\.0\\.1 is a loopback address`));
    expect(reasons.get(dataUrl!.path)).toMatch(/the scheme data: is not fetched/);
    expect(reasons.get(byName!.path)).toMatch(new RegExp(`download URL http://localhost:${trapPort} refused: localhost resolves to (127\\.0\\.0\\.1|::1), a loopback address`));
    expect(reasons.get(hopAlways!.path)).toMatch(new RegExp(`redirect hop 1 http://127\\.0\\.0\\.1:${trapPort} refused`));
    // a refused first URL, then a good one: read; and the file with its signed URL
    expect(texts.get(hopOnce!.path)).toBe(hopOnce!.text);
    expect(texts.get(plain!.path)).toBe(plain!.text);
    await src.close();

    // each refused file's URL was asked for exactly twice (the batch, then once more)
    const asked = (p: string) => server.requests.filter((r) => r.kind === 'urls' && r.files?.includes(p)).length;
    for (const f of [metadata!, dataUrl!, byName!, hopAlways!, hopOnce!]) expect(asked(f.path), f.path).toBe(2);
    expect(asked(plain!.path)).toBe(1);
    expect(server.requests.filter((r) => r.kind === 'redirect')).toHaveLength(3); // hopAlways twice, hopOnce once
    expect(trap.connections).toBe(0);
    expect(trap.requests).toEqual([]);
  });

  it('a download follows at most MAX_DOWNLOAD_REDIRECTS hops, and one whose headers never come times out and is retried', async () => {
    const client = new TcmClient({ baseUrl: server.url, tenantId: TENANT, readPat: async () => PAT, maxRequestsPerSecond: 500, metrics, log: silentLogger(), retry: { ...FAST_RETRY, maxAttempts: 2 } });
    const chain = (hops: number): string => {
      let url = `${server.url}/storage/none?X-Amz-Signature=nothing`;
      for (let i = 0; i < hops; i++) url = `${server.url}/redirect?to=${encodeURIComponent(url)}`;
      return url;
    };
    const signal = new AbortController().signal;
    await expect(client.download(chain(MAX_DOWNLOAD_REDIRECTS + 1), 'f', signal)).rejects.toThrow(new RegExp(`download of f refused: more than ${MAX_DOWNLOAD_REDIRECTS} redirects`));
    expect(server.requests.filter((r) => r.kind === 'redirect')).toHaveLength(MAX_DOWNLOAD_REDIRECTS + 1);
    // within the limit the chain is followed to its end (here an unknown signature: 403)
    await expect(client.download(chain(MAX_DOWNLOAD_REDIRECTS), 'f', signal)).rejects.toMatchObject({ operation: 'download', status: 403 });

    const silent = http.createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    let seen = 0;
    silent.on('request', () => seen++);
    const slow = new TcmClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, tenantId: TENANT, readPat: async () => PAT, maxRequestsPerSecond: 500, metrics, log: silentLogger(), retry: { ...FAST_RETRY, maxAttempts: 2 }, requestTimeoutMs: 300 });
    await expect(slow.download(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/storage/x`, 'f', signal)).rejects.toThrow(/download of f failed after 2 attempts: network error: timed out/);
    expect(seen).toBe(2);
    slow.close();
    client.close();
    silent.closeAllConnections();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  it('downloadHosts lets a trusted loopback storage host through (and redirect hops to it); without it the same URLs are refused', async () => {
    await server.close();
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, sites: [SITE], separateStorage: true });
    const files = [file(Date.now() - HOUR, 2), file(Date.now() - HOUR + 1000, 3)];
    server.publish(...files);
    const storage = new URL(server.storageUrl);
    // the second file's URL redirects (on the storage host) to its signed URL
    server.overrideDownloadUrl((path, _n, signed) => (path === files[1]!.path ? `${server.storageUrl}/redirect?to=${encodeURIComponent(signed)}` : undefined));

    const refused = source();
    for (const o of await refused.pending({ objects: {} }, new AbortController().signal)) {
      expect((await readError(o)).message).toMatch(new RegExp(`download URL http://127\\.0\\.0\\.1:${storage.port} refused: 127\\.0\\.0\\.1 is a loopback address`));
    }
    await refused.close();
    expect(server.requests.filter((r) => r.kind === 'download' || r.kind === 'redirect')).toEqual([]);

    const trusted = source({ downloadHosts: [`127.0.0.1:${storage.port}`] });
    const objects = await trusted.pending({ objects: {} }, new AbortController().signal);
    for (const o of objects) expect(await readObject(o)).toBe(files.find((f) => f.path === o.key)!.text);
    await trusted.close();
    expect(server.requests.filter((r) => r.kind === 'download').every((r) => r.status === 200 && !r.hadSessionHeader)).toBe(true);
    expect(server.requests.filter((r) => r.kind === 'redirect')).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------

describe('tcm source through the CLI: refused downloads are dead-lettered, the rest delivered', () => {
  let server: TcmServer;
  let trap: TrapServer;
  let receiver: OtlpReceiver;
  let work: string;
  const PAT = `TCMPAT-${randomBytes(12).toString('hex')}-SECRET`;

  beforeEach(async () => {
    receiver = await startOtlpReceiver();
    trap = await startTrapServer();
    work = tempDir('tao-tcm-sec-');
  });
  afterEach(async () => {
    await receiver.close();
    await trap.close();
    await server?.close();
  });

  it('redirected API calls retried, refused URLs re-requested once then dead-lettered with the reason, no secret anywhere, the trap never contacted', async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, sites: [SITE], separateStorage: true });
    const now = Date.now();
    const good = [file(now - 2 * HOUR, 4), file(now - 2 * HOUR + 1000, 3)];
    const bad = [file(now - HOUR, 2), file(now - HOUR + 1000, 2), file(now - HOUR + 2000, 2)];
    server.publish(...good, ...bad);
    const storagePort = new URL(server.storageUrl).port;
    server.overrideDownloadUrl((path, _n, signed) => {
      if (path === good[1]!.path) return `${server.storageUrl}/redirect?to=${encodeURIComponent(signed)}`; // an allowed hop
      if (path === bad[0]!.path) return `${trap.url}/latest/meta-data/iam/security-credentials/?X-Amz-Signature=SIG-META`;
      if (path === bad[1]!.path) return `data:application/x-ndjson,${encodeURIComponent(bad[1]!.text)}`;
      if (path === bad[2]!.path) return `${server.storageUrl}/redirect?to=${encodeURIComponent(`${trap.url}/hop?X-Amz-Signature=SIG-HOP`)}`;
      return undefined;
    });
    const redirect = { status: 307, headers: { location: `${trap.url}/api/v1/pat/login` } };
    server.respondNext('login', redirect);
    server.respondNext('list', { ...redirect, status: 308 });
    server.respondNext('urls', redirect);

    const config = join(work, 'config.yaml');
    const src = { type: 'tcm', url: server.url, tenantId: TENANT, patEnv: 'TCM_PAT', scope: 'sites', sites: [SITE], maxRequestsPerSecond: 100, since: new Date(now - 3 * HOUR).toISOString(), downloadHosts: [`127.0.0.1:${storagePort}`] };
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { batchSize: 25, retryFor: 10s }',
        'tenants:',
        '  - id: acme',
        `    sources: [ ${JSON.stringify(src)} ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );
    const res = await runCli(['run', '--once', '--config', config], { env: { TCM_PAT: PAT, LOG_LEVEL: 'debug' } });
    expect(res.code, res.stderr).toBe(0);

    // every record of the good files, once; none of the refused ones
    const seqs = receiver.records().map((r) => Number(r.attributes['tableau.test_seq']));
    expect(seqs.sort((a, b) => a - b)).toEqual(good.flatMap((f) => f.seqs).sort((a, b) => a - b));

    // one dead letter per refused file: the rest of the object from line 1, with the reason
    const dir = join(work, 'state', 'acme', 'dead-letter');
    const letters = existsSync(dir) ? readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>) : [];
    expect(letters.map((l) => l.object).sort()).toEqual(bad.map((f) => f.path).sort());
    const reason = (f: { path: string }) => String(letters.find((l) => l.object === f.path)!.reason);
    expect(letters.every((l) => l.kind === 'line' && l.line === 1)).toBe(true);
    expect(reason(bad[0]!)).toMatch(/object unreadable after line 0: download of .* refused twice .*: download URL http:\/\/127\.0\.0\.1:\d+ refused: 127\.0\.0\.1 is a loopback address/);
    expect(reason(bad[1]!)).toMatch(/the scheme data: is not fetched/);
    expect(reason(bad[2]!)).toMatch(/redirect hop 1 http:\/\/127\.0\.0\.1:\d+ refused: 127\.0\.0\.1 is a loopback address/);

    // each refused file was asked for twice (the batch, then once more); the redirected calls were sent again
    for (const f of bad) expect(server.requests.filter((r) => r.kind === 'urls' && r.status === 200 && r.files?.includes(f.path)), f.path).toHaveLength(2);
    for (const kind of ['login', 'list', 'urls'] as const) expect(server.requests.filter((r) => r.kind === kind).map((r) => r.status).slice(0, 2), kind).toEqual([kind === 'list' ? 308 : 307, 200]);
    expect(server.requests.filter((r) => r.kind === 'download').every((r) => !r.hadSessionHeader)).toBe(true);

    // the other host never saw a connection, so neither the PAT nor a session token
    expect(trap.connections).toBe(0);
    expect(trap.requests).toEqual([]);
    const everything = res.stdout + res.stderr + JSON.stringify(letters);
    for (const s of [PAT, 'SIG-META', 'SIG-HOP', 'X-Amz-Signature']) expect(everything, s).not.toContain(s);
  });
});
