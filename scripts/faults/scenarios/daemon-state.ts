/**
 * Faults of the daemon's own state and restarts:
 *
 * - tenant-restart: a tenant with two directory sources, one of them idle (its files already
 *   delivered); mid-backfill of the other the destination refuses connections past `retryFor`
 *   while the tenant is started again (5 s, 10 s backoff) and fails again, twice (three times in
 *   the long run); then it comes back and more files land in both sources. Every record arrives; duplicates only from the batches the outage cut (at most
 *   sources × in-flight batches), none of the files that came later (a failed runtime whose
 *   reader of the idle source kept polling would send each of them once more per restart);
 * - second-daemon: while a daemon works through a backfill (the destination's answers held until
 *   they have tried), a second daemon and a `run --once` on the same state directory exit 2
 *   naming the holder (pid, lock file); the first finishes
 *   with no duplicates, releases the lock on SIGTERM; then a `kill -9` leaves a stale lock that
 *   the next `run --once` takes over with a warning and finishes.
 */
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, sleep, waitFor, type Scenario } from '../lib/harness.js';
import { TcpProxy } from '../lib/tcp-proxy.js';

const RESTARTING = 'tenant stopped with an error; starting it again after a pause (the other tenants are not affected)';

export const tenantRestart: Scenario = {
  name: 'tenant-restart',
  title: 'two sources, the destination down past retryFor through several tenant restarts, then back',
  async run(ctx, { short }) {
    const FAILURES = short ? 2 : 3;
    const BATCH = 200;
    const IN_FLIGHT = 4;
    const SOURCES = 2;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(20);
    const proxy = await TcpProxy.start(Number(new URL(receiver.url).port));
    ctx.defer(() => proxy.close());
    const work = ctx.dir('work');
    const files = short ? 12 : 40;
    mkdirSync(join(work, 'a'), { recursive: true });
    // source b has a little data, read before the outage: its reader is idle (polling) when the other fails
    const b = writeFixtureTree(join(work, 'b'), 2, 500, 1_000_000);
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT, retryFor: '2s' },
      tenants: [
        {
          id: 'acme',
          sources: [
            { type: 'directory', name: 'a', path: join(work, 'a'), pollInterval: '200ms' },
            { type: 'directory', name: 'b', path: join(work, 'b'), pollInterval: '200ms' },
          ],
          destinations: [{ type: 'otlp', endpoint: proxy.url }],
        },
      ],
    });
    const extra: string[] = [];
    const d = ctx.start(['run', '--config', config]);
    await waitFor(() => receiver.records().length >= b.records.length || !d.alive, 30_000, 5);
    // then a backfill lands in source a, and the destination goes down while it is delivered
    const a = writeFixtureTree(join(work, 'a'), files, 500, 0);
    await waitFor(() => receiver.records().length >= b.records.length + 2 * BATCH || !d.alive, 30_000, 5);
    await proxy.down();
    const downAt = Date.now();
    const failed = (): number => logLines(d.output(), RESTARTING).length;
    if (!(await waitFor(() => failed() >= FAILURES || !d.alive, 120_000, 50))) extra.push(`the tenant failed ${failed()} times, not ${FAILURES}, while the destination was down`);
    const downFor = Date.now() - downAt;
    await proxy.up();
    const initial = [...a.records, ...b.records].map((r) => r.record.testSeq as number);
    // what arrived, by sequence, kept up incrementally: the receiver and the proxy share this
    // process's event loop, and records() copies what it holds (called once per element of a
    // 21 000-record check, it blocked that loop for seconds; requests hung, the tenant gave up
    // again with a longer pause each time, past the wait below)
    const got = new Set<unknown>();
    let counted = 0;
    const seen = (): Set<unknown> => {
      const rs = receiver.records();
      for (; counted < rs.length; counted++) got.add(rs[counted]!.attributes['tableau.test_seq']);
      return got;
    };
    const allSeen = (seqs: number[]): boolean => {
      const s = seen();
      return seqs.every((x) => s.has(x));
    };
    if (!(await waitFor(() => allSeen(initial) || !d.alive, 180_000, 200))) extra.push('the backfill did not finish after the destination came back');

    // files that land after the restarts: read by the new runtime's readers only
    const laterA = writeFixtureTree(join(work, 'a'), 2, 500, 2_000_000, 'later');
    const laterB = writeFixtureTree(join(work, 'b'), 2, 500, 3_000_000, 'later');
    const later = [...laterA.records, ...laterB.records].map((r) => r.record.testSeq as number);
    if (!(await waitFor(() => allSeen(later) || !d.alive, 60_000, 100))) extra.push('the files written after the outage did not all arrive');
    await sleep(2000); // a reader left behind polls every 200 ms: time for it to send its copies
    const laterSet = new Set(later);
    const laterCopies = receiver.records().filter((r) => laterSet.has(r.attributes['tableau.test_seq'] as number)).length - later.length;
    if (laterCopies !== 0) extra.push(`${laterCopies} copies of records written after the restarts (a stopped runtime kept reading)`);
    const stopped = await ctx.stop(d);
    if (stopped.code !== 0) extra.push(`SIGTERM: exit ${stopped.code}`);
    const restarts = logLines(stopped.stdout + stopped.stderr, 'tenant started').length - 1;

    const bound = SOURCES * IN_FLIGHT * BATCH;
    const all = [...initial, ...later];
    const j = judge(receiver.records(), readDeadLetters(state, 'acme'), { valid: all, dupBound: bound, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, all.length, ctx.peakRssMb, extra, [
      `down ${Math.round(downFor / 1000)} s, ${failed()} tenant failures, ${restarts} restarts`,
      `duplicate bound ${bound} (sources ${SOURCES} × in-flight ${IN_FLIGHT} × batch ${BATCH}, one outage)`,
      `${later.length} records written after the restarts, ${laterCopies} copies`,
    ]);
  },
};

