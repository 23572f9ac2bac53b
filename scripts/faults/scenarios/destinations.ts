/**
 * Destination faults, each on a `run --once` backfill of a directory tree to an OTLP receiver:
 *
 * - down: the receiver's port refuses connections for a minute (5 s short) while batches are in
 *   flight (the open connections are reset), then comes back: the checkpoint holds still while it
 *   is down, the run finishes with every record, exit 0;
 * - 429: the receiver answers 429 with `Retry-After: 2` several times in a row: the next request
 *   comes no earlier than the header asks, nothing is dead-lettered or duplicated;
 * - slow: every request takes 10 s (2 s short): everything arrives once, memory stays flat.
 */
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, sleep, waitFor, type FaultContext, type Scenario, savedCheckpoint } from '../lib/harness.js';
import { TcpProxy } from '../lib/tcp-proxy.js';

function setup(ctx: FaultContext, receiverUrl: string, files: number, perFile: number, pipeline: Record<string, unknown>, destination: Record<string, unknown> = {}) {
  const work = ctx.dir('work');
  const tree = writeFixtureTree(join(work, 'logs'), files, perFile);
  const state = join(work, 'state');
  const config = ctx.writeConfig(work, {
    stateDir: state,
    pipeline,
    tenants: [{ id: 'acme', sources: [{ type: 'directory', path: join(work, 'logs') }], destinations: [{ type: 'otlp', endpoint: receiverUrl, ...destination }] }],
  });
  return { work, tree, state, config };
}

/** Arrival time and status of every request the receiver got (sampled every 5 ms). */
function watchRequests(receiver: OtlpReceiver): { arrivals: Array<{ at: number; status: number }>; stop(): void } {
  const arrivals: Array<{ at: number; status: number }> = [];
  const t = setInterval(() => {
    while (arrivals.length < receiver.requests.length) arrivals.push({ at: Date.now(), status: receiver.requests[arrivals.length]!.status });
  }, 5);
  return { arrivals, stop: () => clearInterval(t) };
}

export const destinationDown: Scenario = {
  name: 'destination-down',
  title: 'the destination refuses connections for a minute mid-backfill, then comes back',
  async run(ctx, { short }) {
    const OUTAGE_MS = short ? 5_000 : 60_000;
    const BATCH = 500;
    const IN_FLIGHT = 8;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(20);
    const proxy = await TcpProxy.start(Number(new URL(receiver.url).port));
    ctx.defer(() => proxy.close());
    const s = setup(ctx, proxy.url, short ? 20 : 60, 500, { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT });
    const d = ctx.start(['run', '--once', '--config', s.config]);
    const extra: string[] = [];
    await waitFor(() => receiver.records().length >= 2 * BATCH || !d.alive, 30_000, 5);
    if (!d.alive) extra.push('the run ended before the outage began (make the backfill bigger)');
    await proxy.down();
    // a request fully forwarded before the reset is still answered by the receiver (after its
    // 20 ms delay): only what arrives after that is a delivery during the outage
    await sleep(250);
    const atDown = receiver.records().length;
    await sleep(Math.min(2_000, OUTAGE_MS / 2));
    const cpEarly = savedCheckpoint(s.state, 'acme');
    await sleep(OUTAGE_MS - Math.min(2_000, OUTAGE_MS / 2));
    const cpLate = savedCheckpoint(s.state, 'acme');
    const duringOutage = receiver.records().length - atDown;
    if (duringOutage !== 0) extra.push(`${duringOutage} records arrived while the port was down`);
    if (cpEarly !== cpLate) extra.push('the checkpoint moved while the destination was down');
    if (!d.alive) extra.push('the run gave up during the outage');
    await proxy.up();
    const recoveredAt = Date.now();
    const r = await d.exited;
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const retries = logLines(d.output(), 'export failed; retrying').length;
    // (a short outage is ridden out by the OTLP exporter's own retries, inside its timeout)
    const j = judge(receiver.records(), readDeadLetters(s.state, 'acme'), { valid: s.tree.records.map((x) => x.record.testSeq as number), dupBound: IN_FLIGHT * BATCH, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, s.tree.records.length, ctx.peakRssMb, extra, [
      `down ${OUTAGE_MS / 1000} s with ${IN_FLIGHT} batches in flight`,
      'checkpoint unchanged while down',
      `${retries} retries logged by the pipeline`,
      `finished ${Math.round((Date.now() - recoveredAt) / 1000)} s after it came back`,
    ]);
  },
};

export const destination429: Scenario = {
  name: 'destination-429',
  title: 'the destination answers 429 with Retry-After several times in a row',
  async run(ctx, { short }) {
    const THROTTLED = short ? 3 : 6;
    const RETRY_AFTER_S = 2;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const s = setup(ctx, receiver.url, short ? 8 : 20, 500, { batchSize: 500, maxInFlightBatches: 1 });
    for (let i = 0; i < THROTTLED; i++) receiver.respondNext({ status: 429, headers: { 'Retry-After': String(RETRY_AFTER_S) }, body: 'slow down' });
    const watch = watchRequests(receiver);
    const r = await ctx.run(['run', '--once', '--config', s.config]);
    await sleep(20);
    watch.stop();
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const a = watch.arrivals;
    let tooEarly = 0;
    let minGap = Infinity;
    for (let i = 0; i + 1 < a.length; i++) {
      if (a[i]!.status !== 429) continue;
      const gap = a[i + 1]!.at - a[i]!.at;
      minGap = Math.min(minGap, gap);
      if (gap < RETRY_AFTER_S * 1000 - 50) tooEarly++;
    }
    const got429 = a.filter((x) => x.status === 429).length;
    if (got429 !== THROTTLED) extra.push(`${got429} requests answered 429, expected ${THROTTLED}`);
    if (tooEarly > 0) extra.push(`${tooEarly} retries came sooner than Retry-After`);
    const j = judge(receiver.records(), readDeadLetters(s.state, 'acme'), { valid: s.tree.records.map((x) => x.record.testSeq as number), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, s.tree.records.length, ctx.peakRssMb, extra, [`${got429} × 429 Retry-After: ${RETRY_AFTER_S}`, `shortest wait after a 429 ${minGap === Infinity ? '-' : `${(minGap / 1000).toFixed(2)} s`}`]);
  },
};

export const destinationSlow: Scenario = {
  name: 'destination-slow',
  title: 'every request to the destination takes 10 s',
  async run(ctx, { short }) {
    const DELAY_MS = short ? 2_000 : 10_000;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(DELAY_MS);
    // the OTLP request timeout (10 s by default, as in every OpenTelemetry SDK) must be longer
    // than the destination takes, or no request can ever succeed
    const s = setup(ctx, receiver.url, short ? 16 : 40, 500, { batchSize: 1000, maxInFlightBatches: 8 }, { timeout: '30s' });
    const started = Date.now();
    const r = await ctx.run(['run', '--once', '--config', s.config]);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const j = judge(receiver.records(), readDeadLetters(s.state, 'acme'), { valid: s.tree.records.map((x) => x.record.testSeq as number), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, s.tree.records.length, ctx.peakRssMb, extra, [`${DELAY_MS / 1000} s per request, timeout 30s, 8 batches in flight`, `${receiver.requests.length} requests in ${Math.round((Date.now() - started) / 1000)} s`]);
  },
};
