/**
 * SIGHUP: the configuration is read again and validated first. An invalid one keeps the old
 * configuration running and says why; a valid one stops the changed and removed tenants
 * gracefully, starts the new and changed ones, and leaves the unchanged ones running.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, metricValue, type DaemonProcess } from './support/daemon-process.js';

const receivers: OtlpReceiver[] = [];
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  for (const r of receivers.splice(0)) await r.close();
});

interface TenantSpec {
  id: string;
  dir: string;
  url: string;
  mappings?: string;
}

function configText(work: string, tenants: TenantSpec[], extra = ''): string {
  return [
    `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
    'pipeline: { batchSize: 50 }',
    'tenants:',
    ...tenants.flatMap((t) => [
      `  - id: ${t.id}`,
      ...(t.mappings ? [`    mappings: ${t.mappings}`] : []),
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, t.dir))}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(t.url)} } ]`,
    ]),
    extra,
  ].join('\n');
}

const tenantOf = (r: { resource: Record<string, unknown> }): unknown => r.resource['tableau_activity_otel.tenant'];

describe('configuration reload (SIGHUP)', () => {
  it('keeps the old configuration when the new one is invalid; applies a valid one tenant by tenant', async () => {
    const rx = await startOtlpReceiver();
    const other = await startOtlpReceiver();
    receivers.push(rx, other);
    const work = tempDir();
    const config = join(work, 'config.yaml');
    writeFixtureTree(join(work, 'a'), 2, 25);
    writeFixtureTree(join(work, 'b'), 2, 25);
    const v1: TenantSpec[] = [
      { id: 'alpha', dir: 'a', url: rx.url },
      { id: 'beta', dir: 'b', url: rx.url },
    ];
    writeFileSync(config, configText(work, v1));
    daemon = await startDaemon(['--config', config, '--grace', '5s']);
    await rx.waitForRecords(100, 20_000);
    const betaAcked = (): number => daemon!.logs().filter((l) => l.msg === 'objects read and acknowledged' && l.tenant === 'beta').reduce((n, l) => n + Number(l.objects), 0);
    const started = (id: string): number => daemon!.logs().filter((l) => l.msg === 'tenant started' && l.tenant === id).length;
    expect(started('alpha')).toBe(1);

    // 1. a config with an error: nothing changes, the reason is logged with file and line
    writeFileSync(config, configText(work, v1).replace('pipeline: { batchSize: 50 }', 'pipeline: { batchSize: 50, batchSise: 9 }'));
    daemon.child.kill('SIGHUP');
    const failed = await daemon.waitForLog((l) => l.msg === 'configuration reload failed; the previous configuration keeps running');
    expect(String(failed.err)).toContain(`${config}:2:`);
    expect(String(failed.err)).toContain("unknown key 'batchSise'");
    // 2. one that only fails when its sources are built (two sources with the same id)
    writeFileSync(config, configText(work, v1).replace(/(sources: \[ (\{[^}]*\}) \])/, '$1').replace(/sources: \[ (\{[^}]*\}) \]/, 'sources: [ $1, $1 ]'));
    daemon.child.kill('SIGHUP');
    const failures = (): Record<string, unknown>[] => daemon!.logs().filter((l) => l.msg === 'configuration reload failed; the previous configuration keeps running');
    await waitFor('the second failure', () => failures().length === 2 || undefined);
    // the failure's own line, not the last line: a tenant's progress line may follow it
    expect(String(failures()[1]!.err)).toMatch(/two sources share the id/);
    // ... and the old configuration still runs
    writeFixtureTree(join(work, 'a'), 1, 10, 1000, 'later');
    await rx.waitForRecords(110, 10_000);
    const m1 = (await daemon.get('/metrics')).body;
    expect(metricValue(m1, 'tao_config_reloads_total', { result: 'failure' })).toBe(2);
    expect(metricValue(m1, 'tao_config_last_reload_successful')).toBe(0);
    const r1 = JSON.parse((await daemon.get('/readyz')).body) as { config: { lastReload: { result: string; error: string } } };
    expect(r1.config.lastReload.result).toBe('failure');
    expect(started('alpha')).toBe(1);
    expect(started('beta')).toBe(1);

    // 3. valid: alpha unchanged, beta changed (overrides that drop an event type, another receiver), gamma new
    writeFileSync(join(work, 'beta.yaml'), 'eventTypes: { drop: [login_authentication] }\n');
    writeFixtureTree(join(work, 'c'), 4, 10, 2000, 'gamma');
    const v2: TenantSpec[] = [
      { id: 'alpha', dir: 'a', url: rx.url },
      { id: 'beta', dir: 'b', url: other.url, mappings: './beta.yaml' },
      { id: 'gamma', dir: 'c', url: rx.url },
    ];
    writeFileSync(config, configText(work, v2));
    daemon.child.kill('SIGHUP');
    const applied = await daemon.waitForLog((l) => l.msg === 'configuration reloaded: applying');
    expect(applied).toMatchObject({ added: ['gamma'], changed: ['beta'], removed: [], unchanged: ['alpha'] });
    await daemon.waitForLog((l) => l.msg === 'configuration reloaded');
    await waitFor('gamma records', () => rx.records().filter((r) => tenantOf(r) === 'gamma').length === 40 || undefined);
    // beta's checkpoint survived the restart: only new files go to its new destination, through its new overrides
    const betaAckedBefore = betaAcked();
    writeFixtureTree(join(work, 'b'), 2, 10, 3000, 'beta-later'); // one hist_access_view file, one login_authentication file
    await other.waitForRecords(10, 15_000);
    // both files acknowledged: every record of theirs that was going anywhere has been accepted
    await waitFor('beta acknowledges both new files', () => betaAcked() - betaAckedBefore >= 2 || undefined);
    expect(other.records().length).toBe(10);
    expect(other.records().every((r) => r.eventName === 'tableau.hist_access_view')).toBe(true);
    // alpha was not restarted and still exports
    writeFixtureTree(join(work, 'a'), 1, 5, 4000, 'alpha-later');
    await waitFor('alpha records', () => rx.records().filter((r) => tenantOf(r) === 'alpha').length === 65 || undefined);
    expect(started('alpha')).toBe(1);
    expect(started('beta')).toBe(2);
    const m2 = (await daemon.get('/metrics')).body;
    expect(metricValue(m2, 'tao_config_reloads_total', { result: 'success' })).toBe(1);
    expect(metricValue(m2, 'tao_config_last_reload_successful')).toBe(1);

    // 4. beta removed
    writeFileSync(config, configText(work, [v2[0]!, v2[2]!]));
    daemon.child.kill('SIGHUP');
    const removed = await daemon.waitForLog((l) => l.msg === 'configuration reloaded: applying' && Array.isArray(l.removed) && (l.removed as string[]).includes('beta'));
    expect(removed).toMatchObject({ removed: ['beta'], unchanged: ['alpha', 'gamma'] });
    await waitFor('beta gone from /readyz', async () => {
      const body = JSON.parse((await daemon!.get('/readyz')).body) as { tenants: Record<string, unknown> };
      return !('beta' in body.tenants) && 'gamma' in body.tenants ? true : undefined;
    });
    expect(started('alpha')).toBe(1);

    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(res.code, res.stderr).toBe(0);
  });
});
