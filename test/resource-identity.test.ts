/**
 * The resource of a tenant's records: our tenant label apart from Tableau's tenant id, a
 * configurable `service.name`, configured and `static:` attributes on the resource (not on each
 * record), what a source attaches to an object, and the names the daemon keeps for itself.
 * Through the real CLI and an OTLP receiver that decodes protobuf on its own.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli, REPO_ROOT } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';

const EXAMPLES = resolve(REPO_ROOT, 'examples', 'activity-log');

describe('resource identity', () => {
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it('a tenant resource block sets service.name, Tableau tenant id and attributes; static overrides join them on the resource', async () => {
    receiver = await startOtlpReceiver();
    const work = tempDir();
    writeFileSync(join(work, 'overrides.yaml'), 'static: { cost_center: CC-7 }\n');
    writeFileSync(
      join(work, 'config.yaml'),
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: acme-prod',
        '    mappings: ./overrides.yaml',
        '    resource:',
        '      serviceName: tableau-cloud-eu',
        '      tableauTenantId: 7d0c6a1e-tenant',
        '      attributes: { deployment.environment.name: production, region.rank: 2, region.primary: true }',
        `    sources: [ { type: directory, path: ${JSON.stringify(EXAMPLES)} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );
    const res = await runCli(['run', '--once', '--config', join(work, 'config.yaml')]);
    expect(res.code, res.stderr).toBe(0);
    const records = receiver.records();
    expect(records.length).toBe(410);
    for (const r of records) {
      expect(r.resource['tableau_activity_otel.tenant']).toBe('acme-prod');
      expect(r.resource['deployment.environment.name']).toBe('production');
      expect(r.resource['region.rank']).toBe(2);
      expect(r.resource['region.primary']).toBe(true);
      expect(r.resource['cost_center']).toBe('CC-7');
      expect(r.attributes).not.toHaveProperty(['cost_center']);
      expect(r.attributes).not.toHaveProperty(['deployment.environment.name']);
      expect(r.resource['service.name']).toBe('tableau-cloud-eu');
    }
    // the example tree's tenant events sit under tenant=<id> segments: the key's id wins over the configured one
    const fromKey = records.filter((r) => r.resource['tableau.tenant.id'] !== '7d0c6a1e-tenant');
    const configured = records.filter((r) => r.resource['tableau.tenant.id'] === '7d0c6a1e-tenant');
    expect(configured.length).toBeGreaterThan(0);
    expect(fromKey.length).toBeGreaterThan(0);
    for (const r of fromKey) expect(r.resource['tableau.tenant.id']).toBe('db7fad32-0175-431a-b176-7a71be70c2ac');
  });

  it('names the daemon sets itself are refused in resource.attributes and static:, naming the file and line', async () => {
    const work = tempDir();
    writeFileSync(
      join(work, 'config.yaml'),
      [
        'tenants:',
        '  - id: acme',
        '    resource:',
        '      attributes:',
        '        service.name: mine',
        `    sources: [ { type: directory, path: ${JSON.stringify(EXAMPLES)} } ]`,
        '    destinations: [ { type: otlp, endpoint: "http://127.0.0.1:1" } ]',
      ].join('\n'),
    );
    const bad = await runCli(['validate', '--config', join(work, 'config.yaml')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/config\.yaml:5/);
    expect(bad.stderr).toContain('use resource.serviceName');

    writeFileSync(join(work, 'overrides.yaml'), 'static:\n  tableau.tenant.id: x\n');
    writeFileSync(
      join(work, 'config2.yaml'),
      [
        'tenants:',
        '  - id: acme',
        '    mappings: ./overrides.yaml',
        `    sources: [ { type: directory, path: ${JSON.stringify(EXAMPLES)} } ]`,
        '    destinations: [ { type: otlp, endpoint: "http://127.0.0.1:1" } ]',
      ].join('\n'),
    );
    const bad2 = await runCli(['validate', '--config', join(work, 'config2.yaml')]);
    expect(bad2.code).not.toBe(0);
    expect(bad2.stderr).toMatch(/overrides\.yaml:2/);
    expect(bad2.stderr).toContain("resource attribute the daemon sets");
  });

  it("a source's own resource attributes (and service.name) win, and objects with different ones get different resources", () => {
    const mapper = new RecordMapper(loadCatalog(), { tenantId: 't', resource: { serviceName: 'configured' } });
    const line = (luid: string): Record<string, unknown> => ({ eventTime: '2026-11-30T10:00:00.000Z', actorUserLuid: 'u-1', siteLuid: luid, workbookLuid: 'w' });
    const key = 'eventType=access_authoring_view/f.txt';
    const a = mapper.map(line('s-1'), 1, { keyInfo: { ...parseObjectKey(key), resource: { 'service.name': 'tableau-server', 'host.name': 'node-a' } }, uidPrefix: 'p' }, 0n);
    const b = mapper.map(line('s-1'), 2, { keyInfo: { ...parseObjectKey(key), resource: { 'service.name': 'tableau-server', 'host.name': 'node-b' } }, uidPrefix: 'p' }, 0n);
    const c = mapper.map(line('s-1'), 3, { keyInfo: parseObjectKey(key), uidPrefix: 'p' }, 0n);
    if (!a.ok || !b.ok || !c.ok) throw new Error('not mapped');
    expect(a.record.resource.attributes).toMatchObject({ 'service.name': 'tableau-server', 'host.name': 'node-a', 'tableau.site_luid': 's-1', 'tableau_activity_otel.tenant': 't' });
    expect(b.record.resource.attributes['host.name']).toBe('node-b');
    expect(a.record.resource.key).not.toBe(b.record.resource.key);
    expect(c.record.resource.attributes['service.name']).toBe('configured');
    expect(c.record.resource.attributes).not.toHaveProperty(['host.name']);
  });
});
