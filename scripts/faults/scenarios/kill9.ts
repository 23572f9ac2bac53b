/**
 * `kill -9` of the daemon at random moments of one backfill (20 times; 5 in the short run; each
 * run killed at the latest once it delivered its share, so every kill lands on a working run),
 * then a last run to the end: every record arrives, duplicates only from the batches a kill cut
 * (at most in-flight + 2 batches per kill), the same `log.record.uid` on every re-send, and the
 * checkpoint file parseable after every kill.
 */
import { join } from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, resultOf, waitFor, type Scenario } from '../lib/harness.js';
import { readCheckpointState } from '../../../src/pipeline/checkpoint-file.js';

export const kill9: Scenario = {
  name: 'kill-9',
  title: 'kill -9 at random moments of one backfill, then run to the end',
  async run(ctx, { short }) {
    const KILLS = short ? 5 : 20;
    const BATCH = 200;
    const IN_FLIGHT = 4;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    // slow enough that one run delivers a fraction of the backfill before its kill (a 0.4 s start-up
    // and 60 ms answers let 4 runs finish 20 000 records, and the short run wants 5 kills)
    receiver.setDelay(150);
    const work = ctx.dir('work');
    const files = short ? 40 : 160;
    const tree = writeFixtureTree(join(work, 'logs'), files, 500); // every third object gzip
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT },
      tenants: [{ id: 'crashy', sources: [{ type: 'directory', path: join(work, 'logs') }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }],
    });

    // a run is killed at a random moment, or as soon as it has delivered its share, whichever
    // comes first: however fast the machine, the KILLS runs leave more than half of the backfill
    // to the last one, so every kill lands on a run that is still working
    const quota = Math.floor(tree.records.length / (KILLS + 1) / 2);
    const untilQuotaOr = (ms: number, before: number, alive: () => boolean): Promise<boolean> =>
      waitFor(() => receiver.records().length - before >= quota || !alive(), ms, 5);
    let killed = 0;
    let finishedEarly = 0;
    const extra: string[] = [];
    let corrupt = 0;
    // kills after which the state was partly in the journal, and of those where a line was cut short
    let inJournal = 0;
    let cutShort = 0;
    for (let i = 0; i < KILLS * 3 && killed < KILLS; i++) {
      const before = receiver.records().length;
      const d = ctx.start(['run', '--once', '--config', config]);
      if (i % 2 === 0) {
        // a random moment from the start: start-up, listing, first batches
        await untilQuotaOr(Math.floor(Math.random() * 1500), before, () => d.alive);
      } else {
        // a random moment once this run is delivering
        await waitFor(() => receiver.records().length > before || !d.alive, 20_000, 5);
        await untilQuotaOr(Math.floor(Math.random() * 800), before, () => d.alive);
      }
      const alive = d.alive;
      d.kill('SIGKILL');
      const r = await d.exited;
      if (alive && r.signal === 'SIGKILL') killed++;
      else finishedEarly++;
      // checkpoints.json and its journal, as a start reads them (a line cut short by the kill is left out)
      try {
        readCheckpointState(join(state, 'crashy'));
      } catch {
        corrupt++;
      }
      const dir = join(state, 'crashy');
      for (const name of existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith('checkpoints.journal.')) : []) {
        const text = readFileSync(join(dir, name), 'utf8');
        if (text.split('\n').length > 2) inJournal++;
        if (text.length > 0 && !text.endsWith('\n')) cutShort++;
      }
      if (r.code === 0 && !alive) break; // the backfill finished before the kill
    }
    if (killed < KILLS) extra.push(`only ${killed} of ${KILLS} kills landed (${finishedEarly} runs finished first)`);
    if (corrupt > 0) extra.push(`the checkpoint unreadable after ${corrupt} kills`);

    const final = await ctx.run(['run', '--once', '--config', config]);
    if (final.code !== 0) {
      // the run's own words (exit 2: the state lock, naming its holder), not only its code
      const said = final.stderr.trim().split('\n').at(-1)?.slice(0, 400) ?? '';
      extra.push(`final run exited ${final.code}${said ? `: ${said}` : ''}`);
    }

    const records = receiver.records();
    const uids = new Map<unknown, Set<unknown>>();
    for (const r of records) {
      const s = r.attributes['tableau.test_seq'];
      uids.set(s, (uids.get(s) ?? new Set()).add(r.attributes['log.record.uid']));
    }
    const unstable = [...uids.values()].filter((s) => s.size !== 1).length;
    if (unstable > 0) extra.push(`${unstable} records re-sent with a different log.record.uid`);
    const bound = killed * (IN_FLIGHT + 2) * BATCH;
    const j = judge(records, [], { valid: tree.records.map((r) => r.record.testSeq as number), dupBound: bound, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, tree.records.length, ctx.peakRssMb, extra, [`${killed} kills`, `after ${inJournal} of them saves in the checkpoint's journal (${cutShort} with a line cut short)`, `duplicate bound ${bound} (kills × (in-flight ${IN_FLIGHT} + 2) × batch ${BATCH})`, 'same log.record.uid on every re-send']);
  },
};
