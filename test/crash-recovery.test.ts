/**
 * kill -9 of the daemon at random moments of a backfill, restart, and show that the receiver
 * got every record, with duplicates only from the batches that were in flight.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { killMidRun, runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
});

describe('crash recovery', () => {
  it('kill -9 five times mid-run: every record arrives, duplicates bounded by the in-flight batches', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(25);
    const work = tempDir();
    const BATCH = 100;
    const IN_FLIGHT = 2;
    const tree = writeFixtureTree(join(work, 'logs'), 40, 250); // 10 000 records, some gzip
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        `pipeline: { batchSize: ${BATCH}, maxInFlightBatches: ${IN_FLIGHT} }`,
        'tenants:',
        '  - id: crashy',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );

    const KILLS = 5;
    let killed = 0;
    for (let i = 0; i < KILLS; i++) {
      // once this run has delivered something, kill it at a random moment
      if (await killMidRun(['run', '--once', '--config', config], { delivered: () => receiver!.records().length, atLeast: BATCH, waitMs: 20_000, jitterMs: 300 })) killed++;
    }
    expect(killed).toBeGreaterThanOrEqual(3);

    const final = await runCli(['run', '--once', '--config', config]);
    expect(final.code, final.stderr).toBe(0);

    const counts = new Map<number, number>();
    for (const r of receiver.records()) {
      const seq = r.attributes['tableau.test_seq'] as number;
      counts.set(seq, (counts.get(seq) ?? 0) + 1);
    }
    const missing = tree.records.filter((r) => !counts.has(r.record.testSeq as number));
    expect(missing.length).toBe(0);
    const duplicates = [...counts.values()].reduce((n, c) => n + (c - 1), 0);
    // each kill can cut at most the batches in flight (plus the one whose checkpoint write was cut)
    // (+2: the batch being committed while the process died, and one acknowledged during that save)
    expect(duplicates).toBeLessThanOrEqual(killed * (IN_FLIGHT + 2) * BATCH);
    // same record → same uid on every re-send, so a destination can drop them
    const uids = new Map<number, Set<unknown>>();
    for (const r of receiver.records()) {
      const seq = r.attributes['tableau.test_seq'] as number;
      uids.set(seq, (uids.get(seq) ?? new Set()).add(r.attributes['log.record.uid']));
    }
    expect([...uids.values()].every((s) => s.size === 1)).toBe(true);
    console.log(`crash test: ${killed} kills, ${tree.records.length} records, ${duplicates} duplicates`);
  }, 180_000);
});
