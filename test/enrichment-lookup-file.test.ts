/**
 * Enrichment lookup files (src/sources/reference-lookup-file.ts) and the refresher reading them
 * (src/daemon/enrichment-refresher.ts): users and sites in CSV and NDJSON, a bad line refused
 * with the file and the line named, a changed file loaded again, a touched but unchanged one
 * not, and a broken file keeping the last good copy until it is fixed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, rmSync, utimesSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { tempDir } from './support/activity-fixtures.js';
import { REPO_ROOT } from './support/cli-process.js';
import { metricValue, waitFor } from './support/daemon-process.js';
import { LookupFileError, LookupFileWatcher, MAX_LOOKUP_LINE_CHARS, parseLookupFile, type LookupCheck } from '../src/sources/reference-lookup-file.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { enrichmentConfigSchema } from '../src/daemon/enrichment-config.js';
import { createEnrichmentRefresher, type EnrichmentRefresher } from '../src/daemon/enrichment-refresher.js';
import type { ReferenceData, ReferenceDataSink } from '../src/mapping/reference-data.js';

const SITE_A = '46a64a61-5e8c-4e4a-b2e0-76740ab0d02b';
const SITE_B = 'd85a2546-6ae7-4110-ba5f-ef5abae47d59';

class RecordingSink implements ReferenceDataSink {
  readonly published: Array<ReferenceData | undefined> = [];
  publishReferenceData(_tenantId: string, data: ReferenceData | undefined): void {
    // iterated once, at publication, as the pool does (the users may be a generator)
    this.published.push(data && { ...data, users: [...data.users], sites: [...data.sites] });
  }
  get last(): ReferenceData | undefined {
    return this.published.at(-1);
  }
}

/** The entries of a parsed file (the users built back from their compact table). */
function itemsOf(r: LookupCheck): unknown[] | string {
  if (typeof r === 'string') return r;
  return r.copy.kind === 'users' ? r.copy.users.toReferences() : [...r.copy.sites];
}

