/**
 * Enrichment data from Tableau Cloud Manager (src/sources/tcm/tcm-reference-data.ts and
 * src/daemon/enrichment-refresher.ts) against the local TCM API (test/support/tcm-server.ts) on
 * 127.0.0.1: users and sites paged with maxResults / pageToken (the next token under either
 * name), a 429 with Retry-After in the middle of the paging, a session that expires between
 * pages, users missing fields; and the refresher: pending, then loaded, a refresh that fails
 * keeps the last good copy while the age metric grows, a new pool gets the current copy, stop
 * withdraws it. The PAT and the session tokens never show up in a log line or an error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import pino from 'pino';
import { tempDir } from './support/activity-fixtures.js';
import { startTcmServer, startTrapServer, type TcmServer } from './support/tcm-server.js';
import { metricValue, waitFor } from './support/daemon-process.js';
import { TcmSource, tcmSourceConfigSchema } from '../src/sources/tcm/tcm-source.js';
import { fetchTcmSites, fetchTcmUsers, type ReferenceListOptions } from '../src/sources/tcm/tcm-reference-data.js';
import { SiteListBuilder, UserTableBuilder } from '../src/sources/reference-copy.js';
import { ENRICHMENT_FIELDS } from '../src/sources/reference-records.js';
import type { TcmClient } from '../src/sources/tcm/tcm-client.js';
import { sourceMetrics } from '../src/core/metrics.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { enrichmentConfigSchema } from '../src/daemon/enrichment-config.js';
import { createEnrichmentRefresher, EnrichmentCache, type EnrichmentRefresher } from '../src/daemon/enrichment-refresher.js';
import type { ReferenceData, ReferenceDataSink, UserReference } from '../src/mapping/reference-data.js';

const TENANT = 'db7fad32-0175-431a-b176-7a71be70c2ac';
const PAT = `pat-${randomUUID()}`;
const SITE_A = '46a64a61-5e8c-4e4a-b2e0-76740ab0d02b';
const SITE_B = 'd85a2546-6ae7-4110-ba5f-ef5abae47d59';
const FAST_RETRY = { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 4 };

/** A logger whose JSON lines the test reads. */
function capturingLogger(): { log: pino.Logger; lines: () => Array<Record<string, unknown>>; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString('utf8');
      cb();
    },
  });
  const log = pino({ level: 'debug' }, stream);
  return { log, text: () => text, lines: () => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A sink that records every publication, as the encode pool would receive them. */
class RecordingSink implements ReferenceDataSink {
  readonly published: Array<{ tenantId: string; data: ReferenceData | undefined }> = [];
  publishReferenceData(tenantId: string, data: ReferenceData | undefined): void {
    // iterated once, at publication, as the pool does (the users may be a generator)
    this.published.push({ tenantId, data: data && { ...data, users: [...data.users], sites: [...data.sites] } });
  }
  get last(): ReferenceData | undefined {
    return this.published.at(-1)?.data;
  }
}

function users(n: number, offset = 0): Array<Record<string, unknown>> {
  return Array.from({ length: n }, (_, i) => ({
    userId: `00000000-0000-4000-8000-${String(offset + i).padStart(12, '0')}`,
    userName: `user${offset + i}@acme.example`,
    email: `user${offset + i}@acme.example`,
    displayName: `User ${offset + i}`,
    idpType: 'TABLEAU_ID_WITH_MFA',
    siteRoles: [{ siteId: SITE_A, siteRole: i % 2 ? 'Viewer' : 'Creator' }],
    linkRoles: [],
  }));
}

const ALL_FIELDS = new Set(ENRICHMENT_FIELDS);

/** The users list through the compact table the refresher keeps, back as objects. */
async function listUsers(client: TcmClient, options: ReferenceListOptions) {
  const into = new UserTableBuilder(ALL_FIELDS);
  const stats = await fetchTcmUsers(client, TENANT, into, options, new AbortController().signal);
  return { ...stats, items: into.build().toReferences() };
}

async function listSites(client: TcmClient, options: ReferenceListOptions) {
  const into = new SiteListBuilder(ALL_FIELDS);
  const stats = await fetchTcmSites(client, TENANT, into, options, new AbortController().signal);
  return { ...stats, items: into.build() };
}

const servers: TcmServer[] = [];
const sources: TcmSource[] = [];
const refreshers: EnrichmentRefresher[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const r of refreshers.splice(0)) await r.stop();
  for (const s of sources.splice(0)) await s.close();
  for (const s of servers.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function server(options: Partial<Parameters<typeof startTcmServer>[0]> = {}): Promise<TcmServer> {
  const s = await startTcmServer({ pat: PAT, tenantId: TENANT, ...options });
  servers.push(s);
  return s;
}

function tcmSource(tcm: TcmServer, log: pino.Logger, metrics?: DaemonMetrics, extra: Record<string, unknown> = {}): TcmSource {
  const config = tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT', maxRequestsPerSecond: 50, ...extra });
  const s = new TcmSource(config, { baseDir: '.', env: { TCM_PAT: PAT }, log, metrics: sourceMetrics(metrics, 'acme', () => 'tcm-main'), retry: FAST_RETRY });
  sources.push(s);
  return s;
}

describe('TCM users and sites lists', () => {
  it('reads every page, taking the next token from pageToken or nextPageToken, with maxResults', async () => {
    const tcm = await server({ users: users(2500), tokenKey: 'alternate' });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    const got = await listUsers(src.client, { maxItems: 10_000 });
    expect(got.items).toHaveLength(2500);
    expect(new Set(got.items.map((u) => u.id)).size).toBe(2500);
    expect(got.pages).toBe(5);
    const asked = tcm.requests.filter((r) => r.kind === 'users');
    expect(asked.map((r) => r.query.maxResults)).toEqual(['500', '500', '500', '500', '500']);
    expect(asked[0]!.query.pageToken).toBeUndefined();
    expect(asked[1]!.query.pageToken).toBeDefined();
    // the server put the token under either name, in turn
    expect(asked.map((r) => r.tokenKey)).toEqual(['pageToken', 'nextPageToken', 'pageToken', 'nextPageToken', undefined]);
    expect(asked.every((r) => r.hadSessionHeader)).toBe(true);
    const u7 = got.items.find((u) => u.id.endsWith('000000000007'))!;
    expect(u7).toEqual({ id: u7.id, name: 'user7@acme.example', email: 'user7@acme.example', fullName: 'User 7', siteRoles: { [SITE_A]: 'Viewer' } });
    expect(got.census.names()).toEqual(['displayName', 'email', 'idpType', 'linkRoles', 'siteRoles', 'userId', 'userName']);
  });

  it('waits out a 429 with Retry-After in the middle of the paging, then goes on from the same page', async () => {
    const tcm = await server({ users: users(30), pageSize: 10 });
    tcm.respondWhen('users', (q) => q.pageToken !== undefined, { status: 429, headers: { 'retry-after': '1' }, body: '{"message":"slow down"}' });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    const got = await listUsers(src.client, { maxItems: 100, pageSize: 10 });
    expect(got.items).toHaveLength(30);
    const asked = tcm.requests.filter((r) => r.kind === 'users');
    expect(asked.map((r) => r.status)).toEqual([200, 429, 200, 200]);
    // the refused page was asked for again with the same token, after at least the second it was told to wait
    expect(asked[2]!.query.pageToken).toBe(asked[1]!.query.pageToken);
    expect(asked[2]!.at - asked[1]!.at).toBeGreaterThanOrEqual(990);
  });

  it('signs in again when the session expires between pages', async () => {
    const tcm = await server({ users: users(25), pageSize: 10 });
    tcm.expireSessionsAfterCalls(1);
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    const got = await listUsers(src.client, { maxItems: 100, pageSize: 10 });
    expect(got.items).toHaveLength(25);
    const asked = tcm.requests.filter((r) => r.kind === 'users');
    expect(asked.filter((r) => r.status === 401)).toHaveLength(2);
    expect(tcm.logins()).toBe(3);
    expect(asked.filter((r) => r.status === 200)).toHaveLength(3);
  });

  it('takes what a user has: missing fields stay absent, other names for them are read, a user without an id is skipped, one with nothing to add is not kept', async () => {
    const tcm = await server({
      users: [
        { userId: 'u-only-id' },
        { userId: 'u-full', fullName: 'Ada Lovelace', email: 'ada@acme.example' },
        { userId: 'u-parts', firstName: 'Grace', lastName: 'Hopper', siteRoles: [{ siteId: SITE_A, siteRole: 'Creator' }, { siteId: SITE_B, siteRole: 'Viewer' }, { siteRole: 'no site' }] },
        { email: 'nobody@acme.example', displayName: 'No Id' },
        { userId: '  ', username: 'blank-id' },
        { userId: 'u-null', email: null, displayName: '' },
      ],
    });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    const got = await listUsers(src.client, { maxItems: 100 });
    const byId = new Map<string, UserReference>(got.items.map((u) => [u.id, u]));
    // an id and nothing to add: not kept
    expect(byId.has('u-only-id')).toBe(false);
    expect(byId.get('u-full')).toEqual({ id: 'u-full', fullName: 'Ada Lovelace', email: 'ada@acme.example' });
    expect(byId.get('u-parts')).toEqual({ id: 'u-parts', fullName: 'Grace Hopper', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: 'Viewer' } });
    expect(byId.has('u-null')).toBe(false);
    expect(got.items).toHaveLength(2);
    expect(got.entries).toBe(4);
    expect(got.skipped).toBe(2);
    expect(got.census.missing({ name: ['userName', 'username', 'name'], email: ['email'] })).toEqual([]);
  });

  it('a redirect of the users list is not followed: the other host gets no connection, the error names its origin only', async () => {
    const tcm = await server({ users: users(3) });
    const trap = await startTrapServer();
    try {
      const to = { status: 307, headers: { location: `${trap.url}/api/v1/tenants/${TENANT}/users?X-Steal=1` } };
      tcm.respondNext('users', to, to, to, to);
      const { log, text } = capturingLogger();
      const src = tcmSource(tcm, log);
      const err = await listUsers(src.client, { maxItems: 100 }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(new RegExp(`HTTP 307 redirect to ${trap.url.replace(/[.]/g, '\\.')} \\(not followed`));
      expect(err?.message).not.toContain('X-Steal');
      expect(trap.connections).toBe(0);
      expect(text()).not.toContain(PAT);
    } finally {
      await trap.close();
    }
  });

  it('asks for a page too large for maxResponseBytes again with half as many users', async () => {
    const tcm = await server({ users: Array.from({ length: 100 }, (_, i) => ({ userId: `u${String(i).padStart(2, '0')}`, email: `e${String(i).padStart(2, '0')}` })) });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log, undefined, { maxResponseBytes: 1024 });
    const got = await listUsers(src.client, { maxItems: 1000 });
    expect(got.items).toHaveLength(100);
    const sizes = tcm.requests.filter((r) => r.kind === 'users').map((r) => Number(r.query.maxResults));
    expect(sizes.slice(0, 4)).toEqual([500, 250, 125, 62]);
    // then pages that fit (31, or the floor of 25), never larger again
    expect(sizes.slice(4).every((n, i, all) => n >= 25 && n <= 31 && (i === 0 || n <= all[i - 1]!))).toBe(true);
  });

  it('reads sites: siteUUID, name and contentUrl, paged', async () => {
    const details = Array.from({ length: 12 }, (_, i) => ({ siteUUID: `site-${i}`, siteId: 1000 + i, name: `Site ${i}`, contentUrl: `site${i}`, status: 'ACTIVE', suspendedDateTime: null }));
    const tcm = await server({ siteDetails: details, pageSize: 5 });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    const got = await listSites(src.client, { maxItems: 100, pageSize: 5 });
    expect(got.pages).toBe(3);
    expect(got.items).toHaveLength(12);
    expect(got.items[3]).toEqual({ id: 'site-3', name: 'Site 3', contentUrl: 'site3' });
  });

  it('refuses a list longer than maxItems (memory stays bounded), and a first page without the list', async () => {
    const tcm = await server({ users: users(30), pageSize: 10 });
    const { log } = capturingLogger();
    const src = tcmSource(tcm, log);
    await expect(listUsers(src.client, { maxItems: 25, pageSize: 10 })).rejects.toThrow(/more than 25 users/);
    tcm.respondNext('users', { status: 200, body: '{"message":"nothing here"}' });
    await expect(listUsers(src.client, { maxItems: 100, pageSize: 10 })).rejects.toThrow(/page 1 has no "users" list/);
  });
});

describe('the enrichment refresher with TCM', () => {
  it('publishes pending, then the loaded copy with only the configured fields; logs the fields found once', async () => {
    const tcm = await server({ users: users(3), siteDetails: [{ siteUUID: SITE_A, name: 'Finance', contentUrl: 'finance', status: 'ACTIVE' }] });
    const cap = capturingLogger();
    const metrics = new DaemonMetrics();
    const src = tcmSource(tcm, cap.log, metrics);
    const config = enrichmentConfigSchema.parse({ users: 'tcm', sites: 'tcm', fields: ['fullName', 'siteRole', 'siteName'] });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT' })], sources: [src], baseDir: '.', env: {}, log: cap.log, metrics });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    expect(sink.published[0]).toEqual({ tenantId: 'acme', data: { status: 'pending', users: [], sites: [], loadedAtMs: 0 } });
    expect(await refresher.waitForFirstLoad(20_000, new AbortController().signal)).toBe(true);
    const data = sink.last!;
    expect(data.status).toBe('loaded');
    expect(data.loadedAtMs).toBeGreaterThan(Date.now() - 60_000);
    expect(data.users[0]).toEqual({ id: '00000000-0000-4000-8000-000000000000', fullName: 'User 0', siteRoles: { [SITE_A]: 'Creator' } });
    expect(data.sites).toEqual([{ id: SITE_A, name: 'Finance' }]);
    // through the source's client: its session and its request counter
    const text = await metrics.registry.metrics();
    expect(metricValue(text, 'tao_source_requests_total', { tenant: 'acme', source: 'tcm-main', operation: 'users' })).toBe(1);
    expect(metricValue(text, 'tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(3);
    expect(metricValue(text, 'tao_enrichment_refreshes_total', { tenant: 'acme', kind: 'sites', result: 'success' })).toBe(1);
    const fieldsLine = cap.lines().find((l) => l.kind === 'users' && Array.isArray(l.fieldsFound));
    expect(fieldsLine?.fieldsFound).toEqual(['displayName', 'email', 'idpType', 'linkRoles', 'siteRoles', 'userId', 'userName']);
    expect(fieldsLine?.notFound).toEqual([]);
  });

  it('keeps the last good copy when a refresh fails; the age metric grows; a later refresh replaces it', async () => {
    const tcm = await server({ users: users(4) });
    const cap = capturingLogger();
    const metrics = new DaemonMetrics();
    const src = tcmSource(tcm, cap.log, metrics);
    const config = enrichmentConfigSchema.parse({ users: 'tcm', refreshInterval: '1s' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT' })], sources: [src], baseDir: '.', env: {}, log: cap.log, metrics });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    await refresher.waitForFirstLoad(20_000, new AbortController().signal);
    const good = sink.last!;
    expect(good.users).toHaveLength(4);
    const publications = sink.published.length;

    // from now on every users request fails (5xx, retried by the client, then the refresh fails)
    tcm.respondNext('users', ...Array.from({ length: 200 }, () => ({ status: 503 })));
    const failures = async (): Promise<number> => metricValue(await metrics.registry.metrics(), 'tao_enrichment_refreshes_total', { tenant: 'acme', kind: 'users', result: 'failure' }) ?? 0;
    await waitFor('a failed refresh', async () => (await failures()) >= 1, 20_000);
    const age1 = metricValue(await metrics.registry.metrics(), 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })!;
    await waitFor('a second failed refresh', async () => (await failures()) >= 2, 20_000);
    const age2 = metricValue(await metrics.registry.metrics(), 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })!;
    expect(age1).toBeGreaterThanOrEqual(1);
    expect(age2).toBeGreaterThan(age1);
    // nothing was published meanwhile: the pool still has the good copy
    expect(sink.published.length).toBe(publications);
    expect(sink.last).toBe(good);
    expect(cap.lines().some((l) => l.msg === 'enrichment refresh failed; the last good copy stays in use' && l.kept === 4)).toBe(true);

    // TCM answers again, with one more user
    tcm.options.users.push(...users(1, 100));
    tcm.clearQueued('users');
    await waitFor('the refreshed copy', () => sink.last !== good && sink.last!.users.length === 5, 30_000);
    const age3 = metricValue(await metrics.registry.metrics(), 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })!;
    expect(age3).toBeLessThan(age2);
    // secrets: the PAT and the session tokens are in no log line
    expect(cap.text()).not.toContain(PAT);
    expect(cap.text()).not.toMatch(/sess-[0-9a-f]{24}/);
  });

  it('a restart starts from the lists saved at the last fetch, fetches nothing until a refreshInterval after it, and fetches again for other fields', async () => {
    const tcm = await server({ users: users(3), siteDetails: [{ siteUUID: SITE_A, name: 'Finance', contentUrl: 'finance', status: 'ACTIVE' }] });
    const stateDir = tempDir('tao-tcm-copies-');
    dirs.push(stateDir);
    const sourceConfigs = [tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT' })];
    const run = async (fields?: string[]): Promise<{ data: ReferenceData | undefined; cap: ReturnType<typeof capturingLogger> }> => {
      const cap = capturingLogger();
      const config = enrichmentConfigSchema.parse({ users: 'tcm', sites: 'tcm', refreshInterval: '1h', ...(fields ? { fields } : {}) });
      const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs, sources: [tcmSource(tcm, cap.log)], baseDir: '.', env: {}, log: cap.log, stateDir });
      refreshers.push(refresher);
      const sink = new RecordingSink();
      refresher.start(sink);
      expect(await refresher.waitForFirstLoad(20_000, new AbortController().signal)).toBe(true);
      const data = sink.last;
      await refresher.stop(); // waits for the copies to be written
      return { data, cap };
    };
    const lists = (): number => tcm.requests.filter((r) => r.kind === 'users' || r.kind === 'sites').length;
    const cold = await run();
    const fetched = lists();
    expect(fetched).toBeGreaterThanOrEqual(2);
    expect(cold.data).toMatchObject({ status: 'loaded' });
    expect(cold.data!.users).toHaveLength(3);

    const warm = await run();
    expect(lists()).toBe(fetched); // nothing asked of TCM: its next fetch is due an hour after the saved one
    expect(warm.data).toMatchObject({ status: 'loaded' });
    expect(warm.data!.users).toEqual(cold.data!.users);
    expect(warm.data!.sites).toEqual(cold.data!.sites);
    expect(warm.cap.lines().filter((l) => String(l.msg).includes('the copy saved at the last load is in use')).map((l) => l.kind).sort()).toEqual(['sites', 'users']);

    const otherFields = await run(['fullName', 'siteName']);
    expect(lists()).toBeGreaterThan(fetched);
    expect(otherFields.data!.users[0]).toEqual({ id: expect.any(String), fullName: 'User 0' });
    for (const r of [cold, warm, otherFields]) {
      expect(r.cap.text()).not.toContain(PAT);
      expect(r.cap.lines().some((l) => l.level === 40)).toBe(false);
    }
  });

  it('gives a new pool the current copy and withdraws it on stop (series removed)', async () => {
    const tcm = await server({ users: users(2) });
    const cap = capturingLogger();
    const metrics = new DaemonMetrics();
    const src = tcmSource(tcm, cap.log, metrics);
    const config = enrichmentConfigSchema.parse({ users: 'tcm' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT' })], sources: [src], baseDir: '.', env: {}, log: cap.log, metrics });
    const first = new RecordingSink();
    refresher.start(first);
    await refresher.waitForFirstLoad(20_000, new AbortController().signal);
    const second = new RecordingSink();
    refresher.setSink(second);
    await refresher.published();
    expect(second.published).toHaveLength(1);
    expect(second.last).toEqual(first.last);
    await refresher.stop();
    expect(second.published.at(-1)).toEqual({ tenantId: 'acme', data: undefined });
    expect(first.published.at(-1)!.data).toBeDefined(); // the old pool is not told again
    const text = await metrics.registry.metrics();
    expect(metricValue(text, 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })).toBeUndefined();
    expect(metricValue(text, 'tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBeUndefined();
  });

  it("a tenant started again (after a failure) keeps its last good copy although TCM is down; a changed enrichment block starts over", async () => {
    const tcm = await server({ users: users(3) });
    const cap = capturingLogger();
    const metrics = new DaemonMetrics();
    const cache = new EnrichmentCache();
    const sourceConfigs = [tcmSourceConfigSchema.parse({ type: 'tcm', name: 'tcm-main', url: tcm.url, tenantId: TENANT, patEnv: 'TCM_PAT' })];
    const config = enrichmentConfigSchema.parse({ users: 'tcm', refreshInterval: '1h' });
    const build = (c = config): EnrichmentRefresher => {
      const r = createEnrichmentRefresher({ tenantId: 'acme', config: c, sourceConfigs, sources: [tcmSource(tcm, cap.log, metrics)], baseDir: '.', env: {}, log: cap.log, metrics, cache });
      refreshers.push(r);
      return r;
    };
    const first = build();
    const sink1 = new RecordingSink();
    first.start(sink1);
    await first.waitForFirstLoad(20_000, new AbortController().signal);
    const good = sink1.last!;
    await first.stop();
    expect(sink1.last).toBeUndefined(); // withdrawn from the pool
    expect(cache.size).toBe(1);

    tcm.respondNext('users', ...Array.from({ length: 100 }, () => ({ status: 503 })));
    const asked = tcm.requests.filter((r) => r.kind === 'users').length;
    const second = build();
    const sink2 = new RecordingSink();
    second.start(sink2);
    expect(await second.waitForFirstLoad(20_000, new AbortController().signal)).toBe(true);
    expect(sink2.last).toEqual(good);
    expect(sink2.last!.loadedAtMs).toBe(good.loadedAtMs);
    // not fetched again before its interval is over, and taken out of the cache (one copy in memory)
    expect(tcm.requests.filter((r) => r.kind === 'users').length).toBe(asked);
    expect(cache.size).toBe(0);
    expect(metricValue(await metrics.registry.metrics(), 'tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(3);
    await second.stop();

    // other settings: the kept copy is not used
    const third = build(enrichmentConfigSchema.parse({ users: 'tcm', refreshInterval: '1h', fields: ['email'] }));
    const sink3 = new RecordingSink();
    third.start(sink3);
    expect(await third.waitForFirstLoad(300, new AbortController().signal)).toBe(false);
    expect(sink3.last!.status).toBe('pending');
  });

  it('an own TCM connection: its own sign-in, requests counted under source "enrichment", a wrong PAT is an error that does not quote it', async () => {
    const tcm = await server({ users: users(2) });
    const cap = capturingLogger();
    const metrics = new DaemonMetrics();
    const wrong = `wrong-${randomUUID()}`;
    const config = enrichmentConfigSchema.parse({ users: 'tcm', tcm: { url: tcm.url, tenantId: TENANT, patEnv: 'ENRICH_PAT' }, initialWait: '10s' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [], sources: [], baseDir: '.', env: { ENRICH_PAT: wrong }, log: cap.log, metrics, tcmRetry: FAST_RETRY });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    expect(await refresher.waitForFirstLoad(20_000, new AbortController().signal)).toBe(false);
    expect(sink.last!.status).toBe('pending');
    const failed = cap.lines().find((l) => l.msg === 'enrichment load failed; records are sent without these names until a load succeeds');
    expect(String(failed?.err)).toMatch(/sign-in rejected \(HTTP 401\)/);
    expect(cap.text()).not.toContain(wrong);
    expect(cap.lines().some((l) => l.msg === 'enrichment data not loaded yet; records are sent without the names until it is')).toBe(true);
    const text = await metrics.registry.metrics();
    expect(metricValue(text, 'tao_source_requests_total', { tenant: 'acme', source: 'enrichment', operation: 'login' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })).toBeUndefined();
  });
});

