/**
 * A poll that finds nothing new does not write the checkpoint file (it wrote it, with two
 * fsyncs, after every poll), while tao_checkpoint_age_seconds still counts from the last poll
 * that found the state as the file holds it (src/pipeline/source-runner.ts, checkpoint-saver.ts).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { metricValue, startDaemon, waitFor, stopDaemon, type DaemonProcess } from './support/daemon-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await stopDaemon(daemon);
  await receiver?.close();
  daemon = undefined;
  receiver = undefined;
});

describe('checkpoint on idle polls', () => {
  it('an idle poll leaves the file as it is; the checkpoint age counts from the last poll; new data is saved', async () => {
    receiver = await startOtlpReceiver();
    const work = tempDir();
    const logs = join(work, 'logs');
    const tree = writeFixtureTree(logs, 2, 50);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], undefined, { pollInterval: '200ms' });
    daemon = await startDaemon(['--config', config]);
    const d = daemon;
    await waitFor('every record exported', () => receiver!.records().length >= tree.records.length || undefined, 60_000, 100);
    const lastPoll = async (): Promise<number> => {
      const body = JSON.parse((await d.get('/readyz')).body) as { tenants: Record<string, { sources: Array<{ lastSuccess: string | null }> }> };
      return Date.parse(body.tenants.acme!.sources[0]!.lastSuccess ?? '') || 0;
    };
    // a poll that completed after the export (the saves of the acknowledgements are behind it)
    const exportedAt = Date.now();
    let seen = await waitFor('a poll after the export', async () => {
      const at = await lastPoll();
      return at > exportedAt ? at : undefined;
    });
    // the state's files: checkpoints.json and the journal of the saves since its last fold
    const dir = join(work, 'state', 'acme');
    const files = () => Object.fromEntries(readdirSync(dir).map((name) => [name, { ino: statSync(join(dir, name)).ino, mtimeMs: statSync(join(dir, name)).mtimeMs, text: readFileSync(join(dir, name), 'utf8') }]));
    const before = files();
    expect(Object.keys(before)).toContain('checkpoints.json');
    expect(Object.keys(readCheckpointState(dir).sources)).toHaveLength(1);
    // three polls more, none of them with anything new
    for (let i = 0; i < 3; i++) {
      const prev = seen;
      seen = await waitFor(`idle poll ${i + 1}`, async () => {
        const at = await lastPoll();
        return at > prev ? at : undefined;
      });
    }
    const after = files();
    expect(after).toEqual(before);
    const writtenAt = Math.max(...Object.values(after).map((f) => f.mtimeMs));
    // the age counts from the polls: seconds, not the time since the file was written
    const age = metricValue((await d.get('/metrics')).body, 'tao_checkpoint_age_seconds', { tenant: 'acme' });
    expect(age).toBeDefined();
    expect(age!).toBeLessThan((Date.now() - writtenAt) / 1000);

    // new data: read, exported and saved as before
    const more = writeFixtureTree(logs, 1, 20, 10_000, 'later');
    await waitFor('the new records exported', () => receiver!.records().length >= tree.records.length + more.records.length || undefined, 60_000, 100);
    await waitFor('the checkpoint saved with the new object', () => (more.files.every((k) => JSON.stringify(readCheckpointState(dir)).includes(k)) ? true : undefined), 30_000, 100);
    expect(files()).not.toEqual(before);
  }, 120_000);
});
