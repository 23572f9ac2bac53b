/**
 * `type: tcm` against a local Tableau Cloud Manager API (test/support/tcm-server.ts) on
 * 127.0.0.1: in-process for the checkpoint rules (window advance, crash mid-window, pruning,
 * late files) and through the real CLI to a real OTLP receiver for delivery, the failure modes
 * (expired sessions, 429 + Retry-After, page-token chains, expired download URLs, windows the
 * server refuses, malformed lines), restarts, the rate limit, and the PAT never showing up.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTcmServer, type TcmServer, type TcmServerFile } from './support/tcm-server.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { TcmSource, tcmSourceConfigSchema, MAX_WINDOW_MS } from '../src/sources/tcm/tcm-source.js';
import { sourceConfigSchema } from '../src/sources/source-registry.js';
import type { SourceCheckpoint } from '../src/pipeline/checkpoint-store.js';
import { silentLogger } from '../src/daemon/logger.js';
import type { SourceMetrics } from '../src/daemon/metrics.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

const TENANT = 'db7fad32-0175-431a-b176-7a71be70c2ac';
const SITES = ['46a64a61-5e8c-4e4a-b2e0-76740ab0d02b', 'd85a2546-6ae7-4110-ba5f-ef5abae47d59'];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const FAST_RETRY = { initialDelayMs: 20, maxDelayMs: 200, maxElapsedMs: Infinity, maxAttempts: 5 };

const pad = (n: number): string => String(n).padStart(2, '0');
function partition(t: number): string {
  const d = new Date(t);
  return `y=${d.getUTCFullYear()}/m=${pad(d.getUTCMonth() + 1)}/d=${pad(d.getUTCDate())}/h=${pad(d.getUTCHours())}`;
}
/** eventTime with microseconds, as Tableau writes them. */
function eventTime(t: number, micros: number): string {
  return new Date(t).toISOString().replace(/\.(\d{3})Z$/, (_, ms: string) => `.${ms}${String(micros % 1000).padStart(3, '0')}Z`);
}

let seq = 0;

interface Published {
  file: TcmServerFile;
  /** eventIds of tenant records, testSeqs of site records (only the valid lines). */
  eventIds: string[];
  seqs: number[];
  bad: number;
}

const TENANT_TYPES: Record<string, () => Record<string, unknown>> = {
  user_login_create_session: () => ({ idpId: 'tableau-id', idpName: 'TableauID', newSessionId: randomUUID(), expiresAt: new Date(Date.now() + 2 * HOUR).toISOString() }),
  personal_access_token_login: () => ({ tokenId: randomUUID(), tokenName: 'activity-forwarder', newSessionId: randomUUID() }),
  create_site: () => ({ siteId: SITES[0], siteName: 'Finance', siteUri: 'finance', podUri: 'prod-useast-b' }),
  update_user_site_role: () => ({ userId: randomUUID(), userName: 'grace.hopper', email: 'grace.hopper@acme.example', oldRole: 'Viewer', newRole: 'Creator', oldIdp: 'TableauID', newIdp: 'TableauID', siteId: SITES[1] }),
  tcm_activity_log_access: () => ({ eventTypeAccessed: 'user_login_create_session', eventProcessedTimeStart: '2026-11-24T00:00:00Z', eventProcessedTimeEnd: '2026-11-25T00:00:00Z' }),
  revoke_personal_access_token: () => ({ tokenId: randomUUID(), tokenName: 'old-token', eventOutcome: 'unauthorized', eventOutcomeReason: 'caller is not a tenant admin' }),
};

