/**
 * Replay: the destination refuses the records of every fourth file of a `run --once` backfill
 * with 400 (the run splits each batch down to those records and dead-letters them), and a few
 * lines are not JSON. Then, after the destination is "fixed":
 *
 * - `replay --dry-run` sends nothing and counts what would be sent;
 * - `replay`, while the destination still rejects the first request: that letter stays, the
 *   others are delivered;
 * - `replay` again: the rest is delivered; a third `replay` sends nothing at all;
 * - every replayed record carries the `log.record.uid` of its first (rejected) attempt, every
 *   valid record arrives exactly once, and the lines that are not JSON fail again each time
 *   (exit 1, each named), are never delivered and stay in the dead-letter file.
 */
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { startOtlpReceiver, type ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, readDeadLetters, resultOf, seqOf, type Scenario } from '../lib/harness.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

export const replay: Scenario = {
  name: 'replay',
  title: 'a quarter of the records refused with 400, then replayed after the fix',
  async run(ctx, { short }) {
    const FILES = short ? 10 : 40;
    const PER_FILE = short ? 300 : 500;
    const BATCH = short ? 100 : 250;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const tree = writeFixtureTree(logs, FILES, PER_FILE);
    // one object with two lines that are not JSON between two valid ones (its key sorts after the others: a batch of its own)
    const goodSeqs = [1_000_000, 1_000_001];
    const badKey = `pod=prod-b/siteLuid=${SITE}/y=2026/m=11/d=29/h=23/eventType=hist_access_view/not-json.txt`;
    const rec = (seq: number): string => JSON.stringify({ eventTime: '2026-11-29T23:00:00.000000001Z', actorUserLuid: 'user-1', siteLuid: SITE, testSeq: seq });
    mkdirSync(join(logs, ...badKey.split('/').slice(0, -1)), { recursive: true });
    writeFileSync(join(logs, ...badKey.split('/')), [rec(goodSeqs[0]!), '{"eventTime": "2026-11-29T23:00:00Z", "act', rec(goodSeqs[1]!), 'not json at all'].join('\n') + '\n');
    const bad = [
      { label: 'truncated JSON', object: 'not-json.txt', line: 2, reason: /invalid JSON/ },
      { label: 'not JSON', object: 'not-json.txt', line: 4, reason: /invalid JSON/ },
    ];
    const eventsIn = tree.records.length + 4;
    const valid = [...tree.records.map((r) => r.record.testSeq as number), ...goodSeqs];

    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: 4, retryFor: '30s' },
      tenants: [{ id: 'acme', sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', name: 'siem', endpoint: receiver.url }] }],
    });
    const extra: string[] = [];
    // the destination refuses the records of every fourth file for their content: the run splits
    // those batches down to single records, all refused, and writes one letter per batch
    const rejectedFile = (seq: number): boolean => seq < tree.records.length && Math.floor(seq / PER_FILE) % 4 === 3;
    receiver.rejectRecords((r) => rejectedFile(seqOf(r)!), 400, 'rejected by the scenario');
    const expectedLetters = Array.from({ length: FILES }, (_, f) => f).filter((f) => f % 4 === 3).length * Math.ceil(PER_FILE / BATCH);

    const run = await ctx.run(['run', '--once', '--config', config], {}, 300_000);
    if (run.code !== 0) extra.push(`run exited ${run.code}`);
    receiver.rejectRecords(null); // the destination is fixed
    const rejected = receiver.requests.filter((r) => r.status === 400);
    const firstUid = new Map<number, string>();
    for (const r of rejected) for (const x of r.records) firstUid.set(seqOf(x)!, x.attributes['log.record.uid'] as string);
    const batchLetters = readDeadLetters(state, 'acme').filter((l) => l.kind === 'batch').length;
    if (rejected.length === 0) extra.push('no batch was rejected: the scenario tested nothing');
    if (batchLetters !== expectedLetters) extra.push(`${batchLetters} batch letters written, expected ${expectedLetters} (one per batch with refused records)`);
    const refused = tree.records.filter((r) => rejectedFile(r.record.testSeq as number)).length;
    if (firstUid.size !== refused) extra.push(`${firstUid.size} records were refused, expected ${refused}`);
    const afterRun = receiver.requests.length;
    const acceptedByRun = receiver.records().length;

    // dry run: counts, nothing sent
    const dry = await ctx.run(['replay', '--config', config, '--dry-run'], {}, 120_000);
    if (receiver.requests.length !== afterRun) extra.push(`--dry-run sent ${receiver.requests.length - afterRun} requests`);
    if (dry.code !== 1) extra.push(`--dry-run exited ${dry.code}, expected 1 (the lines that are not JSON would fail again)`);
    const wouldSend = [...dry.stdout.matchAll(/^\s+batch\s+HTTP 400\s+siem\s+(\d+)\s+\d+\s+(\d+)/gm)].reduce((n, m) => n + Number(m[2]), 0);
    if (wouldSend !== firstUid.size) extra.push(`--dry-run would send ${wouldSend} records of batch letters, ${firstUid.size} were rejected`);

    // first replay: the destination rejects its first request once more
    receiver.respondNext({ status: 400, body: 'still broken' });
    const first = await ctx.run(['replay', '--config', config], {}, 300_000);
    if (first.code !== 1) extra.push(`first replay exited ${first.code}, expected 1`);
    if (!/rejected again \(HTTP 400\)/.test(first.stdout)) extra.push('first replay did not report the batch rejected again');
    const second = await ctx.run(['replay', '--config', config], {}, 300_000);
    if (second.code !== 1) extra.push(`second replay exited ${second.code}, expected 1 (the lines that are not JSON)`);
    const failsAgain = (second.stdout.match(/fails again: invalid JSON/g) ?? []).length;
    if (failsAgain !== bad.length) extra.push(`second replay reported ${failsAgain} lines failing again, expected ${bad.length}`);
    if (/rejected again|unreachable/.test(second.stdout)) extra.push('second replay: a batch was not delivered');
    const afterSecond = receiver.requests.length;
    const third = await ctx.run(['replay', '--config', config], {}, 120_000);
    if (receiver.requests.length !== afterSecond) extra.push(`third replay sent ${receiver.requests.length - afterSecond} requests (expected none)`);
    if (third.code !== 1) extra.push(`third replay exited ${third.code}, expected 1 (the lines that are not JSON stay)`);

    // replayed records: the uid of their first attempt
    const accepted: ReceivedLogRecord[] = receiver.records();
    let sameUid = 0;
    for (const r of accepted.slice(acceptedByRun)) {
      const want = firstUid.get(seqOf(r)!);
      if (want === undefined) extra.push(`replay sent seq ${seqOf(r)}, which was not in a rejected batch`);
      else if (r.attributes['log.record.uid'] !== want) extra.push(`seq ${seqOf(r)} replayed with uid ${String(r.attributes['log.record.uid'])}, first attempt ${want}`);
      else sameUid++;
    }
    const letters = readDeadLetters(state, 'acme');
    const j = judge(accepted, letters, { valid, badSeqs: [], bad, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, eventsIn, ctx.peakRssMb, extra, [
      `${batchLetters} batches with refused records (${firstUid.size} records, ${rejected.length} of ${afterRun} requests refused while splitting), replayed after the fix with the uid of their first attempt (${sameUid})`,
      'a batch rejected again stayed for the next replay; a third replay sent nothing',
      `${bad.length} lines that are not JSON fail again at every replay and stay`,
    ]);
  },
};
