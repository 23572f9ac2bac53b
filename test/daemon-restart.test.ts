/**
 * A tenant whose destination stays down past `retryFor` is stopped and started again (daemon
 * mode). The failed runtime must stop every one of its runners first: a source that was idle
 * when another one failed must not keep polling beside the new runtime's reader of the same
 * source (each restart would add one more copy of every record that source reads later).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, type DaemonProcess } from './support/daemon-process.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  await receiver?.close();
});

describe('tenant restart after a destination outage', () => {
  it('two sources, the destination down past retryFor twice: after it is back every record arrives once by its uid', async () => {
    receiver = await startOtlpReceiver();
    receiver.setStatus(503);
    const work = tempDir();
    const a = writeFixtureTree(join(work, 'a'), 3, 40);
    mkdirSync(join(work, 'b'), { recursive: true }); // empty at first: its runner is idle when the other fails
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { batchSize: 40, maxInFlightBatches: 2, retryFor: 1s }',
        'tenants:',
        '  - id: acme',
        '    sources:',
        `      - { type: directory, name: a, path: ${JSON.stringify(join(work, 'a'))}, pollInterval: 200ms }`,
        `      - { type: directory, name: b, path: ${JSON.stringify(join(work, 'b'))}, pollInterval: 200ms }`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)}, timeoutMs: 1000 } ]`,
      ].join('\n'),
    );
    daemon = await startDaemon(['--config', config]);
    const failures = (): number => daemon!.logs().filter((l) => l.msg === 'tenant stopped with an error; starting it again after a pause (the other tenants are not affected)').length;
    // down past retryFor: the tenant fails, restarts (after 5 s), fails again
    await waitFor('two failures of the tenant', () => failures() >= 2 || undefined, 60_000);
    receiver.setStatus(null);
    await receiver.waitForRecords(a.records.length, 60_000);
    await waitFor('the tenant running again', () => daemon!.logs().filter((l) => l.msg === 'tenant started').length >= 3 || undefined, 60_000);

    // now records come to the source that was idle during the failures
    const b = writeFixtureTree(join(work, 'b'), 2, 40, 10_000, 'later');
    await receiver.waitForRecords(a.records.length + b.records.length, 30_000);
    // a leaked reader polls every 200 ms: give one several chances to send its copy
    await new Promise((r) => setTimeout(r, 2000));

    const byUid = new Map<unknown, number>();
    for (const r of receiver.records()) byUid.set(r.attributes['log.record.uid'], (byUid.get(r.attributes['log.record.uid']) ?? 0) + 1);
    const laterUids = receiver.records().filter((r) => Number(r.attributes['tableau.test_seq']) >= 10_000);
    const laterCopies = laterUids.length - new Set(laterUids.map((r) => r.attributes['log.record.uid'])).size;
    // nothing was in flight when `b`'s files arrived: not one duplicate of them
    expect(laterCopies).toBe(0);
    const seqs = new Set(receiver.records().map((r) => r.attributes['tableau.test_seq']));
    for (const r of [...a.records, ...b.records]) expect(seqs.has(r.record.testSeq)).toBe(true);
    // `a`'s records were refused, never accepted, until the destination came back: no copies either
    expect([...byUid.values()].filter((n) => n > 1)).toEqual([]);
    expect(failures()).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
