/**
 * Disk full on the state directory: the state dir is a 512 kB tmpfs (`mount -t tmpfs`, root
 * only; skipped with the reason where mounting is refused). The daemon (polling every second)
 * reads a first set of files, then:
 *
 * 1. the filesystem is filled to the last byte and new files land in the source directory: once
 *    a save fails (the checkpoint's journal may first fill the space left in its last page) the
 *    daemon says it cannot save its checkpoint and stops taking on work (at most the batches
 *    already in flight are delivered), the checkpoint stays as it was;
 *    space is freed: it recovers by itself, every record delivered, "checkpoint saved again";
 * 2. the filesystem is left with 128 kB and a 400 kB bad line arrives: its dead letter cannot be
 *    written. The daemon says so, writes no torn line, holds that batch (the checkpoint does not
 *    move past a line whose dead letter is not on disk); space is freed: the letter is written.
 *
 * All along, the checkpoint (checkpoints.json and its journal) is read every 100 ms: always
 * parseable, never backwards.
 */
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync, writeFileSync, statSync, truncateSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, savedCheckpoint, sleep, waitFor, type Scenario } from '../lib/harness.js';
import { CheckpointFileError, readCheckpointState } from '../../../src/pipeline/checkpoint-store.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

function fill(dir: string): string {
  const file = join(dir, 'filler.bin');
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 0x55);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  // the last partial page too
  const fd2 = openSync(join(dir, 'filler2.bin'), 'w');
  try {
    for (;;) writeSync(fd2, Buffer.alloc(1, 0x55));
  } catch {
    /* full */
  } finally {
    closeSync(fd2);
  }
  return file;
}

