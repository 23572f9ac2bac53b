/**
 * nodejs_eventloop_lag_*_seconds (src/daemon/event-loop-delay-metrics.ts): sampled every
 * EVENT_LOOP_SAMPLE_MS rather than prom-client's 10 ms, the period taken off, so a free loop
 * reports about 0 and a block of the loop shows by its length.
 */
import { describe, it, expect } from 'vitest';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { EVENT_LOOP_SAMPLE_MS } from '../src/daemon/event-loop-delay-metrics.js';

const STATS = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'];

async function scrape(m: DaemonMetrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await m.registry.getMetricsAsJSON()) {
    const stat = /^nodejs_eventloop_lag_(\w+)_seconds$/.exec(metric.name)?.[1];
    if (stat !== undefined) out[stat] = metric.values[0]?.value ?? NaN;
  }
  return out;
}

/** Scrapes, letting the loop run between scrapes, until `done` holds for one (10 s at most). */
async function scrapeUntil(m: DaemonMetrics, done: (s: Record<string, number>) => boolean): Promise<Record<string, number>> {
  const deadline = Date.now() + 10_000;
  let last = await scrape(m);
  while (!done(last) && Date.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve));
    last = await scrape(m);
  }
  return last;
}

describe('event loop delay metrics', () => {
  it('are the delay itself (a free loop about 0), and a block of the loop shows by its length', async () => {
    expect(EVENT_LOOP_SAMPLE_MS).toBe(100);
    const m = new DaemonMetrics();
    m.enableDefaultMetrics();
    // one name each, prom-client's replaced (not doubled)
    const names = (await m.registry.getMetricsAsJSON()).map((x) => x.name).filter((n) => n.startsWith('nodejs_eventloop_lag_'));
    expect(names.sort()).toEqual(['nodejs_eventloop_lag_seconds', ...STATS.map((s) => `nodejs_eventloop_lag_${s}_seconds`)].sort());

    // samples of a free loop: the period is not counted as delay (prom-client's own would read
    // about 0.1 here at this period, 0.01 at its default)
    const free = await scrapeUntil(m, (s) => s.max! > 0 && s.min! < EVENT_LOOP_SAMPLE_MS / 2 / 1000);
    expect(free.max).toBeGreaterThan(0);
    expect(free.min).toBeLessThan(EVENT_LOOP_SAMPLE_MS / 2 / 1000);

    const blockMs = 4 * EVENT_LOOP_SAMPLE_MS;
    const until = Date.now() + blockMs;
    while (Date.now() < until) {
      // the event loop is blocked here, as by a long synchronous task
    }
    // the sample due during the block is taken late: by the block less at most one period
    const blocked = await scrapeUntil(m, (s) => s.max! >= (blockMs - EVENT_LOOP_SAMPLE_MS) / 1000);
    expect(blocked.max).toBeGreaterThanOrEqual((blockMs - EVENT_LOOP_SAMPLE_MS) / 1000);
    expect(blocked.p99).toBeGreaterThanOrEqual(blocked.p50!);
  });
});
