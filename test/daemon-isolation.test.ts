/**
 * Many tenants in one process: a destination that is down, a source that cannot be read and a
 * tenant whose state is poisoned do not slow or stop a healthy tenant; /readyz, /healthz and
 * /metrics tell which is which.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { startTcmServer, type TcmServer } from './support/tcm-server.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, metricValue, type DaemonProcess } from './support/daemon-process.js';

const receivers: OtlpReceiver[] = [];
let tcm: TcmServer | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await tcm?.close();
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  for (const r of receivers.splice(0)) await r.close();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  receivers.push(r);
  return r;
}

interface ReadyBody {
  status: string;
  tenants: Record<
    string,
    {
      state: string;
      ready: boolean;
      lastError: string | null;
      sources: Array<{ id: string; state: string; lastError: string | null; eventsExported: number; lagSeconds: number | null }>;
      destinations: Array<{ name: string; reached: boolean; state: string; lastError: string | null; lastSuccess: string | null }>;
    }
  >;
}

describe('tenant isolation', () => {
  it('a dead destination, a missing source, wrong credentials, a poison object and a poisoned state do not hold back a healthy tenant; /readyz has the detail', async () => {
    const ok = await receiver();
    const down = await receiver();
    down.setStatus(503);
    const work = tempDir();
    const healthyTree = writeFixtureTree(join(work, 'healthy'), 6, 50);
    writeFixtureTree(join(work, 'down'), 4, 50);
    const poisonTree = writeFixtureTree(join(work, 'poison'), 2, 10);
    // a poison object: binary junk, every line of it dead-lettered once the tenant runs
    const junk = Array.from({ length: 200 }, () => randomBytes(64).toString('latin1').replace(/\n/g, ' ')).join('\n');
    writeFileSync(join(poisonTree.root, ...poisonTree.files[0]!.split('/').slice(0, -1), 'junk.log'), junk);
    tcm = await startTcmServer({ pat: 'the-right-pat', tenantId: 'db7fad32-0175-431a-b176-7a71be70c2ac' });
    // a checkpoint file that is not one: the tenant cannot start (and is retried), the others run
    mkdirSync(join(work, 'state', 'poison'), { recursive: true });
    writeFileSync(join(work, 'state', 'poison', 'checkpoints.json'), '{"this is": "not a checkpoint"');
    const dir = (p: string): string => JSON.stringify(join(work, p));
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${dir('state')} }`,
        'pipeline: { batchSize: 50, maxInFlightBatches: 2 }',
        'tenants:',
        '  - id: down',
        `    sources: [ { type: directory, path: ${dir('down')}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(down.url)}, timeout: 1s } ]`,
        '  - id: nosource',
        `    sources: [ { type: directory, path: ${dir('does-not-exist')}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(ok.url)} } ]`,
        '  - id: poison',
        `    sources: [ { type: directory, path: ${dir('poison')}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(ok.url)} } ]`,
        '  - id: badcreds',
        `    sources: [ { type: tcm, tenantId: db7fad32-0175-431a-b176-7a71be70c2ac, url: ${JSON.stringify(tcm.url)}, patEnv: WRONG_PAT, pollInterval: 1s } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(ok.url)} } ]`,
        '  - id: healthy',
        `    sources: [ { type: directory, path: ${dir('healthy')}, pollInterval: 200ms } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(ok.url)} } ]`,
      ].join('\n'),
    );

    daemon = await startDaemon(['--config', config], { env: { WRONG_PAT: 'not-the-right-pat' } });
    const t0 = Date.now();
    await ok.waitForRecords(healthyTree.records.length, 20_000);
    const healthyAfterMs = Date.now() - t0;
    expect(ok.records().every((r) => r.resource['tableau_activity_otel.tenant'] === 'healthy')).toBe(true);

    const health = await daemon.get('/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: 'ok' });

    // wait until each failure shows in /readyz
    const ready = await waitFor('the failures in /readyz', async () => {
      const r = await daemon!.get('/readyz');
      const b = JSON.parse(r.body) as ReadyBody;
      const t = b.tenants;
      // (the healthy source's poll counts as ok once its checkpoint is saved, a moment after the last records arrived)
      const seen = t.down?.destinations[0]?.lastError && t.nosource?.sources[0]?.lastError && t.badcreds?.sources[0]?.lastError && t.poison?.lastError && t.healthy?.ready && t.healthy.sources[0]?.state === 'ok';
      return seen ? { status: r.status, body: b } : undefined;
    });
    expect(ready.status).toBe(503);
    const t = ready.body.tenants;
    expect(ready.body.status).toBe('not ready');
    expect(t.healthy).toMatchObject({ state: 'running', ready: true, lastError: null });
    expect(t.healthy!.destinations[0]).toMatchObject({ name: 'otlp', reached: true, state: 'ok' });
    expect(t.healthy!.sources[0]).toMatchObject({ state: 'ok', eventsExported: healthyTree.records.length });
    expect(t.healthy!.sources[0]!.lagSeconds).toBeGreaterThan(0);
    expect(t.down).toMatchObject({ state: 'running', ready: false });
    expect(t.down!.destinations[0]).toMatchObject({ reached: false, state: 'failing' });
    expect(t.down!.destinations[0]!.lastError).toMatch(/503|retryable/); // (the OTLP exporter does not name the status of retryable answers)
    expect(t.nosource!.sources[0]).toMatchObject({ state: 'failing' });
    expect(t.nosource!.sources[0]!.lastError).toMatch(/ENOENT|no such file/);
    expect(t.nosource!.destinations[0]).toMatchObject({ reached: true }); // a source problem is not a readiness problem
    expect(t.badcreds!.sources[0]).toMatchObject({ state: 'failing' });
    expect(t.badcreds!.sources[0]!.lastError).toMatch(/sign-in rejected \(HTTP 401\)/);
    expect(t.poison).toMatchObject({ state: 'failed' });
    expect(t.poison!.lastError).toMatch(/JSON|checkpoint/);

    // the healthy tenant keeps exporting new files promptly while the others fail
    writeFixtureTree(join(work, 'healthy'), 1, 20, 50_000, 'later');
    const t1 = Date.now();
    await ok.waitForRecords(healthyTree.records.length + 20, 10_000);
    const laterMs = Date.now() - t1;
    console.log(`isolation: healthy backlog in ${healthyAfterMs} ms, a later file in ${laterMs} ms`);

    const metrics = await daemon.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.contentType).toMatch(/text\/plain/);
    const m = metrics.body;
    expect(metricValue(m, 'tao_events_exported_total', { tenant: 'healthy', destination: 'otlp' })).toBe(healthyTree.records.length + 20);
    expect(metricValue(m, 'tao_events_read_total', { tenant: 'healthy' })).toBe(healthyTree.records.length + 20);
    expect(metricValue(m, 'tao_export_retries_total', { tenant: 'down', destination: 'otlp' })).toBeGreaterThan(0);
    expect(metricValue(m, 'tao_events_exported_total', { tenant: 'down' })).toBeUndefined();
    expect(metricValue(m, 'tao_source_up', { tenant: 'nosource' })).toBe(0);
    expect(metricValue(m, 'tao_source_up', { tenant: 'badcreds' })).toBe(0);
    expect(metricValue(m, 'tao_source_up', { tenant: 'healthy' })).toBe(1);
    expect(metricValue(m, 'tao_destination_up', { tenant: 'down' })).toBe(0);
    expect(metricValue(m, 'tao_destination_up', { tenant: 'healthy' })).toBe(1);
    expect(metricValue(m, 'tao_tenant_up', { tenant: 'poison' })).toBe(0);
    expect(metricValue(m, 'tao_tenant_up', { tenant: 'healthy' })).toBe(1);
    expect(metricValue(m, 'tao_lag_seconds', { tenant: 'healthy' })).toBeGreaterThan(0);
    expect(metricValue(m, 'tao_newest_exported_event_timestamp_seconds', { tenant: 'healthy' })).toBeCloseTo(Date.parse('2026-11-29T05:59:07Z') / 1000, -4);
    expect(metricValue(m, 'tao_checkpoint_age_seconds', { tenant: 'healthy' })).toBeLessThan(30);
    expect(metricValue(m, 'tao_export_duration_seconds_count', { tenant: 'healthy', destination: 'otlp' })).toBeGreaterThan(0);
    expect(metricValue(m, 'tao_objects_read_total', { tenant: 'healthy' })).toBe(7);
    expect(metricValue(m, 'tao_events_by_type_total', { tenant: 'healthy', event_type: 'hist_access_view' })).toBeGreaterThan(0);
    expect(metricValue(m, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);

    // the destination comes back and the state is repaired: their backlogs arrive (the poisoned
    // tenant at its next restart), and every destination has now been reached
    writeFileSync(join(work, 'state', 'poison', 'checkpoints.json'), '{"version":1,"savedAt":"","sources":{}}');
    down.setStatus(null);
    await down.waitForRecords(200, 30_000);
    await ok.waitForRecords(healthyTree.records.length + 20 + 20, 30_000);
    expect(ok.records().filter((r) => r.resource['tableau_activity_otel.tenant'] === 'poison').length).toBe(20);
    const poisonMetrics = (await daemon.get('/metrics')).body;
    expect(metricValue(poisonMetrics, 'tao_events_dead_lettered_total', { tenant: 'poison' })).toBeGreaterThan(100);
    const readyNow = await waitFor('ready', async () => ((await daemon!.get('/readyz')).status === 200 ? true : undefined), 10_000);
    expect(readyNow).toBe(true);

    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(res.code, res.stderr).toBe(0);
  });
});
