/**
 * The TCM source's credentials and downloads, on the real CLI:
 *
 * - tcm-redirect: the TCM server answers sign-in, listings and download-URL requests with
 *   307/308 to another host (a trap server on 127.0.0.1 that records every connection, header
 *   and body). The redirects are outages: retried, then every record arrives once; the trap gets
 *   no connection, so neither the PAT nor a session token;
 * - ssrf: the API hands out download URLs to a "metadata" server (the trap), `data:` URLs, a
 *   loopback host by name, and a storage redirect to the trap. None is fetched (the trap gets no
 *   connection); each such file's URL is asked for once more, then the file is dead-lettered
 *   with the reason; the other files (one through an allowed redirect hop) arrive.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { startTcmServer, startTrapServer } from '../../../test/support/tcm-server.js';
import { judge, logLines, readDeadLetters, resultOf, type Scenario } from '../lib/harness.js';

const TENANT = 'tenant-1';
const SITE = 'b3a1c7e0-4444-4a2b-9c3d-000000000004';

function siteFile(first: number, n: number, availableAt: number): { site: string; path: string; text: string; availableAt: number; seqs: number[] } {
  const seqs = Array.from({ length: n }, (_, i) => first + i);
  const text = seqs.map((s, i) => JSON.stringify({ eventTime: `2026-11-29T03:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z`, siteLuid: SITE, actorUserLuid: 'u-1', eventType: 'login_authentication', testSeq: s })).join('\n') + '\n';
  return { site: SITE, path: `pod=prod-a/siteLuid=${SITE}/eventType=login_authentication/${randomUUID()}.txt`, text, availableAt, seqs };
}

export const securityTcmRedirect: Scenario = {
  name: 'security-tcm-redirect',
  title: 'TCM sign-in, listings and URL requests redirected to another host: not followed, retried, nothing reaches that host',
  async run(ctx, { short }) {
    const pat = `SEEDED-TCM-PAT-${randomBytes(9).toString('hex')}`;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const trap = await startTrapServer();
    ctx.defer(() => trap.close());
    const tcm = await startTcmServer({ pat, tenantId: TENANT, sites: [SITE], pageSize: 5 });
    ctx.defer(() => tcm.close());
    const now = Date.now();
    const files = Array.from({ length: short ? 12 : 40 }, (_, i) => siteFile(600_000 + i * 100, short ? 20 : 50, now - 3_600_000 + i * 1000));
    tcm.publish(...files);
    const to = (status: number) => ({ status, headers: { location: `${trap.url}/api/v1/tenants/${TENANT}/sites/${SITE}/activitylog?X-Steal=1` } });
    tcm.respondNext('login', to(307), { status: 308, headers: { location: `${trap.url}/api/v1/pat/login` } });
    tcm.respondNext('list', to(307), to(308), to(307));
    tcm.respondNext('urls', to(308), to(307));

    const work = ctx.dir('work');
    const state = `${work}/state`;
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        {
          id: 'redirected',
          sources: [{ type: 'tcm', url: tcm.url, tenantId: TENANT, patEnv: 'FAULTS_TCM_PAT', scope: 'sites', sites: [SITE], since: new Date(now - 2 * 3_600_000).toISOString(), maxRequestsPerSecond: 50 }],
          destinations: [{ type: 'otlp', endpoint: receiver.url }],
        },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', config], { FAULTS_TCM_PAT: pat, LOG_LEVEL: 'debug' }, 180_000);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}${r.timedOut ? ' (timed out)' : ''}`);
    if (trap.connections > 0) extra.push(`the other host got ${trap.connections} connections and ${trap.requests.length} requests`);
    if (trap.saw(pat)) extra.push('the PAT reached the other host');
    if (trap.requests.some((q) => q.headers['x-tableau-session-token'] !== undefined)) extra.push('a session token reached the other host');
    const redirected = tcm.requests.filter((q) => q.status === 307 || q.status === 308);
    if (redirected.length !== 7) extra.push(`${redirected.length} redirects answered, 7 queued (the scenario did not run as planned)`);
    const retried = logLines(ctx.allOutput(), 'tcm request failed; retrying').filter((l) => /redirect to http:\/\/127\.0\.0\.1:\d+ \(not followed/.test(String(l.reason)));
    if (retried.length !== 7) extra.push(`${retried.length} "retrying" log lines name the redirect target (want 7)`);
    if (ctx.allOutput().includes(pat)) extra.push('the PAT is in the output');
    if (ctx.allOutput().includes('X-Steal')) extra.push("a redirect's query is in the output");
    const valid = files.flatMap((f) => f.seqs);
    const j = judge(receiver.records(), readDeadLetters(state, 'redirected'), { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [
      `${redirected.length} redirects (2 sign-in, 3 listing, 2 URL requests) retried as outages, each logged with its target origin`,
      `other host: ${trap.connections} connections, ${trap.requests.length} requests`,
    ]);
  },
};

export const securitySsrf: Scenario = {
  name: 'security-ssrf',
  title: 'download URLs to a metadata server, data:, loopback names and redirect hops to them: never fetched, asked again once, then dead-lettered',
  async run(ctx, { short }) {
    const pat = `SEEDED-TCM-PAT-${randomBytes(9).toString('hex')}`;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const metadata = await startTrapServer();
    ctx.defer(() => metadata.close());
    const tcm = await startTcmServer({ pat, tenantId: TENANT, sites: [SITE] });
    ctx.defer(() => tcm.close());
    const now = Date.now();
    const per = short ? 50 : 500;
    const good = Array.from({ length: short ? 4 : 10 }, (_, i) => siteFile(700_000 + i * 1000, per, now - 3_600_000 + i * 1000));
    const kinds = ['metadata', 'data-url', 'loopback-name', 'redirect-hop'] as const;
    const bad = kinds.map((k, i) => ({ kind: k, ...siteFile(790_000 + i * 1000, per, now - 1_800_000 + i * 1000) }));
    tcm.publish(...good, ...bad);
    const metaPort = new URL(metadata.url).port;
    const signature = 'SEEDED-SIGNATURE';
    tcm.overrideDownloadUrl((path, _issued, signed) => {
      const b = bad.find((f) => f.path === path);
      if (path === good[1]!.path) return `${tcm.storageUrl}/redirect?to=${encodeURIComponent(signed)}`; // a hop that stays on the storage host: allowed
      if (!b) return undefined;
      switch (b.kind) {
        case 'metadata':
          return `${metadata.url}/latest/meta-data/iam/security-credentials/tao-role?X-Amz-Signature=${signature}`;
        case 'data-url':
          return `data:application/x-ndjson;base64,${Buffer.from(b.text).toString('base64')}`;
        case 'loopback-name':
          return `http://localhost:${metaPort}/latest/meta-data/?X-Amz-Signature=${signature}`;
        case 'redirect-hop':
          return `${tcm.storageUrl}/redirect?to=${encodeURIComponent(`${metadata.url}/latest/meta-data/?X-Amz-Signature=${signature}`)}`;
      }
    });

    const work = ctx.dir('work');
    const state = `${work}/state`;
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        {
          id: 'ssrf',
          sources: [{ type: 'tcm', url: tcm.url, tenantId: TENANT, patEnv: 'FAULTS_TCM_PAT', scope: 'sites', sites: [SITE], since: new Date(now - 2 * 3_600_000).toISOString(), maxRequestsPerSecond: 50 }],
          destinations: [{ type: 'otlp', endpoint: receiver.url }],
        },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', config], { FAULTS_TCM_PAT: pat, LOG_LEVEL: 'debug' }, 180_000);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}${r.timedOut ? ' (timed out)' : ''}`);
    if (metadata.connections > 0) extra.push(`the metadata server got ${metadata.connections} connections and ${metadata.requests.length} requests`);
    for (const b of bad) {
      const asked = tcm.requests.filter((q) => q.kind === 'urls' && q.status === 200 && q.files?.includes(b.path)).length;
      if (asked !== 2) extra.push(`${b.kind}: its URL was asked for ${asked} times (want 2: once more after the refusal)`);
    }
    if (!tcm.requests.some((q) => q.kind === 'redirect' && q.status === 302)) extra.push('no storage redirect was followed (the allowed hop was not exercised)');
    const letters = readDeadLetters(state, 'ssrf');
    const output = ctx.allOutput() + JSON.stringify(letters);
    if (output.includes(signature)) extra.push('a pre-signed URL query is in the output or a dead letter');
    if (output.includes(pat)) extra.push('the PAT is in the output or a dead letter');
    const reasons: Record<(typeof kinds)[number], RegExp> = {
      metadata: /download URL http:\/\/127\.0\.0\.1:\d+ refused: 127\.0\.0\.1 is a loopback address/,
      'data-url': /the scheme data: is not fetched/,
      'loopback-name': /localhost resolves to \S+, a loopback address/,
      'redirect-hop': /redirect hop 1 http:\/\/127\.0\.0\.1:\d+ refused: 127\.0\.0\.1 is a loopback address/,
    };
    const valid = good.flatMap((f) => f.seqs);
    const j = judge(receiver.records(), letters, {
      valid,
      bad: bad.map((b) => ({ label: b.kind, object: b.path, line: 1, reason: reasons[b.kind] })),
      dupBound: 0,
      rssLimitMb: 400,
    }, ctx.peakRssMb);
    return resultOf(j, valid.length + bad.length * per, ctx.peakRssMb, extra, [
      `${bad.length} refused files (metadata server, data:, localhost, redirect hop) dead-lettered after one fresh URL each`,
      `metadata server: ${metadata.connections} connections`,
      `${good.length} files delivered, one through an allowed storage redirect`,
    ]);
  },
};