function tenantFile(type: string, availableAt: number, records: number, extra: Partial<TcmServerFile> = {}): Published {
  const eventIds: string[] = [];
  const lines: string[] = [];
  for (let i = 0; i < records; i++) {
    const eventId = randomUUID();
    eventIds.push(eventId);
    lines.push(
      JSON.stringify({
        eventId,
        eventType: type,
        eventVersion: '1.0',
        eventTime: eventTime(availableAt - 120_000 + i * 1000, seq++),
        eventProcessedTime: new Date(availableAt).toISOString(),
        eventOutcome: 'success',
        traceUuid: randomUUID(),
        tenantId: TENANT,
        tenantName: 'Acme Corporation',
        tenantUri: 'acmecorp',
        initiatingUserId: '9c426e1a-9ae6-49b2-acbd-0f832008ae56',
        initiatingUserEmail: 'claude.shannon@acme.example',
        initiatingUserDisplayName: 'Claude Shannon',
        initiatingUserRole: 'TenantAdmin',
        initiatingUserIpAddress: `192.0.2.${(seq % 250) + 1}`,
        initiatingUserAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
        initiatingUrl: 'https://cloudmanager.tableau.com/api/v1/pat/login',
        initiatingSessionId: null,
        ...TENANT_TYPES[type]!(),
      }),
    );
  }
  const stamp = new Date(availableAt).toISOString().slice(0, 19).replace(/[-T:]/g, '-');
  const path = `tenant=${TENANT}/${partition(availableAt)}/eventType=${type}/activity-log-1-${stamp}-${randomUUID()}.txt`;
  return { file: { path, text: lines.join('\n') + '\n', availableAt, ...extra }, eventIds, seqs: [], bad: 0 };
}

function siteFile(site: string, type: string, availableAt: number, records: number, extra: Partial<TcmServerFile> & { badLines?: number } = {}): Published {
  const { badLines = 0, ...fileExtra } = extra;
  const seqs: number[] = [];
  const lines: string[] = [];
  for (let i = 0; i < records; i++) {
    const s = seq++;
    seqs.push(s);
    lines.push(
      JSON.stringify({
        eventTime: eventTime(availableAt - 300_000 + i * 1000, s),
        actorUserLuid: `a1b2c3d4-0000-4000-8000-${String(s % 7).padStart(12, '0')}`,
        initiatingUserLuid: `a1b2c3d4-0000-4000-8000-${String(s % 7).padStart(12, '0')}`,
        siteLuid: site,
        actorUserId: 100 + (s % 7),
        siteRoleId: 3,
        licensingRoleName: 'Explorer',
        eventOutcome: type === 'login_authentication' ? null : 'success',
        ...(type === 'login_authentication' ? { status: 'success', authenticationType: 'SAML' } : { viewLuid: randomUUID(), workbookLuid: randomUUID(), projectLuid: randomUUID() }),
        testSeq: s,
      }),
    );
    if (i === 1) for (let b = 0; b < badLines; b++) lines.push(b % 2 === 0 ? '{"eventTime": "2026-11-24T23:01:33Z", "truncated' : 'not json at all');
  }
  const path = `pod=prod-useast-b/siteLuid=${site}/${partition(availableAt)}/eventType=${type}/${randomUUID()}.txt`;
  return { file: { site, path, text: lines.join('\n') + '\n', availableAt, ...fileExtra }, eventIds: [], seqs, bad: badLines };
}

function publish(server: TcmServer, files: Published[]): Published[] {
  server.publish(...files.map((f) => f.file));
  return files;
}

const recordingMetrics = (): SourceMetrics & { counts: Map<string, number> } => {
  const counts = new Map<string, number>();
  return { counts, request: (op) => counts.set(op, (counts.get(op) ?? 0) + 1), newestPartition: () => undefined };
};

// ---------------------------------------------------------------------------------------------

describe('tcm source config', () => {
  it('validates the options strictly', () => {
    const ok = sourceConfigSchema.parse({ type: 'tcm', tenantId: TENANT, patEnv: 'TCM_PAT' });
    expect(ok).toMatchObject({ type: 'tcm', url: 'https://cloudmanager.tableau.com', scope: 'tenant', pollInterval: 300_000, maxRequestsPerSecond: 5 });
    const bad = (v: Record<string, unknown>) => tcmSourceConfigSchema.safeParse({ type: 'tcm', tenantId: TENANT, ...v }).success;
    expect(bad({})).toBe(false); // no PAT
    expect(bad({ patEnv: 'A', patFile: './pat' })).toBe(false); // both
    expect(bad({ patEnv: 'A', bogus: 1 })).toBe(false); // strict
    expect(bad({ patEnv: 'A', sites: ['x'] })).toBe(false); // sites with scope tenant
    expect(bad({ patEnv: 'A', since: 'yesterday' })).toBe(false);
    expect(bad({ patEnv: 'A', scope: 'both', sites: ['x'], since: '2026-01-01T00:00:00Z', until: '2026-02-01', pollInterval: '1m', eventTypes: ['create_site'] })).toBe(true);
  });
});

