/**
 * Enrichment end to end, through the real daemon: users and sites served by the TCM test server
 * are loaded by the refresher, published to the encode workers and joined with a directory
 * source's record; the OTLP receiver (its own protobuf decoder) sees the names on the record, in
 * its body and on the resource.
 */
import { it, expect } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startOtlpReceiver } from './support/otlp-receiver.js';
import { tempDir } from './support/activity-fixtures.js';
import { startDaemon } from './support/daemon-process.js';
import { startTcmServer } from './support/tcm-server.js';

it('names from TCM users and sites reach the OTLP receiver: attributes, body and resource', async () => {
  const rx = await startOtlpReceiver();
  const PAT = `pat-${randomUUID()}`;
  const SITE = '46a64a61-5e8c-4e4a-b2e0-76740ab0d02b';
  const ADA = '585b2f0e-7c1d-4a8e-9f3b-0c6d1e2a4b5c';
  const tcm = await startTcmServer({ pat: PAT, tenantId: 't-1', users: [{ userId: ADA, userName: 'ada', email: 'ada@acme.example', displayName: 'Ada Lovelace', siteRoles: [{ siteId: SITE, siteRole: 'Creator' }] }], siteDetails: [{ siteUUID: SITE, name: 'Finance', contentUrl: 'finance' }] });
  const work = tempDir();
  const logs = join(work, 'logs', `siteLuid=${SITE}`, 'eventType=hist_access_view');
  mkdirSync(logs, { recursive: true });
  writeFileSync(join(logs, 'part-1.txt'), JSON.stringify({ eventTime: '2026-11-29T01:02:03.000Z', actorUserLuid: ADA, siteLuid: SITE, eventType: 'hist_access_view' }) + '\n');
  const config = join(work, 'config.yaml');
  writeFileSync(config, [
    `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
    'tenants:',
    '  - id: acme',
    `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
    `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(rx.url)} } ]`,
    `    enrichment: { users: tcm, sites: tcm, tcm: { url: ${JSON.stringify(tcm.url)}, tenantId: t-1, patEnv: TCM_PAT } }`,
    '',
  ].join('\n'));
  const d = await startDaemon(['--config', config], { env: { TCM_PAT: PAT } });
  try {
    await rx.waitForRecords(1, 20_000);
    const r = rx.records()[0]!;
    expect(r.attributes['user.full_name']).toBe('Ada Lovelace');
    expect(r.attributes['user.roles']).toEqual(['Creator']);
    expect(r.attributes['user.email']).toBe('ada@acme.example');
    expect(r.attributes['user.id']).toBe(ADA);
    expect(r.body).toMatch(/^Ada Lovelace accessed view/);
    expect(r.resource['tableau.site.name']).toBe('Finance');
    expect(r.resource['tableau.site.content_url']).toBe('finance');
  } finally {
    d.child.kill('SIGTERM');
    await d.exited;
    await rx.close();
    await tcm.close();
  }
}, 60_000);
