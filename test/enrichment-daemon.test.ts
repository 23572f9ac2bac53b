/**
 * Enrichment data in the running daemon (the built CLI, `run`): a tenant's lookup files loaded
 * before its sources start and again when they change, its series on /metrics, removed with
 * the tenant on a reload; users and sites from the local TCM API through the tcm source's
 * connection, the sources waiting for the first load (bounded by initialWait).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, metricValue, parseLogLines, type DaemonProcess } from './support/daemon-process.js';
import { runCli } from './support/cli-process.js';
import { startTcmServer, type TcmServer } from './support/tcm-server.js';

const TENANT = 'db7fad32-0175-431a-b176-7a71be70c2ac';
const PAT = `pat-${randomUUID()}`;

let daemon: DaemonProcess | undefined;
const receivers: OtlpReceiver[] = [];
const servers: TcmServer[] = [];
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  for (const r of receivers.splice(0)) await r.close();
  for (const s of servers.splice(0)) await s.close();
});

function replace(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
  return metricValue((await daemon!.get('/metrics')).body, name, labels);
}

describe('enrichment in the daemon', () => {
  it('lookup files: loaded before the sources start, reloaded on change, withdrawn with the tenant', async () => {
    const rx = await startOtlpReceiver();
    receivers.push(rx);
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 5);
    writeFileSync(join(work, 'users.csv'), 'id,name,email,fullName\nu1,ada,ada@acme.example,Ada Lovelace\nu2,alan,,Alan Turing\n');
    writeFileSync(join(work, 'sites.ndjson'), '{"siteUUID":"s1","name":"Finance","contentUrl":"finance"}\n');
    const tenant = (enrichment: string): string[] => [
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
      ...(enrichment ? [`    enrichment: ${enrichment}`] : []),
    ];
    const configText = (enrichment: string): string => [`state: { dir: ${JSON.stringify(join(work, 'state'))} }`, 'tenants:', ...tenant(enrichment), ''].join('\n');
    const config = join(work, 'config.yaml');
    writeFileSync(config, configText('{ users: { file: users.csv }, sites: { file: sites.ndjson }, fileCheckInterval: 200ms }'));
    daemon = await startDaemon(['--config', config, '--grace', '5s']);
    await rx.waitForRecords(5, 20_000);
    const logs = daemon.logs();
    const loaded = logs.findIndex((l) => l.msg === 'enrichment users loaded' && l.tenant === 'acme');
    const fields = logs.find((l) => l.kind === 'users' && Array.isArray(l.fieldsFound));
    expect(fields).toMatchObject({ tenant: 'acme', fieldsFound: ['email', 'fullName', 'id', 'name'], notFound: ['siteRole'] });
    expect(logs[loaded]).toMatchObject({ entries: 2, kept: 2 });
    expect(await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(2);
    expect(await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'sites' })).toBe(1);
    expect(await metric('tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'sites' })).toBeGreaterThanOrEqual(0);

    replace(join(work, 'users.csv'), 'id,name\nu1,ada\nu2,alan\nu3,grace\n');
    await waitFor('the reloaded users', async () => (await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })) === 3, 15_000);
    // a broken file: counted, the copy in use stays
    replace(join(work, 'users.csv'), 'id,name\nu1,"ada\n');
    await waitFor('the failed reload', async () => (await metric('tao_enrichment_refreshes_total', { tenant: 'acme', kind: 'users', result: 'failure' })) === 1, 15_000);
    const failed = daemon.logs().find((l) => l.msg === 'enrichment refresh failed; the last good copy stays in use');
    expect(String(failed?.err)).toContain(`${join(work, 'users.csv')}:2: not valid CSV`);
    expect(await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(3);

    // the tenant without enrichment: its data is withdrawn, its series go
    writeFileSync(config, configText(''));
    daemon.child.kill('SIGHUP');
    await daemon.waitForLog((l) => l.msg === 'configuration reloaded');
    await waitFor('the series removed', async () => (await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })) === undefined || undefined, 15_000);
    expect(await metric('tao_enrichment_data_age_seconds', { tenant: 'acme', kind: 'sites' })).toBeUndefined();
    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(res.code, res.stderr).toBe(0);
  });

  it('a tenant started again after a failure keeps its names although TCM is down by then', async () => {
    const tcm = await startTcmServer({ pat: PAT, tenantId: TENANT, users: [{ userId: 'u1', displayName: 'Ada Lovelace' }, { userId: 'u2', email: 'alan@acme.example' }] });
    servers.push(tcm);
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 5);
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { retryFor: 1s }',
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
        '    destinations: [ { type: otlp, endpoint: "http://127.0.0.1:9" } ]   # nothing listens: the tenant fails and is started again',
        `    enrichment: { users: tcm, tcm: { url: ${JSON.stringify(tcm.url)}, tenantId: ${TENANT}, patEnv: TCM_PAT }, refreshInterval: 1h }`,
        '',
      ].join('\n'),
    );
    daemon = await startDaemon(['--config', config, '--grace', '2s'], { env: { TCM_PAT: PAT } });
    await waitFor('the users loaded', async () => (await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })) === 2, 20_000);
    tcm.respondNext('users', ...Array.from({ length: 1000 }, () => ({ status: 503 })));
    await daemon.waitForLog((l) => l.msg === 'tenant stopped with an error; starting it again after a pause (the other tenants are not affected)', 30_000);
    const kept = await daemon.waitForLog((l) => l.msg === 'enrichment: the copies loaded before the tenant was started again stay in use', 30_000);
    expect(kept).toMatchObject({ tenant: 'acme', kinds: ['users'], entries: [2] });
    expect(await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })).toBe(2);
    // not fetched again (the interval is an hour), and no "not loaded yet"
    expect(tcm.requests.filter((r) => r.kind === 'users')).toHaveLength(1);
    expect(daemon.logs().some((l) => l.msg === 'enrichment data not loaded yet; records are sent without the names until it is')).toBe(false);
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  });

  for (const c of [
    { name: 'wait for the first TCM load before listing', initialWait: '30s', waitMs: 30_000, retryAfter: '2', listsFirst: false },
    { name: 'list after initialWait when the first TCM load takes longer', initialWait: '500ms', waitMs: 500, retryAfter: '4', listsFirst: true },
  ]) {
    it(`the tcm source's connection: ${c.name}`, async () => {
      const rx = await startOtlpReceiver();
      receivers.push(rx);
      const tcm = await startTcmServer({
        pat: PAT,
        tenantId: TENANT,
        users: [{ userId: 'u1', userName: 'ada', email: 'ada@acme.example', displayName: 'Ada Lovelace', siteRoles: [{ siteId: 's1', siteRole: 'Creator' }] }, { userId: 'u2' }],
        siteDetails: [{ siteUUID: 's1', name: 'Finance', contentUrl: 'finance', status: 'ACTIVE' }],
      });
      servers.push(tcm);
      // the first users request is told to come back later
      tcm.respondNext('users', { status: 429, headers: { 'retry-after': c.retryAfter } });
      const work = tempDir();
      const config = join(work, 'config.yaml');
      writeFileSync(
        config,
        [
          `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
          'tenants:',
          '  - id: acme',
          `    sources: [ { type: tcm, name: tcm-main, url: ${JSON.stringify(tcm.url)}, tenantId: ${TENANT}, patEnv: TCM_PAT, pollInterval: 1h, maxRequestsPerSecond: 50 } ]`,
          `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
          `    enrichment: { users: tcm, sites: tcm, initialWait: ${c.initialWait} }`,
          '',
        ].join('\n'),
      );
      daemon = await startDaemon(['--config', config, '--grace', '5s'], { env: { TCM_PAT: PAT } });
      // u2 has nothing to add beyond its id: not kept
      await waitFor('the users loaded', async () => (await metric('tao_enrichment_entries', { tenant: 'acme', kind: 'users' })) === 1, 20_000);
      await waitFor('a listing', () => tcm.requests.some((r) => r.kind === 'list') || undefined, 20_000);
      const usersOk = tcm.requests.find((r) => r.kind === 'users' && r.status === 200)!;
      const firstList = tcm.requests.find((r) => r.kind === 'list')!;
      expect(firstList.at < usersOk.at).toBe(c.listsFirst);
      // either way the source did not list before the wait was over or the data was loaded (the wait begins once "tenant started" is logged)
      const started = Date.parse(String(daemon.logs().find((l) => l.msg === 'tenant started')!.time));
      expect(firstList.at - started).toBeGreaterThanOrEqual(Math.min(c.waitMs, usersOk.at - started) - 20);
      const text = (await daemon.get('/metrics')).body;
      expect(metricValue(text, 'tao_enrichment_entries', { tenant: 'acme', kind: 'sites' })).toBe(1);
      expect(metricValue(text, 'tao_source_requests_total', { tenant: 'acme', source: 'tcm-main', operation: 'users' })).toBe(2);
      // one sign-in: the enrichment lists and the listings share the source's session
      expect(tcm.logins()).toBe(1);
      expect(daemon.stderr()).not.toContain(PAT);
      daemon.child.kill('SIGTERM');
      const res = await daemon.exited;
      expect(res.code, res.stderr).toBe(0);
    });
  }

  it('replay loads the tenant\'s enrichment data before it sends (and not for a dry run)', async () => {
    const rx = await startOtlpReceiver();
    receivers.push(rx);
    const work = tempDir();
    const state = join(work, 'state');
    writeFileSync(join(work, 'users.csv'), 'id,fullName\nuser-1,Ada Lovelace\n');
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(state)} }`,
        'server: { enabled: false }',
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
        `    destinations: [ { type: otlp, name: main, endpoint: ${JSON.stringify(rx.url)} } ]`,
        '    enrichment: { users: { file: users.csv } }',
        '',
      ].join('\n'),
    );
    const key = 'pod=prod-a/siteLuid=s1/y=2026/m=11/d=29/h=01/eventType=hist_access_view/part-1.txt';
    const raw = JSON.stringify({ eventTime: '2026-11-29T01:02:03.000Z', actorUserLuid: 'user-1', siteLuid: 's1', testSeq: 1 });
    mkdirSync(join(state, 'acme', 'dead-letter'), { recursive: true });
    writeFileSync(
      join(state, 'acme', 'dead-letter', '2026-11-30.ndjson'),
      JSON.stringify({ time: '2026-11-30T09:00:00.000Z', kind: 'batch', destination: 'main', reason: 'HTTP 400: bad attribute', status: 400, objects: [{ object: key, firstLine: 1, lastLine: 1 }], lines: [raw], records: [{ object: key, uidPrefix: 'feedfacefeedfacefeedface', line: 1, raw }] }) + '\n',
    );
    const dry = await runCli(['replay', '--config', config, '--dry-run']);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(parseLogLines(dry.stderr).some((l) => l.msg === 'enrichment users loaded')).toBe(false);
    const res = await runCli(['replay', '--config', config]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    const loaded = parseLogLines(res.stderr).find((l) => l.msg === 'enrichment users loaded');
    expect(loaded).toMatchObject({ kind: 'users', entries: 1, kept: 1 });
    expect(rx.records()).toHaveLength(1);
  });
});