describe('tcm source in process: checkpoint and windows', () => {
  let server: TcmServer;
  const PAT = `tcmpat-${randomBytes(8).toString('hex')}`;
  beforeEach(async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, pageSize: 2 });
  });
  afterEach(async () => {
    await server.close();
  });

  function source(extra: Record<string, unknown> = {}, metrics: SourceMetrics = recordingMetrics()): TcmSource {
    const config = tcmSourceConfigSchema.parse({ type: 'tcm', url: server.url, tenantId: TENANT, patEnv: 'TCM_PAT', maxRequestsPerSecond: 200, ...extra });
    return new TcmSource(config, { baseDir: process.cwd(), metrics, log: silentLogger(), env: { TCM_PAT: PAT }, retry: FAST_RETRY });
  }

  /** What the pipeline does: read each object to its end, then mark it done. Returns the decoded text per key. */
  async function readAll(src: TcmSource, cp: SourceCheckpoint, only?: (key: string) => boolean): Promise<Map<string, string>> {
    const objects = await src.pending(cp, new AbortController().signal);
    const out = new Map<string, string>();
    for (const o of objects) {
      if (only && !only(o.key)) continue;
      const chunks: Buffer[] = [];
      for await (const c of o.open(new AbortController().signal)) chunks.push(Buffer.from(c));
      let bytes = Buffer.concat(chunks);
      if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
      const text = bytes.toString('utf8');
      out.set(o.key, text);
      cp.objects[o.key] = { line: text.trim().split('\n').length, done: true };
    }
    return out;
  }

  /** Every file available before a scope's position must be done (or pruned after being done). */
  function checkInvariant(cp: SourceCheckpoint, delivered: Set<string>, key = 'tenant'): void {
    const pos = Date.parse(cp.position![key] as string);
    for (const f of server.files()) if ((f.site ?? 'tenant') === (key === 'tenant' ? 'tenant' : key.slice(5)) && f.availableAt < pos) expect(delivered.has(f.path), `${f.path} before the position`).toBe(true);
  }

  it('advances only over finished windows, survives a crash mid-window, prunes old files, and finds late files', async () => {
    const now = Date.now();
    const since = now - 10 * DAY;
    const a = publish(server, [tenantFile('create_site', now - 8 * DAY, 2), tenantFile('user_login_create_session', now - 4 * DAY, 3, { gzip: true })]);
    const b = publish(server, [tenantFile('personal_access_token_login', now - 2 * DAY, 2), tenantFile('update_user_site_role', now - 50 * 60_000, 1), tenantFile('tcm_activity_log_access', now - 20 * 60_000, 1)]);
    const delivered = new Set<string>();
    const cp: SourceCheckpoint = { objects: {} };

    // 1st poll: everything listed; nothing done yet → the position is the start (persisted)
    const s1 = source({ since: new Date(since).toISOString() });
    const first = await s1.pending(cp, new AbortController().signal);
    expect(first.map((o) => o.key).sort()).toEqual([...a, ...b].map((p) => p.file.path).sort());
    expect(first.every((o) => o.identity === `tcm:${TENANT}:${o.key}` && o.resumeAfterLine === 0)).toBe(true);
    expect(Date.parse(cp.position!.tenant as string)).toBe(Math.floor(since / 1000) * 1000);
    // no window longer than 7 days, and page chains followed (server pages of 2)
    const lists = server.requests.filter((r) => r.kind === 'list');
    expect(Math.max(...lists.map((r) => r.windowMs!))).toBe(MAX_WINDOW_MS);
    expect(lists.some((r) => r.query.pageToken)).toBe(true);

    // read the files of the first window only; the second window's first file partly ("crash")
    const w1 = a.map((p) => p.file.path);
    await readAll(s1, cp, (k) => w1.includes(k));
    w1.forEach((k) => delivered.add(k));
    cp.objects[b[0]!.file.path] = { line: 1 };
    const s2 = source({ since: new Date(since).toISOString() }); // a new process
    const second = await s2.pending(cp, new AbortController().signal);
    expect(second.map((o) => o.key).sort()).toEqual(b.map((p) => p.file.path).sort());
    expect(second.find((o) => o.key === b[0]!.file.path)!.resumeAfterLine).toBe(1);
    const pos2 = Date.parse(cp.position!.tenant as string);
    expect(pos2).toBeGreaterThan(since);
    expect(pos2).toBeLessThanOrEqual(b[0]!.file.availableAt); // never past an unfinished file
    checkInvariant(cp, delivered);

    // read the rest; the next listing starts at position - overlap: the first window's files are forgotten
    const texts = await readAll(s2, cp);
    expect(texts.size).toBe(3);
    expect(Object.keys(cp.objects)).not.toContain(a[0]!.file.path);
    expect(Object.keys(cp.objects)).not.toContain(a[1]!.file.path);
    b.forEach((p) => delivered.add(p.file.path));
    expect(texts.get(b[0]!.file.path)).toBe(b[0]!.file.text);
    const third = await s2.pending(cp, new AbortController().signal);
    expect(third).toEqual([]);
    const pos3 = Date.parse(cp.position!.tenant as string);
    expect(pos3).toBeGreaterThan(now - 16 * 60_000); // now - overlap (15 min)
    checkInvariant(cp, delivered);
    const late = publish(server, [tenantFile('revoke_personal_access_token', pos3 - 5 * 60_000, 2)]);
    const fourth = await readAll(s2, cp);
    expect([...fourth.keys()]).toEqual([late[0]!.file.path]);
    delivered.add(late[0]!.file.path);

    // bounded state: only files listed from position - overlap on (the edge) remain
    await s2.pending(cp, new AbortController().signal);
    const pos = Date.parse(cp.position!.tenant as string);
    const kept = Object.keys(cp.objects);
    for (const k of kept) expect(server.files().find((f) => f.path === k)!.availableAt).toBeGreaterThanOrEqual(pos - 15 * 60_000);
    expect(kept.length).toBeLessThanOrEqual(3);
    expect(Object.values(cp.objects).every((p) => p.done)).toBe(true);
  });

  it('renews an expired session, re-requests refused download URLs, and reports its requests as metrics', async () => {
    const now = Date.now();
    const files = publish(server, [
      tenantFile('create_site', now - 3 * HOUR, 2),
      tenantFile('user_login_create_session', now - 2 * HOUR, 2, { gzip: true }),
      tenantFile('personal_access_token_login', now - HOUR, 2, { gzip: true, contentEncodingGzip: true }),
    ]);
    server.expireSessionsAfterCalls(2);
    server.refuseFirstDownload((p) => p === files[1]!.file.path);
    const metrics = recordingMetrics();
    const src = source({}, metrics);
    const cp: SourceCheckpoint = { objects: {} };
    const texts = await readAll(src, cp);
    for (const f of files) expect(texts.get(f.file.path)).toBe(f.file.text);
    expect(server.logins()).toBeGreaterThanOrEqual(2);
    expect(src.client.logins).toBe(server.logins());
    const downloads = server.requests.filter((r) => r.kind === 'download');
    expect(downloads.filter((r) => r.status === 403)).toHaveLength(1);
    expect(downloads.every((r) => !r.hadSessionHeader)).toBe(true); // the session token never goes to the storage host
    expect(server.requests.filter((r) => r.kind === 'urls' && r.status === 200).length).toBe(2); // one batch, one fresh URL
    expect(Object.fromEntries(metrics.counts)).toEqual({
      login: server.requests.filter((r) => r.kind === 'login').length,
      list: server.requests.filter((r) => r.kind === 'list').length,
      urls: server.requests.filter((r) => r.kind === 'urls').length,
      download: downloads.length,
    });
  });

  it('halves a window the server refuses (400), down to 1 hour, then surfaces the error', async () => {
    await server.close();
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, maxWindowMs: 2 * DAY });
    const now = Date.now();
    const files = publish(server, [tenantFile('create_site', now - 8 * DAY, 1), tenantFile('create_site', now - 3 * DAY, 1), tenantFile('create_site', now - HOUR, 1)]);
    const cp: SourceCheckpoint = { objects: {} };
    const src = source({ since: new Date(now - 9 * DAY).toISOString() });
    const objects = await src.pending(cp, new AbortController().signal);
    expect(objects.map((o) => o.key).sort()).toEqual(files.map((f) => f.file.path).sort());
    const lists = server.requests.filter((r) => r.kind === 'list');
    expect(lists.filter((r) => r.status === 400).map((r) => r.windowMs)).toEqual([7 * DAY, 3.5 * DAY]);
    expect(lists.filter((r) => r.status === 200).every((r) => r.windowMs! <= 2 * DAY)).toBe(true);

    await server.close();
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, maxWindowMs: HOUR / 2 });
    const refused = source({ since: new Date(now - 2 * DAY).toISOString() });
    await expect(refused.pending({ objects: {} }, new AbortController().signal)).rejects.toThrow(/HTTP 400/);
    const sizes = server.requests.filter((r) => r.kind === 'list').map((r) => r.windowMs! / HOUR);
    // the first window runs from `since` to the source's own now, a moment after the test's (more on a busy machine)
    expect(sizes[0]).toBeGreaterThanOrEqual(48);
    expect(sizes[0]).toBeLessThan(48.1);
    expect(sizes.slice(1)).toEqual([24, 12, 6, 3, 1.5, 1]);
  });

  it('a file listed in two windows (inclusive boundaries) is read once', async () => {
    await server.close();
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, inclusiveEnd: true });
    const since = Math.floor((Date.now() - 10 * DAY) / 1000) * 1000;
    const files = publish(server, [tenantFile('create_site', since + 7 * DAY, 1), tenantFile('create_site', since + DAY, 1)]);
    const objects = await source({ since: new Date(since).toISOString() }).pending({ objects: {} }, new AbortController().signal);
    expect(objects.map((o) => o.key).sort()).toEqual(files.map((f) => f.file.path).sort());
    expect(server.requests.filter((r) => r.kind === 'list')).toHaveLength(2);
  });

  it('a missing PAT variable or file is an error naming the option, not the value', async () => {
    const env = source({ patEnv: 'TCM_PAT_MISSING' });
    await expect(env.pending({ objects: {} }, new AbortController().signal)).rejects.toThrow(/TCM_PAT_MISSING \(patEnv\) is not set or empty/);
    const dir = tempDir('tao-tcm-pat-');
    const file = source({ patEnv: undefined, patFile: join(dir, 'missing.txt') });
    await expect(file.pending({ objects: {} }, new AbortController().signal)).rejects.toThrow(/cannot read patFile .*missing\.txt: ENOENT/);
    writeFileSync(join(dir, 'pat.txt'), `  ${PAT}\n`);
    const ok = source({ patEnv: undefined, patFile: join(dir, 'pat.txt') });
    await expect(ok.pending({ objects: {} }, new AbortController().signal)).resolves.toEqual([]);
    expect(server.logins()).toBe(1);
  });

  it('lists sites from the tenant (several answer shapes) and one listing per event type', async () => {
    for (const shape of ['object-id', 'object-siteUUID', 'array'] as const) {
      await server.close();
      server = await startTcmServer({ pat: PAT, tenantId: TENANT, sites: SITES, siteListShape: shape });
      const now = Date.now();
      const files = publish(server, [
        siteFile(SITES[0]!, 'hist_access_view', now - HOUR, 2),
        siteFile(SITES[1]!, 'login_authentication', now - HOUR, 2),
        siteFile(SITES[1]!, 'hist_access_view', now - HOUR, 2),
        tenantFile('create_site', now - HOUR, 1),
      ]);
      const src = source({ scope: 'sites', eventTypes: ['hist_access_view'] });
      const cp: SourceCheckpoint = { objects: {} };
      const objects = await src.pending(cp, new AbortController().signal);
      expect(objects.map((o) => o.key).sort(), shape).toEqual([files[0]!, files[2]!].map((f) => f.file.path).sort());
      expect(Object.keys(cp.position!).filter((k) => k.startsWith('site:')).sort()).toEqual(SITES.map((s) => `site:${s}`).sort());
      expect(server.requests.filter((r) => r.kind === 'list').every((r) => r.query.eventType === 'hist_access_view')).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('tcm source through the CLI', () => {
  let server: TcmServer;
  let receiver: OtlpReceiver;
  let work: string;
  const PAT = `TCMPAT-${randomBytes(12).toString('hex')}-SECRET`;

  beforeEach(async () => {
    receiver = await startOtlpReceiver();
    work = tempDir('tao-tcm-');
  });
  afterEach(async () => {
    await receiver.close();
    await server?.close();
  });

  function writeConfig(source: Record<string, unknown>): string {
    const file = join(work, 'config.yaml');
    writeFileSync(
      file,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { batchSize: 25, retryFor: 10s }',
        'tenants:',
        '  - id: acme',
        `    sources: [ ${JSON.stringify({ type: 'tcm', url: server.url, tenantId: TENANT, patEnv: 'TCM_PAT', ...source })} ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );
    return file;
  }

  function deadLetters(): Array<Record<string, unknown>> {
    const dir = join(work, 'state', 'acme', 'dead-letter');
    if (!existsSync(dir)) return [];
    return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  function expectDeliveredOnce(received: ReceivedLogRecord[], files: Published[]): void {
    const eventIds = files.flatMap((f) => f.eventIds);
    const seqs = files.flatMap((f) => f.seqs);
    expect(received.length).toBe(eventIds.length + seqs.length);
    const uids = received.map((r) => r.attributes['log.record.uid']);
    expect(new Set(uids).size).toBe(received.length);
    // Tableau's tenant id (the source's tenantId) on every resource, apart from our tenant label
    expect(received.every((r) => r.resource['tableau.tenant.id'] === TENANT && typeof r.resource['tableau_activity_otel.tenant'] === 'string' && r.resource['tableau_activity_otel.tenant'] !== TENANT)).toBe(true);
    const byUid = new Map(received.map((r) => [r.attributes['log.record.uid'], r]));
    for (const id of eventIds) {
      const r = byUid.get(id);
      expect(r, `tenant event ${id}`).toBeDefined();
      expect(r!.resource['service.name']).toBe('tableau-cloud-manager');
      expect(r!.eventName).toMatch(/^tableau\./);
    }
    const bySeq = new Set(received.map((r) => r.attributes['tableau.test_seq']).filter((s) => s !== undefined));
    for (const s of seqs) expect(bySeq.has(s), `site record ${s}`).toBe(true);
  }

  it('scope both: every record once despite expired sessions, 429, page chains, expired URLs and bad lines; restarts re-send nothing and pick up new files', async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, sites: SITES, pageSize: 2, tokenKey: 'alternate' });
    const now = Date.now();
    const tenantTypes = Object.keys(TENANT_TYPES);
    const files = publish(server, [
      // tenant: spread over 20 days (3 windows); the last window has 6 files → a chain of 3 pages
      tenantFile('create_site', now - 18 * DAY, 3),
      tenantFile('user_login_create_session', now - 11 * DAY, 4, { gzip: true }),
      ...tenantTypes.map((t, i) => tenantFile(t, now - (i + 1) * 3 * HOUR, 3, { gzip: i % 2 === 0, contentEncodingGzip: i === 2 })),
      tenantFile('tcm_activity_log_access', now - 5 * 60_000, 2),
      // sites
      siteFile(SITES[0]!, 'hist_access_view', now - 15 * DAY, 5, { gzip: true }),
      siteFile(SITES[0]!, 'login_authentication', now - 2 * DAY, 5, { badLines: 2 }),
      siteFile(SITES[1]!, 'hist_access_view', now - 6 * HOUR, 4),
      siteFile(SITES[1]!, 'login_authentication', now - 10 * 60_000, 3, { gzip: true }),
    ]);
    server.expireSessionsAfterCalls(5);
    server.respondNext('list', { status: 429, headers: { 'Retry-After': '1' } });
    server.respondNext('urls', { status: 503 });
    const refused = new Set(files.filter((_, i) => i % 3 === 1).map((f) => f.file.path));
    server.refuseFirstDownload((p) => refused.has(p));

    const config = writeConfig({ scope: 'both', since: new Date(now - 20 * DAY).toISOString(), maxRequestsPerSecond: 50 });
    const run1 = await runCli(['run', '--once', '--config', config], { env: { TCM_PAT: PAT } });
    expect(run1.code, run1.stderr).toBe(0);
    expectDeliveredOnce(receiver.records(), files);

    // malformed lines dead-lettered, the file's other lines delivered
    const letters = deadLetters().filter((l) => l.kind === 'line');
    expect(letters).toHaveLength(2);
    expect(letters.every((l) => l.object === files.find((f) => f.bad > 0)!.file.path && /invalid JSON/.test(l.reason as string))).toBe(true);
    // with what the source knew of the file (Tableau's tenant id), so a replay maps the lines the same way
    expect(letters.every((l) => (l.info as Record<string, unknown> | undefined)?.tenantId === TENANT)).toBe(true);

    // the failure modes happened and were handled
    const reqs = server.requests;
    expect(server.logins()).toBeGreaterThanOrEqual(3);
    expect(reqs.filter((r) => r.status === 401).length).toBeGreaterThanOrEqual(server.logins() - 1); // each sign-in after the first followed a 401
    const i429 = reqs.findIndex((r) => r.status === 429);
    const afterRetry = reqs.slice(i429 + 1).find((r) => r.kind === 'list')!;
    expect(afterRetry.at - reqs[i429]!.at).toBeGreaterThanOrEqual(990); // Retry-After: 1 honoured
    expect(reqs.filter((r) => r.kind === 'download' && r.status === 403).length).toBe(refused.size);
    const lists = reqs.filter((r) => r.kind === 'list');
    expect(lists.every((r) => r.windowMs! <= 7 * DAY)).toBe(true); // never a window the API refuses
    expect(lists.some((r) => r.status === 400)).toBe(false);
    expect(lists.filter((r) => r.tokenKey === 'pageToken').length).toBeGreaterThan(0);
    expect(lists.filter((r) => r.tokenKey === 'nextPageToken').length).toBeGreaterThan(0);
    expect(reqs.filter((r) => r.kind === 'download').every((r) => !r.hadSessionHeader)).toBe(true);
    expect(reqs.some((r) => r.kind === 'sites' && r.status === 200)).toBe(true);

    // restart: nothing re-sent
    const run2 = await runCli(['run', '--once', '--config', config], { env: { TCM_PAT: PAT } });
    expect(run2.code, run2.stderr).toBe(0);
    expect(receiver.records().length).toBe(files.reduce((n, f) => n + f.eventIds.length + f.seqs.length, 0));

    // bounded checkpoint: positions per scope, and only the files at the edge
    const cp = readCheckpointState(join(work, 'state', 'acme')) as { sources: Record<string, SourceCheckpoint> };
    const state = cp.sources[`tcm:${TENANT}:both`]!;
    expect(Object.keys(state.position!).filter((k) => !k.startsWith('horizon:')).sort()).toEqual(['tenant', ...SITES.map((s) => `site:${s}`)].sort());
    for (const k of ['tenant', ...SITES.map((s) => `site:${s}`)]) expect(Date.parse(state.position![k] as string)).toBeGreaterThan(now - 20 * 60_000);

    // newly published files are picked up by the next run, and only they
    const later = publish(server, [tenantFile('update_user_site_role', Date.now() - 1000, 2), siteFile(SITES[0]!, 'hist_access_view', Date.now() - 1000, 3, { gzip: true })]);
    const run3 = await runCli(['run', '--once', '--config', config], { env: { TCM_PAT: PAT } });
    expect(run3.code, run3.stderr).toBe(0);
    expectDeliveredOnce(receiver.records(), [...files, ...later]);
    // the state now holds only the files at the edge (listed from position - overlap on)
    const cp3 = readCheckpointState(join(work, 'state', 'acme')) as { sources: Record<string, SourceCheckpoint> };
    const recent = [...files, ...later].filter((f) => f.file.availableAt > now - 40 * 60_000).map((f) => f.file.path);
    const kept = Object.keys(cp3.sources[`tcm:${TENANT}:both`]!.objects);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.filter((k) => !recent.includes(k))).toEqual([]);

    for (const r of [run1, run2, run3]) {
      expect(r.stdout + r.stderr).not.toContain(PAT);
      expect(r.stdout + r.stderr).not.toContain('X-Amz-Signature');
    }
  });

  it('respects maxRequestsPerSecond, halves refused windows, filters event types, reads the PAT from a file', async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT, maxWindowMs: 2 * DAY });
    const now = Date.now();
    const wanted = publish(server, [
      tenantFile('user_login_create_session', now - 8 * DAY, 2),
      tenantFile('create_site', now - 5 * DAY, 2, { gzip: true }),
      tenantFile('user_login_create_session', now - 2 * DAY, 2),
      tenantFile('create_site', now - HOUR, 1),
    ]);
    publish(server, [tenantFile('personal_access_token_login', now - 4 * DAY, 2), tenantFile('revoke_personal_access_token', now - HOUR, 2)]);
    writeFileSync(join(work, 'pat.txt'), `${PAT}\n`, { mode: 0o600 });
    const config = writeConfig({ patEnv: undefined, patFile: 'pat.txt', since: new Date(now - 9 * DAY).toISOString(), eventTypes: ['user_login_create_session', 'create_site'], maxRequestsPerSecond: 4 });
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);
    expectDeliveredOnce(receiver.records(), wanted);

    const lists = server.requests.filter((r) => r.kind === 'list');
    expect(lists.filter((r) => r.status === 400).map((r) => r.windowMs)).toEqual([7 * DAY, 3.5 * DAY]);
    expect(lists.every((r) => r.windowMs! <= 7 * DAY && ['user_login_create_session', 'create_site'].includes(r.query.eventType!))).toBe(true);
    // rate (4/s), as the server saw it: overall pace, and per second (one request of latency jitter tolerated)
    const at = server.requests.map((r) => r.at).sort((a, b) => a - b);
    expect(at.length).toBeGreaterThan(12);
    expect(at.at(-1)! - at[1]!).toBeGreaterThanOrEqual((at.length - 2) * 250 - 100); // from the 2nd: the 1st pays for the connection
    for (let i = 0; i + 5 < at.length; i++) expect(at[i + 5]! - at[i]!, `requests ${i}..${i + 5}`).toBeGreaterThanOrEqual(1000);
    const perSecond = new Map<number, number>();
    for (const t of at) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
    expect(res.stdout + res.stderr).not.toContain(PAT);
  });

  it('a rejected PAT fails the run (exit 1) without the secret in any output', async () => {
    server = await startTcmServer({ pat: PAT, tenantId: TENANT });
    publish(server, [tenantFile('create_site', Date.now() - HOUR, 1)]);
    const config = writeConfig({});
    const wrong = `${PAT}-WRONG`;
    const res = await runCli(['run', '--once', '--config', config], { env: { TCM_PAT: wrong } });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/sign-in rejected \(HTTP 401\)/);
    expect(res.stdout + res.stderr).not.toContain(wrong);
    expect(res.stdout + res.stderr).not.toContain(PAT);
    expect(server.requests.filter((r) => r.kind === 'login')).toHaveLength(1); // 401 on sign-in is not retried

    expect(receiver.records()).toHaveLength(0);
  });
});
