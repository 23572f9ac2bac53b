/**
 * Stopping at 3 a.m.: SIGTERM while a destination is slow exits 0 within the grace period with
 * the checkpoint saved (and nothing lost: a restart sends what was not acknowledged); a second
 * signal exits at once.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, type DaemonProcess } from './support/daemon-process.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  await receiver?.close();
});

function writeConfig(work: string, url: string): string {
  const file = join(work, 'config.yaml');
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      'pipeline: { batchSize: 50, maxInFlightBatches: 2 }',
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(url)}, timeoutMs: 60000 } ]`,
    ].join('\n'),
  );
  return file;
}

function acknowledgedLines(work: string): number {
  const cp = readCheckpointState(join(work, 'state', 'acme')) as { sources: Record<string, { objects: Record<string, { line: number }> }> };
  return Object.values(cp.sources).reduce((n, s) => n + Object.values(s.objects).reduce((m, o) => m + o.line, 0), 0);
}

describe('shutdown', () => {
  it('SIGTERM with a slow destination: exit 0 within the grace period, checkpoint saved, nothing lost', async () => {
    receiver = await startOtlpReceiver();
    const work = tempDir();
    const first = writeFixtureTree(join(work, 'logs'), 2, 50);
    daemon = await startDaemon(['--config', writeConfig(work, receiver.url), '--grace', '3s']);
    await receiver.waitForRecords(first.records.length, 20_000);
    await waitFor('the checkpoint of the first files', () => acknowledgedLines(work) === first.records.length || undefined);

    // now the destination takes a minute per request, and more data comes in
    receiver.setDelay(60_000);
    const second = writeFixtureTree(join(work, 'logs'), 4, 50, 10_000, 'second');
    const before = receiver.requests.length;
    await waitFor('a request in flight', () => receiver!.requests.length > before || undefined, 15_000);

    const t0 = Date.now();
    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    const elapsed = Date.now() - t0;
    expect(res.code, res.stderr).toBe(0);
    expect(elapsed).toBeLessThan(3000 + 1000);
    expect(res.stderr).toMatch(/stopping: no new reads/);
    // everything acknowledged before is in the saved checkpoint; nothing after it
    expect(acknowledgedLines(work)).toBe(first.records.length);

    // a restart sends the rest
    receiver.setDelay(0);
    const again = await runCli(['run', '--once', '--config', join(work, 'config.yaml')]);
    expect(again.code, again.stderr).toBe(0);
    const seqs = new Set(receiver.records().map((r) => r.attributes['tableau.test_seq']));
    for (const r of [...first.records, ...second.records]) expect(seqs.has(r.record.testSeq)).toBe(true);
    expect(acknowledgedLines(work)).toBe(first.records.length + second.records.length);
  });

  it('a second signal exits at once', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(60_000);
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 2, 50);
    daemon = await startDaemon(['--config', writeConfig(work, receiver.url), '--grace', '30s']);
    await waitFor('a request in flight', () => receiver!.requests.some((r) => r.records.length > 0) || undefined, 20_000);
    const t0 = Date.now();
    daemon.child.kill('SIGTERM');
    await daemon.waitForLog((l) => l.msg === 'stopping: no new reads, finishing in-flight batches');
    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(res.code).toBe(143);
    expect(res.stderr).toMatch(/second signal: exiting now/);
  });
});
