/**
 * Destinations that refuse, each on a `run --once` backfill of a directory tree to an OTLP receiver:
 *
 * - 401: mid-backfill the receiver starts answering 401 (an expired token) for a minute (5 s
 *   short), then accepts again: the pipeline holds like in an outage (nothing arrives, the
 *   checkpoint stays, nothing is dead-lettered, the refusal is logged with destination and
 *   status), and the run finishes with every record once, exit 0;
 * - 413: the receiver (a proxy's body limit) refuses bodies over 100 kB, and a few records are
 *   bigger than that alone among thousands: the batches holding them are split, exactly those
 *   records are dead-lettered (with their object and line), every other record arrives once,
 *   and the run's exported count leaves them out.
 */
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, sleep, waitFor, type FaultContext, type Scenario, savedCheckpoint } from '../lib/harness.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

function config(ctx: FaultContext, work: string, receiverUrl: string, pipeline: Record<string, unknown>): { config: string; state: string } {
  const state = join(work, 'state');
  const file = ctx.writeConfig(work, {
    stateDir: state,
    pipeline,
    tenants: [{ id: 'acme', sources: [{ type: 'directory', path: join(work, 'logs') }], destinations: [{ type: 'otlp', endpoint: receiverUrl }] }],
  });
  return { config: file, state };
}

export const destination401: Scenario = {
  name: 'destination-401',
  title: 'the destination answers 401 (token expired) for a minute mid-backfill, then accepts again',
  async run(ctx, { short }) {
    const HOLD_MS = short ? 5_000 : 60_000;
    const BATCH = 500;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(20);
    const work = ctx.dir('work');
    const tree = writeFixtureTree(join(work, 'logs'), short ? 20 : 60, 500);
    const s = config(ctx, work, receiver.url, { batchSize: BATCH, maxInFlightBatches: 4 });
    const d = ctx.start(['run', '--once', '--retry-for', '10m', '--config', s.config]);
    const extra: string[] = [];
    await waitFor(() => receiver.records().length >= 2 * BATCH || !d.alive, 30_000, 5);
    if (!d.alive) extra.push('the run ended before the 401s began (make the backfill bigger)');
    receiver.setStatus(401);
    await sleep(250); // a request answered before the switch may still be on its way back
    const atHold = receiver.records().length;
    await sleep(Math.min(2_000, HOLD_MS / 2));
    const cpEarly = savedCheckpoint(s.state, 'acme');
    await sleep(HOLD_MS - Math.min(2_000, HOLD_MS / 2));
    const cpLate = savedCheckpoint(s.state, 'acme');
    const during = receiver.records().length - atHold;
    if (during !== 0) extra.push(`${during} records arrived while the receiver answered 401`);
    if (cpEarly !== cpLate) extra.push('the checkpoint moved while the destination refused the token');
    const letteredDuring = readDeadLetters(s.state, 'acme').length;
    if (letteredDuring > 0) extra.push(`${letteredDuring} dead letters written while the destination refused the token`);
    const refusals = receiver.requests.filter((q) => q.status === 401).length;
    const held = logLines(d.output(), /holding the batch/).filter((l) => l.destination === 'otlp' && l.status === 401).length;
    if (held === 0) extra.push('no log line named the destination and the 401');
    if (!d.alive) extra.push('the run gave up while the destination refused the token');
    receiver.setStatus(null);
    const acceptedAt = Date.now();
    const r = await d.exited;
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const letters = readDeadLetters(s.state, 'acme');
    if (letters.length > 0) extra.push(`${letters.length} dead letters (a refused token must not dead-letter anything)`);
    const j = judge(receiver.records(), letters, { valid: tree.records.map((x) => x.record.testSeq as number), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, tree.records.length, ctx.peakRssMb, extra, [
      `401 for ${HOLD_MS / 1000} s: ${refusals} requests refused, ${held} hold lines logged`,
      'checkpoint unchanged, nothing dead-lettered while refused',
      `finished ${Math.round((Date.now() - acceptedAt) / 1000)} s after the token was accepted again`,
    ]);
  },
};

export const destination413: Scenario = {
  name: 'destination-413',
  title: 'the destination refuses bodies over 100 kB; a few records are bigger than that alone',
  async run(ctx, { short }) {
    const FILES = short ? 8 : 40;
    const PER_FILE = 500;
    const LIMIT = 100_000;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setMaxBodyBytes(LIMIT);
    const work = ctx.dir('work');
    // every 997th record carries a 150 kB value: it cannot go in any request on its own
    const oversized = new Map<number, { object: string; line: number; raw: string }>();
    const valid: number[] = [];
    let seq = 0;
    for (let f = 0; f < FILES; f++) {
      const object = `pod=p/siteLuid=${SITE}/y=2026/m=11/d=29/h=${String(f % 24).padStart(2, '0')}/eventType=hist_access_view/part-${String(f).padStart(4, '0')}.txt`;
      const lines: string[] = [];
      for (let i = 0; i < PER_FILE; i++, seq++) {
        const big = seq % 997 === 500;
        const raw = JSON.stringify({ eventTime: `2026-11-29T01:${String(i % 60).padStart(2, '0')}:07.5Z`, actorUserLuid: `user-${seq % 17}`, siteLuid: SITE, testSeq: seq, ...(big ? { blob: 'x'.repeat(150_000) } : {}) });
        lines.push(raw);
        if (big) oversized.set(seq, { object, line: i + 1, raw });
        else valid.push(seq);
      }
      const full = join(work, 'logs', ...object.split('/'));
      mkdirSync(join(full, '..'), { recursive: true });
      writeFileSync(full, lines.join('\n') + '\n');
    }
    const s = config(ctx, work, receiver.url, { batchSize: 250, maxInFlightBatches: 4 });
    const r = await ctx.run(['run', '--once', '--config', s.config]);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const letters = readDeadLetters(s.state, 'acme');
    const records = letters.filter((l) => l.kind === 'batch').flatMap((l) => (l.records as Array<{ object: string; line: number; raw: string }> | undefined) ?? []);
    const letteredSeqs = records.map((x) => (JSON.parse(x.raw) as { testSeq: number }).testSeq);
    for (const [sq, where] of oversized) {
      const hits = records.filter((x) => x.object === where.object && x.line === where.line && x.raw === where.raw);
      if (hits.length !== 1) extra.push(`oversized record ${sq} (${where.object}:${where.line}) dead-lettered ${hits.length} times`);
    }
    const wrong = letteredSeqs.filter((sq) => !oversized.has(sq));
    if (wrong.length > 0) extra.push(`${wrong.length} records dead-lettered that fit (e.g. seq ${wrong.slice(0, 5).join(', ')})`);
    const summary = logLines(r.stdout + r.stderr, 'run --once finished')[0];
    if (summary?.exported !== valid.length) extra.push(`the run counted ${String(summary?.exported)} records exported, expected ${valid.length} (dead letters excluded)`);
    const j = judge(receiver.records(), letters, { valid, badSeqs: oversized.keys(), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    const refused = receiver.requests.filter((q) => q.status === 413).length;
    return {
      ...resultOf(j, FILES * PER_FILE, ctx.peakRssMb, extra, [
        `${oversized.size} records over ${LIMIT / 1000} kB alone among ${FILES * PER_FILE}`,
        `${refused} requests answered 413 while splitting`,
        `exported count ${String(summary?.exported)}`,
      ]),
      deadLettered: records.length,
    };
  },
};