const dirs: string[] = [];
const refreshers: EnrichmentRefresher[] = [];
afterEach(async () => {
  for (const r of refreshers.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function work(): string {
  const d = tempDir('tao-lookup-');
  dirs.push(d);
  return d;
}

/** Replace a file in one step (as a careful writer does), so a check never sees it half-written. */
function replace(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

describe('lookup file formats', () => {
  it('CSV users: a header, quoted values, comment lines, site roles as text or as a row per site', async () => {
    const csv = [
      'id,name,email,fullName,siteRoles',
      '# exported 2026-12-01',
      `u1,ada,ada@acme.example,"Lovelace, Ada",${SITE_A}=Creator;${SITE_B}=Viewer`,
      'u2,grace,,Grace Hopper,',
      '',
    ].join('\n');
    const r = await parseLookupFile('users', 'users.csv', csv, 'csv', 100);
    expect(itemsOf(r)).toEqual([
      { id: 'u1', name: 'ada', email: 'ada@acme.example', fullName: 'Lovelace, Ada', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: 'Viewer' } },
      { id: 'u2', name: 'grace', fullName: 'Grace Hopper' },
    ]);
    const perSite = ['userId,userName,siteId,siteRole', `u1,ada,${SITE_A},Creator`, `u1,ada,${SITE_B},Explorer`, `u3,alan,${SITE_A},Viewer`].join('\r\n');
    const p = await parseLookupFile('users', 'roles.csv', perSite, 'csv', 100);
    expect(itemsOf(p)).toEqual([
      { id: 'u1', name: 'ada', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: 'Explorer' } },
      { id: 'u3', name: 'alan', siteRoles: { [SITE_A]: 'Viewer' } },
    ]);
    expect(p.entries).toBe(3);
  });

  it('NDJSON users and sites, with the TCM field names', async () => {
    const users = [
      JSON.stringify({ userId: 'u1', userName: 'ada', displayName: 'Ada Lovelace', siteRoles: [{ siteId: SITE_A, siteRole: 'SiteAdministratorCreator' }] }),
      '',
      JSON.stringify({ id: 'u2', email: 'grace@acme.example' }),
    ].join('\n');
    expect(itemsOf(await parseLookupFile('users', 'users.ndjson', users, 'ndjson', 100))).toEqual([
      { id: 'u1', name: 'ada', fullName: 'Ada Lovelace', siteRoles: { [SITE_A]: 'SiteAdministratorCreator' } },
      { id: 'u2', email: 'grace@acme.example' },
    ]);
    const sites = [JSON.stringify({ siteUUID: SITE_A, name: 'Finance', contentUrl: 'finance' }), JSON.stringify({ id: SITE_B, siteName: 'Sales' })].join('\n');
    expect(itemsOf(await parseLookupFile('sites', 'sites.jsonl', sites, 'ndjson', 100))).toEqual([
      { id: SITE_A, name: 'Finance', contentUrl: 'finance' },
      { id: SITE_B, name: 'Sales' },
    ]);
  });

  it('NDJSON site roles as an object: kept as they are when clean, trimmed and filtered when not', async () => {
    const users = [
      { id: 'u1', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: 'Viewer' } },
      { id: 'u2', siteRoles: { [` ${SITE_A}`]: ' Explorer ' } },
      { id: 'u3', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: '' } },
      { id: 'u4', siteRoles: { [SITE_A]: 7, [SITE_B]: 'Viewer' } },
      { id: 'u5', siteRoles: {} },
      { id: 'u6', siteRoles: { [SITE_A]: '   ' } },
      { id: 'u7', siteRoles: { [SITE_A]: null }, siteId: SITE_B, siteRole: 'Viewer' },
    ]
      .map((u) => JSON.stringify(u))
      .join('\n');
    const p = await parseLookupFile('users', 'users.ndjson', users, 'ndjson', 100);
    expect(itemsOf(p)).toEqual([
      { id: 'u1', siteRoles: { [SITE_A]: 'Creator', [SITE_B]: 'Viewer' } },
      { id: 'u2', siteRoles: { [SITE_A]: 'Explorer' } },
      { id: 'u3', siteRoles: { [SITE_A]: 'Creator' } },
      { id: 'u4', siteRoles: { [SITE_A]: '7', [SITE_B]: 'Viewer' } },
      { id: 'u7', siteRoles: { [SITE_B]: 'Viewer' } },
    ]);
    expect(p.entries).toBe(7);
    // the census counts the fields with a value: siteRoles of all seven, siteId and siteRole of one
    expect(p.census.names()).toEqual(['id', 'siteId', 'siteRole', 'siteRoles']);
    expect(p.census.items).toBe(7);
    expect(p.census.missing({ id: ['id'], name: ['name', 'userName'], siteRole: ['siteRoles'] })).toEqual(['name']);
  });

  it('a bad line is an error naming the file and the line', async () => {
    const badJson = ['{"id":"u1"}', '{"id":"u2"}', '{"id": "u3",', '{"id":"u4"}'].join('\n');
    await expect(parseLookupFile('users', '/lookup/users.ndjson', badJson, 'ndjson', 100)).rejects.toThrow(/^\/lookup\/users\.ndjson:3: not JSON/);
    await expect(parseLookupFile('users', '/lookup/users.ndjson', '{"id":"u1"}\n[1,2]\n', 'ndjson', 100)).rejects.toThrow('/lookup/users.ndjson:2: not a JSON object');
    await expect(parseLookupFile('users', '/lookup/users.ndjson', '{"id":"u1"}\n\n{"email":"x@y"}\n', 'ndjson', 100)).rejects.toThrow(/^\/lookup\/users\.ndjson:3: no user id/);
    await expect(parseLookupFile('users', '/lookup/users.csv', 'id,name\nu1,ada\nu2,grace,extra\n', 'csv', 100)).rejects.toThrow(/^\/lookup\/users\.csv:3: not valid CSV/);
    await expect(parseLookupFile('users', '/lookup/users.csv', 'id,name\nu1,ada\nu2,"grace\n', 'csv', 100)).rejects.toThrow(/^\/lookup\/users\.csv:\d+: not valid CSV: Quote Not Closed/);
    await expect(parseLookupFile('sites', '/lookup/sites.csv', 'name,contentUrl\nFinance,finance\n', 'csv', 100)).rejects.toThrow('/lookup/sites.csv:1: the header has no id column');
    await expect(parseLookupFile('users', '/lookup/users.csv', 'id,name\n,ada\n', 'csv', 100)).rejects.toThrow(/^\/lookup\/users\.csv:2: no user id/);
    await expect(parseLookupFile('users', '/lookup/users.csv', 'id,name\nu1,a\nu2,b\nu3,c\n', 'csv', 2)).rejects.toThrow('/lookup/users.csv:4: more than 2 users');
    const err = await parseLookupFile('users', 'f.ndjson', '{}', 'ndjson', 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LookupFileError);
    expect((err as LookupFileError).line).toBe(1);
  });

  it('a line longer than 16 MiB is refused, naming the line (one entry must fit in the lookup thread)', async () => {
    const long = 'x'.repeat(MAX_LOOKUP_LINE_CHARS);
    const ndjson = `{"id":"u1"}\n{"id":"u2","name":"${long}"}\n{"id":"u3"}\n`;
    await expect(parseLookupFile('users', '/lookup/users.ndjson', ndjson, 'ndjson', 100)).rejects.toThrow(`/lookup/users.ndjson:2: longer than ${MAX_LOOKUP_LINE_CHARS} characters`);
    // the same without a line end (still being read when the limit is passed)
    await expect(parseLookupFile('users', '/lookup/users.ndjson', `{"id":"u1"}\n{"id":"u2","name":"${long}`, 'ndjson', 100)).rejects.toThrow(`/lookup/users.ndjson:2: longer than ${MAX_LOOKUP_LINE_CHARS} characters`);
    await expect(parseLookupFile('users', '/lookup/users.csv', `id,name\nu1,ada\nu2,${long}\n`, 'csv', 100)).rejects.toThrow(/^\/lookup\/users\.csv:3: not valid CSV/);
    // just under the limit: loaded
    const r = await parseLookupFile('users', '/lookup/users.ndjson', `{"id":"u1","name":"${'y'.repeat(MAX_LOOKUP_LINE_CHARS - 40)}"}\n`, 'ndjson', 100);
    expect(r.copy.length).toBe(1);
  });

  it('the example lookup files (examples/lookup/) are valid', async () => {
    const users = join(REPO_ROOT, 'examples', 'lookup', 'users.csv');
    const sites = join(REPO_ROOT, 'examples', 'lookup', 'sites.ndjson');
    const u = itemsOf(await parseLookupFile('users', users, readFileSync(users, 'utf8'), 'csv', 100)) as Array<{ fullName?: string; siteRoles?: object }>;
    expect(u.map((x) => x.fullName)).toEqual(['Ada Lovelace', 'Grace Hopper']);
    expect(u.every((x) => x.siteRoles !== undefined)).toBe(true);
    expect(itemsOf(await parseLookupFile('sites', sites, readFileSync(sites, 'utf8'), 'ndjson', 100))).toHaveLength(2);
  });

  it('the watcher reads a file again only when it changed', async () => {
    const dir = work();
    const file = join(dir, 'sites.csv');
    writeFileSync(file, `id,name\n${SITE_A},Finance\n`);
    const w = new LookupFileWatcher('sites', file, 'csv', 100);
    const first = await w.check();
    expect(itemsOf(first)).toEqual([{ id: SITE_A, name: 'Finance' }]);
    expect(await w.check()).toBe('unchanged');
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later); // touched, same content
    expect(await w.check()).toBe('unchanged');
    writeFileSync(file, `id,name\n${SITE_A},Finance & Risk\n`);
    const changed = await w.check();
    expect(itemsOf(changed)).toEqual([{ id: SITE_A, name: 'Finance & Risk' }]);
    writeFileSync(file, `id,name\n${SITE_A},"broken\n`);
    await expect(w.check()).rejects.toThrow(`${file}:`);
    expect(await w.check()).toBe('still-failing');
    rmSync(file);
    await expect(w.check()).rejects.toThrow(`${file}: cannot read the lookup file (ENOENT)`);
  });
});

