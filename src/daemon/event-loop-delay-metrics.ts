/**
 * `nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds`: the main thread's event loop
 * delay, sampled every EVENT_LOOP_SAMPLE_MS, in place of prom-client's own.
 *
 * prom-client samples with `monitorEventLoopDelay` every 10 ms by default: a timer that wakes the
 * main thread 100 times a second whatever the daemon does (an idle daemon with one tenant used
 * 0.9 % of a core, 0.4 % with this: docs/performance.md). What it reports is the interval between
 * two samples, its period included (about 10 ms when nothing is late), and since it is reset at
 * every scrape, the first interval after a scrape is not counted (a block then goes unseen).
 * Here a timer of 100 ms records by how much each of its runs came late: about 0 when the loop
 * is free, the length of a block less the time to the next sample when it was blocked. A block
 * longer than the period always shows; a shorter one when it holds up a sample.
 *
 * prom-client's sampler is left running at a 1 s period (collectDefaultMetrics has no way to
 * leave it out) and its gauges are replaced in the registry by these, under the same names.
 */
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/** How often the event loop's delay is sampled. */
export const EVENT_LOOP_SAMPLE_MS = 100;
/** The period given to prom-client's own sampler, whose figures are not exported. */
export const PROM_CLIENT_EVENT_LOOP_SAMPLE_MS = 1000;

/** Each exported statistic: its name, its help, and how it reads the histogram of delays (ns). */
const STATS: ReadonlyArray<readonly [string, string, (h: RecordableHistogram) => number]> = [
  ['min', 'The minimum recorded event loop delay.', (h) => h.min],
  ['max', 'The maximum recorded event loop delay.', (h) => h.max],
  ['mean', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['stddev', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['p50', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['p90', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['p99', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

/**
 * Replaces prom-client's event loop delay gauges in `registry` (collectDefaultMetrics must have
 * registered them) with gauges fed by a sampler of EVENT_LOOP_SAMPLE_MS. Each scrape reports
 * the samples since the one before.
 */
export function replaceEventLoopDelayMetrics(registry: Registry): void {
  // delays in nanoseconds (a histogram records integers of at least 1)
  const histogram = createHistogram();
  let previous = performance.now();
  const sampler = setInterval(() => {
    const now = performance.now();
    histogram.record(Math.max(1, Math.round((now - previous - EVENT_LOOP_SAMPLE_MS) * 1e6)));
    previous = now;
  }, EVENT_LOOP_SAMPLE_MS);
  sampler.unref();
  // (a sample of 1 ns is one that came on time)
  const seconds = (ns: number): number => (ns <= 1 ? 0 : ns / 1e9);
  // prom-client collects each metric before reading it: the first one reads the histogram for all
  const collectAll = (): void => {
    if (histogram.count === 0) return; // nothing sampled since the last scrape: the figures stay
    for (const { gauge, read } of gauges) gauge.set(seconds(read(histogram)));
    histogram.reset();
  };
  const gauges = STATS.map(([stat, help, read], i) => {
    const name = `nodejs_eventloop_lag_${stat}_seconds`;
    registry.removeSingleMetric(name);
    return { gauge: new Gauge({ name, help: `${help} Sampled every ${EVENT_LOOP_SAMPLE_MS} ms.`, registers: [registry], ...(i === 0 ? { collect: collectAll } : {}) }), read };
  });
}