export const secondDaemon: Scenario = {
  name: 'second-daemon',
  title: 'a second daemon and a run --once on the same state directory; then a kill -9 and a stale lock',
  async run(ctx, { short }) {
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const first = writeFixtureTree(join(work, 'logs'), short ? 16 : 60, 500);
    const state = join(work, 'state');
    const tenants = [{ id: 'acme', sources: [{ type: 'directory', path: join(work, 'logs'), pollInterval: '500ms' }], destinations: [{ type: 'otlp', endpoint: receiver.url, timeout: '300s' }] }];
    const pipeline = { batchSize: 250, maxInFlightBatches: 2 };
    const config = ctx.writeConfig(work, { stateDir: state, pipeline, tenants });
    // the second process has a config of its own that points at the same state directory
    const config2 = ctx.writeConfig(ctx.dir('other'), { stateDir: state, pipeline, tenants });
    const lock = join(state, 'acme', 'daemon.lock');
    const extra: string[] = [];
    const notes: string[] = [];

    // the destination's answers are held (well within the export timeout) until the second
    // processes have tried: the first daemon is mid-backfill whatever the machine's load
    const release = receiver.hold();
    ctx.defer(release);
    const d = ctx.start(['run', '--config', config]);
    await waitFor(() => receiver.requests.length >= 1 || !d.alive, 30_000, 10);
    const pid = d.proc.child.pid!;
    for (const args of [['run', '--config', config2], ['run', '--once', '--config', config2]]) {
      const r = await ctx.run(args, {}, 60_000);
      const out = r.stdout + r.stderr;
      const named = out.includes(`process ${pid}`) && out.includes(lock);
      if (r.code !== 2 || !named) extra.push(`${args.slice(0, 2).join(' ')} beside the daemon: exit ${r.code}${named ? '' : ', the holder (pid, lock file) not named'}: ${out.slice(0, 200)}`);
    }
    if (receiver.records().length >= first.records.length || !d.alive) extra.push('the first daemon was not mid-backfill while the second processes tried');
    release();
    notes.push('second daemon and run --once: exit 2 naming the holder');
    const seqs = (): Set<unknown> => new Set(receiver.records().map((r) => r.attributes['tableau.test_seq']));
    if (!(await waitFor(() => seqs().size >= first.records.length || !d.alive, 180_000, 100))) extra.push('the first daemon did not finish its backfill');
    const stopped = await ctx.stop(d);
    if (stopped.code !== 0) extra.push(`first daemon, SIGTERM: exit ${stopped.code}`);
    if (existsSync(lock)) extra.push('the lock file is still there after SIGTERM');
    const dupsBeside = receiver.records().length - seqs().size;
    if (dupsBeside !== 0) extra.push(`${dupsBeside} duplicates while the second processes tried (nothing was cut: there must be none)`);

    // kill -9: the lock stays behind, the next start takes it over
    const more = writeFixtureTree(join(work, 'logs'), short ? 4 : 10, 500, 1_000_000, 'more');
    const third = ctx.start(['run', '--config', config]);
    await waitFor(() => existsSync(lock) || !third.alive, 30_000, 10);
    third.kill('SIGKILL');
    await third.exited;
    const leftBehind = existsSync(lock) && readFileSync(lock, 'utf8').includes(`"pid":${third.proc.child.pid}`);
    if (!leftBehind) extra.push('kill -9 left no lock behind (or another one)');
    const once = await ctx.run(['run', '--once', '--config', config]);
    const tookOver = logLines(once.stdout + once.stderr, 'took over a stale lock of the tenant state (its process is gone)').length === 1;
    if (once.code !== 0) extra.push(`run --once after kill -9: exit ${once.code}`);
    if (!tookOver) extra.push('run --once after kill -9: no "took over a stale lock" warning');
    if (existsSync(lock)) extra.push('the lock file is still there after run --once');
    notes.push('kill -9: the stale lock taken over with a warning');

    // the kill -9 may have cut batches in flight: those (at most 2 × 250) arrive twice
    const all = [...first.records, ...more.records].map((r) => r.record.testSeq as number);
    const j = judge(receiver.records(), readDeadLetters(state, 'acme'), { valid: all, dupBound: 2 * 250, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, all.length, ctx.peakRssMb, extra, notes);
  },
};