describe('the refresher with lookup files', () => {
  it('loads users and sites, reloads a changed file, keeps the last good copy of a broken one, and loads it once fixed', async () => {
    const dir = work();
    const usersFile = join(dir, 'users.csv');
    const sitesFile = join(dir, 'sites.ndjson');
    writeFileSync(usersFile, 'id,name,fullName\nu1,ada,Ada Lovelace\n');
    writeFileSync(sitesFile, JSON.stringify({ siteUUID: SITE_A, name: 'Finance', contentUrl: 'finance' }) + '\n');
    const metrics = new DaemonMetrics();
    const config = enrichmentConfigSchema.parse({ users: { file: 'users.csv' }, sites: { file: 'sites.ndjson' }, fileCheckInterval: '100ms' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [], sources: [], baseDir: dir, env: {}, log: silentLogger(), metrics });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    expect(await refresher.waitForFirstLoad(10_000, new AbortController().signal)).toBe(true);
    expect(sink.last).toMatchObject({ status: 'loaded', users: [{ id: 'u1', name: 'ada', fullName: 'Ada Lovelace' }], sites: [{ id: SITE_A, name: 'Finance', contentUrl: 'finance' }] });

    replace(usersFile, 'id,name,fullName\nu1,ada,Ada King\nu2,alan,Alan Turing\n');
    await waitFor('the changed users file', () => sink.last!.users.length === 2, 10_000);
    expect(sink.last!.users[0]).toEqual({ id: 'u1', name: 'ada', fullName: 'Ada King' });
    const good = sink.last!;
    const count = sink.published.length;

    replace(usersFile, 'id,name,fullName\nu1,ada,Ada King\nu2,"alan\n');
    const failures = async (): Promise<number | undefined> => metricValue(await metrics.registry.metrics(), 'tao_enrichment_refreshes_total', { tenant: 'acme', kind: 'users', result: 'failure' });
    await waitFor('the failed reload', async () => (await failures()) === 1, 10_000);
    // checked again several times meanwhile: still one failure, nothing published, the good copy stays
    const ageAtFailure = metricValue(await metrics.registry.metrics(), 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })!;
    await new Promise((r) => setTimeout(r, 600));
    expect(await failures()).toBe(1);
    expect(sink.published.length).toBe(count);
    expect(sink.last).toBe(good);
    expect(metricValue(await metrics.registry.metrics(), 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })!).toBeGreaterThan(ageAtFailure);
    // sites, unchanged, are confirmed at every check: their age stays below that of the users that fail
    const ages = await metrics.registry.metrics();
    expect(metricValue(ages, 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'sites' })!).toBeLessThan(metricValue(ages, 'tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'users' })! - 0.3);

    replace(usersFile, 'id,name,fullName\nu1,ada,Ada King\nu2,alan,Alan Turing\nu3,grace,Grace Hopper\n');
    await waitFor('the fixed users file', () => sink.last!.users.length === 3, 10_000);
    expect(metricValue(await metrics.registry.metrics(), 'tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(3);
    expect(sink.last!.sites).toEqual(good.sites);
  });

  it('users that fail do not hold back sites that load: loaded with the sites, the users retried', async () => {
    const dir = work();
    writeFileSync(join(dir, 'sites.csv'), `id,name\n${SITE_A},Finance\n`);
    const config = enrichmentConfigSchema.parse({ users: { file: 'missing.csv' }, sites: { file: 'sites.csv' }, fileCheckInterval: '100ms' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [], sources: [], baseDir: dir, env: {}, log: silentLogger() });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    expect(await refresher.waitForFirstLoad(10_000, new AbortController().signal)).toBe(false); // not everything
    await refresher.published();
    expect(sink.last).toMatchObject({ status: 'loaded', users: [], sites: [{ id: SITE_A, name: 'Finance' }] });
    replace(join(dir, 'missing.csv'), 'id,name\nu1,ada\n');
    await waitFor('the users once their file is there', () => sink.last!.users.length === 1, 10_000);
    expect(sink.last!.sites).toEqual([{ id: SITE_A, name: 'Finance' }]);
  });

  it('a missing file: pending after initialWait, loaded once the file appears', async () => {
    const dir = work();
    const config = enrichmentConfigSchema.parse({ users: { file: 'later.ndjson' }, fileCheckInterval: '100ms', initialWait: '200ms' });
    const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [], sources: [], baseDir: dir, env: {}, log: silentLogger() });
    refreshers.push(refresher);
    const sink = new RecordingSink();
    refresher.start(sink);
    expect(await refresher.waitForFirstLoad(config.initialWait, new AbortController().signal)).toBe(false);
    expect(sink.last!.status).toBe('pending');
    replace(join(dir, 'later.ndjson'), '{"id":"u1","email":"ada@acme.example"}\n');
    await waitFor('the file that appeared', () => sink.last!.status === 'loaded', 10_000);
    expect(sink.last!.users).toEqual([{ id: 'u1', email: 'ada@acme.example' }]);
  });
});