export const diskFull: Scenario = {
  name: 'disk-full',
  title: 'the state directory fills up mid-run, then space is freed',
  async run(ctx, { short }) {
    const FULL_MS = short ? 6_000 : 30_000;
    const BATCH = 200;
    const IN_FLIGHT = 2;
    const mnt = ctx.dir('statefs');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0700', 'tmpfs', mnt], { stdio: 'pipe' });
    } catch (err) {
      const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
      return { eventsIn: 0, delivered: 0, duplicates: 0, deadLettered: 0, peakRssMb: 0, outcome: 'skip', notes: `cannot mount a small tmpfs here (${why}); run as root on Linux` };
    }
    ctx.defer(() => execFileSync('umount', ['-l', mnt], { stdio: 'pipe' }));
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const first = writeFixtureTree(logs, 4, 500, 0, 'first');
    const state = join(mnt, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT },
      tenants: [{ id: 'acme', sources: [{ type: 'directory', path: logs, pollInterval: '1s' }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }],
    });
    const cpDir = join(state, 'acme');
    const cpFile = join(cpDir, 'checkpoints.json');
    const d = ctx.start(['run', '--config', config]);
    const extra: string[] = [];
    const notes: string[] = [];

    // watch the checkpoint: always parseable, never backwards
    let reads = 0;
    let unparseable = 0;
    let backwards = 0;
    const last = new Map<string, number>();
    const watch = setInterval(() => {
      if (!existsSync(cpFile)) return;
      let doc: ReturnType<typeof readCheckpointState>;
      try {
        doc = readCheckpointState(cpDir);
      } catch (err) {
        if (err instanceof CheckpointFileError) {
          reads++;
          unparseable++;
        }
        return;
      }
      reads++;
      for (const [sid, s] of Object.entries(doc.sources)) {
        for (const [key, p] of Object.entries(s.objects)) {
          const k = `${sid}\n${key}`;
          const v = p.done ? Number.MAX_SAFE_INTEGER : p.line;
          if (v < (last.get(k) ?? 0)) backwards++;
          last.set(k, v);
        }
      }
    }, 100);
    ctx.defer(() => clearInterval(watch));

    if (!(await waitFor(() => receiver.records().length >= first.records.length, 30_000))) extra.push('the first files were not delivered before the disk filled');
    await sleep(1_500); // let the checkpoint of the first files be written
    const valid = first.records.map((r) => r.record.testSeq as number);
    const want = new Set<number>();
    const allArrived = (): boolean => {
      const seen = new Set<number>();
      for (const r of receiver.records()) {
        const v = r.attributes['tableau.test_seq'];
        if (typeof v === 'number' && want.has(v)) seen.add(v);
      }
      return seen.size === want.size;
    };
    const lineLetters = (): number => readDeadLetters(state, 'acme').filter((l) => l.kind === 'line').length;
    const freeAll = (): void => {
      for (const f of ['filler.bin', 'filler2.bin']) rmSync(join(mnt, f), { force: true });
    };
    const recoverWithin = short ? 60_000 : 120_000;

    // Phase 1: the disk is full to the last byte; new files arrive (one with a bad line)
    fill(mnt);
    const second = writeFixtureTree(logs, 12, 500, 100_000, 'second');
    const badKey = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=00/eventType=add_delete_user_to_group/bad-while-full.txt`;
    mkdirSync(join(logs, ...badKey.split('/').slice(0, -1)), { recursive: true });
    writeFileSync(
      join(logs, ...badKey.split('/')),
      [JSON.stringify({ eventTime: '2026-11-29T00:00:00Z', siteLuid: SITE, testSeq: 200_000 }), '{"this is": not json', JSON.stringify({ eventTime: '2026-11-29T00:00:01Z', siteLuid: SITE, testSeq: 200_001 })].join('\n') + '\n',
    );
    valid.push(...second.records.map((r) => r.record.testSeq as number), 200_000, 200_001);
    // from the first save that fails
    const cpSaid = await waitFor(() => logLines(d.output(), /cannot save checkpoint/).length > 0, 30_000);
    if (!cpSaid) extra.push('full disk: nothing in the log says the checkpoint cannot be saved');
    const atFull = receiver.records().length;
    const cpAtFull = savedCheckpoint(state, 'acme');
    await sleep(FULL_MS);
    const duringFull = receiver.records().length - atFull;
    const bound = (IN_FLIGHT + 1) * BATCH;
    if (duringFull > bound) extra.push(`full disk: ${duringFull} records delivered while full (reading should pause; bound ${bound})`);
    let cpNow = '';
    try {
      cpNow = savedCheckpoint(state, 'acme');
    } catch {
      extra.push('the checkpoint unparseable while the disk was full');
    }
    notes.push(`full ${FULL_MS / 1000} s from the first failed save: ${duringFull} records delivered meanwhile (in-flight bound ${bound}), checkpoint ${cpNow === cpAtFull ? 'unchanged' : 'rewritten'}, "cannot save checkpoint" logged`);
    freeAll();
    let freedAt = Date.now();
    for (const v of valid) want.add(v);
    if (!(await waitFor(() => allArrived() && lineLetters() >= 1, recoverWithin, 250))) extra.push(`full disk: not recovered within ${recoverWithin / 1000} s after space was freed`);
    notes.push(`recovered ${Math.round((Date.now() - freedAt) / 1000)} s after space was freed`);
    if (logLines(d.output(), /checkpoint saved again/).length === 0) extra.push('no "checkpoint saved again" log line');

    // Phase 2: nearly full (128 kB left) and a 400 kB bad line arrives: its dead letter cannot fit
    const filler = fill(mnt);
    rmSync(join(mnt, 'filler2.bin'), { force: true });
    truncateSync(filler, Math.max(0, statSync(filler).size - 128 * 1024));
    const atNearly = receiver.records().length;
    const bigBadKey = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=00/eventType=add_delete_user_to_group/big-bad-nearly-full.txt`;
    writeFileSync(
      join(logs, ...bigBadKey.split('/')),
      [JSON.stringify({ eventTime: '2026-11-29T00:00:00Z', siteLuid: SITE, testSeq: 300_000 }), `{"not json": ${'x'.repeat(400 * 1024)}`, JSON.stringify({ eventTime: '2026-11-29T00:00:02Z', siteLuid: SITE, testSeq: 300_001 })].join('\n') + '\n',
    );
    valid.push(300_000, 300_001);
    await sleep(short ? 4_000 : 10_000);
    // The daemon keeps trying the letter, and each try writes what fits before it is taken back
    // (ftruncate): a read can land between the two. A torn line left behind is still there later.
    const tornNow = (): number => readDeadLetters(state, 'acme').filter((l) => l.kind === 'torn').length;
    let torn = tornNow();
    if (torn > 0) {
      await sleep(500);
      torn = Math.min(torn, tornNow());
    }
    if (torn > 0) extra.push(`nearly full: ${torn} torn dead-letter lines`);
    if (logLines(d.output(), /cannot write the dead-letter file/).length === 0) extra.push('nearly full: nothing in the log says the dead letter cannot be written');
    const duringNearly = receiver.records().length - atNearly;
    notes.push(`nearly full (128 kB left, a 400 kB dead letter due): ${duringNearly} records of its batch delivered meanwhile, no torn dead-letter line, "cannot write the dead-letter file" logged`);
    freeAll();
    freedAt = Date.now();
    for (const v of valid) want.add(v);
    if (!(await waitFor(() => allArrived() && lineLetters() >= 2, recoverWithin, 250))) extra.push(`nearly full: not recovered within ${recoverWithin / 1000} s after space was freed`);
    notes.push(`recovered ${Math.round((Date.now() - freedAt) / 1000)} s after space was freed`);
    await sleep(1_000);
    const r = await ctx.stop(d);
    clearInterval(watch);
    if (r.code !== 0) extra.push(`daemon exited ${r.code} after SIGTERM`);
    if (unparseable > 0) extra.push(`the checkpoint unparseable in ${unparseable} of ${reads} reads`);
    if (backwards > 0) extra.push(`checkpoint moved backwards ${backwards} times`);
    notes.push(`checkpoint read ${reads} times: always parseable${backwards === 0 ? ', never backwards' : ''}`);
    const restarts = logLines(d.output(), /tenant stopped with an error|restarting/i).length;
    if (restarts > 0) notes.push(`${restarts} tenant restart log lines`);
    const j = judge(
      receiver.records(),
      readDeadLetters(state, 'acme'),
      { valid, bad: [{ label: 'bad line while full', object: 'bad-while-full.txt', line: 2, reason: /invalid JSON/ }, { label: '400 kB bad line while nearly full', object: 'big-bad-nearly-full.txt', line: 2, reason: /invalid JSON/ }], dupBound: 2 * (IN_FLIGHT + 1) * BATCH, rssLimitMb: 400 },
      ctx.peakRssMb,
    );
    return resultOf(j, valid.length + 2, ctx.peakRssMb, extra, notes);
  },
};
