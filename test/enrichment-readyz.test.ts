/**
 * `/readyz` shows each tenant's enrichment data (the built CLI, `run`, over real HTTP): its
 * state (pending, loaded, failed-keeping-last-good, failed), the users and sites loaded, the
 * data's age and the last error, which never quotes the PAT; and the daemon is ready whatever
 * the enrichment's state (records go out without the names meanwhile).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, type DaemonProcess } from './support/daemon-process.js';
import { startTcmServer, type TcmServer } from './support/tcm-server.js';

const TENANT = 'db7fad32-0175-431a-b176-7a71be70c2ac';

let daemon: DaemonProcess | undefined;
const receivers: OtlpReceiver[] = [];
const servers: TcmServer[] = [];
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  for (const r of receivers.splice(0)) await r.close();
  for (const s of servers.splice(0)) await s.close();
});

interface KindStatus {
  kind: string;
  from: string;
  state: string;
  entries: number | null;
  loadedAt: string | null;
  dataAgeSeconds: number | null;
  lastError: string | null;
  lastErrorAt: string | null;
}
interface Readyz {
  status: string;
  tenants: Record<string, { ready: boolean; enrichment?: { state: string; users: KindStatus | null; sites: KindStatus | null } }>;
}

async function readyz(): Promise<{ code: number; body: Readyz; text: string }> {
  const r = await daemon!.get('/readyz');
  return { code: r.status, body: JSON.parse(r.body) as Readyz, text: r.body };
}

function replace(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

describe('/readyz and enrichment', () => {
  it('lookup files: loaded, then a broken file keeps the last good copy (named by file and line), then loaded again; ready throughout', async () => {
    const rx = await startOtlpReceiver();
    receivers.push(rx);
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 3);
    const users = join(work, 'users.ndjson');
    const sites = join(work, 'sites.ndjson');
    writeFileSync(users, '{"id":"u1","name":"ada","fullName":"Ada Lovelace"}\n{"id":"u2","name":"alan"}\n');
    writeFileSync(sites, '{"siteUUID":"s1","name":"Finance","contentUrl":"finance"}\n');
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
        '    enrichment: { users: { file: users.ndjson }, sites: { file: sites.ndjson }, fileCheckInterval: 200ms }',
        '  - id: plain',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
        '',
      ].join('\n'),
    );
    daemon = await startDaemon(['--config', config, '--grace', '2s']);
    const loaded = await waitFor('enrichment loaded and the daemon ready', async () => {
      const r = await readyz();
      return r.code === 200 && r.body.tenants.acme?.enrichment?.state === 'loaded' && r.body.tenants.acme?.enrichment?.sites?.state === 'loaded' ? r.body : undefined;
    }, 30_000);
    const e = loaded.tenants.acme!.enrichment!;
    expect(e.users).toMatchObject({ kind: 'users', from: users, state: 'loaded', entries: 2, lastError: null, lastErrorAt: null });
    expect(e.sites).toMatchObject({ kind: 'sites', from: sites, state: 'loaded', entries: 1, lastError: null });
    expect(e.users!.dataAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(Date.parse(e.users!.loadedAt!)).toBeGreaterThan(Date.now() - 120_000);
    expect(loaded.tenants.plain!.enrichment).toBeUndefined(); // a tenant without enrichment shows none

    replace(users, '{"id":"u1","name":"ada"}\n{"id": "u3", "name": \n');
    const failing = await waitFor('the broken file seen', async () => {
      const r = await readyz();
      return r.body.tenants.acme?.enrichment?.state === 'failed-keeping-last-good' ? r : undefined;
    }, 30_000);
    expect(failing.code).toBe(200);
    expect(failing.body.status).toBe('ready');
    expect(failing.body.tenants.acme!.ready).toBe(true);
    const u = failing.body.tenants.acme!.enrichment!.users!;
    expect(u).toMatchObject({ state: 'failed-keeping-last-good', entries: 2 });
    expect(u.lastError).toContain(`${users}:2: not JSON`);
    expect(Date.parse(u.lastErrorAt!)).toBeGreaterThan(0);
    expect(failing.body.tenants.acme!.enrichment!.sites!.state).toBe('loaded');

    replace(users, '{"id":"u1","name":"ada"}\n{"id":"u2","name":"alan"}\n{"id":"u3","name":"grace"}\n');
    const again = await waitFor('the fixed file loaded', async () => {
      const r = await readyz();
      return r.body.tenants.acme?.enrichment?.users?.entries === 3 ? r.body : undefined;
    }, 30_000);
    expect(again.tenants.acme!.enrichment).toMatchObject({ state: 'loaded', users: { state: 'loaded', lastError: null } });
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }, 90_000);

  it('TCM: pending while the first load waits, failed when the PAT is refused (the error never quotes it); ready either way', async () => {
    const rx = await startOtlpReceiver();
    receivers.push(rx);
    const goodPat = `pat-${randomUUID()}`;
    const wrongPat = `pat-${randomUUID()}`;
    const slow = await startTcmServer({ pat: goodPat, tenantId: TENANT, users: [{ userId: 'u1', userName: 'ada' }] });
    const refusing = await startTcmServer({ pat: goodPat, tenantId: TENANT, users: [{ userId: 'u1', userName: 'ada' }] });
    servers.push(slow, refusing);
    slow.respondNext('users', { status: 503, headers: { 'Retry-After': '300' } }); // the first load waits minutes
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 1, 3);
    const tenant = (id: string, tcm: TcmServer, patEnv: string): string[] => [
      `  - id: ${id}`,
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
      `    enrichment: { users: tcm, tcm: { url: ${JSON.stringify(tcm.url)}, tenantId: ${TENANT}, patEnv: ${patEnv} }, initialWait: 0s }`,
    ];
    const config = join(work, 'config.yaml');
    writeFileSync(config, [`state: { dir: ${JSON.stringify(join(work, 'state'))} }`, 'tenants:', ...tenant('waiting', slow, 'GOOD_PAT'), ...tenant('refused', refusing, 'WRONG_PAT'), ''].join('\n'));
    daemon = await startDaemon(['--config', config, '--grace', '2s'], { env: { GOOD_PAT: goodPat, WRONG_PAT: wrongPat } });
    const r = await waitFor('ready, one tenant pending, the other failed', async () => {
      const a = await readyz();
      return a.code === 200 && a.body.tenants.refused?.enrichment?.state === 'failed' ? a : undefined;
    }, 30_000);
    expect(r.body.status).toBe('ready');
    expect(r.body.tenants.waiting!.enrichment).toMatchObject({ state: 'pending', users: { state: 'pending', from: 'tcm', entries: null, dataAgeSeconds: null, lastError: null } });
    expect(r.body.tenants.waiting!.enrichment!.sites).toBeNull();
    const refused = r.body.tenants.refused!.enrichment!.users!;
    expect(refused).toMatchObject({ state: 'failed', entries: null, loadedAt: null, dataAgeSeconds: null });
    expect(refused.lastError).toMatch(/401|refused|sign/i);
    expect(r.text).not.toContain(wrongPat);
    expect(r.text).not.toContain(goodPat);
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }, 90_000);
});
