/**
 * The bench's usage reporter (scripts/bench/report-usage.mjs), preloaded into a real child
 * process: the CPU it reports for the whole process, and its split by thread (the main thread,
 * the threads alive at exit, the threads that ended before it), which `npm run bench` prints for
 * ours and the floor. Each thread of the child spins until its own clock (its
 * `/proc/thread-self/stat`) shows the CPU it was given, so the figures hold on a busy machine.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';

const USAGE_PRELOAD = pathToFileURL(join(REPO_ROOT, 'scripts', 'bench', 'report-usage.mjs')).href;

/** Spins until the calling thread's own CPU (`/proc/thread-self/stat`, ticks of 1/100 s) reaches `ticks`. */
const SPIN = `
const spin = (fs, ticks) => {
  const own = () => { const s = fs.readFileSync('/proc/thread-self/stat', 'utf8'); const r = s.slice(s.lastIndexOf(')') + 2).split(' '); return Number(r[11]) + Number(r[12]); };
  let x = 0;
  while (own() < ticks) for (let i = 0; i < 1e5; i++) x += i;
  return x;
};`;

/** A child whose worker uses WORKER_TICKS of CPU and ends, then whose main thread uses MAIN_TICKS. */
const CHILD = `
import { Worker } from 'node:worker_threads';
import fs from 'node:fs';
${SPIN}
const worker = new Worker(${JSON.stringify(`${SPIN}
spin(require('node:fs'), Number(process.env.WORKER_TICKS));`)}, { eval: true });
await new Promise((resolve, reject) => { worker.on('exit', resolve); worker.on('error', reject); });
spin(fs, Number(process.env.MAIN_TICKS));
if (process.env.FAULTS_FILE) {
  // memory touched for the first time, then the process's own count of such faults (minflt, field 10)
  const touched = Buffer.alloc(Number(process.env.TOUCH_MB) * 1024 * 1024, 1);
  const s = fs.readFileSync('/proc/self/stat', 'utf8');
  fs.writeFileSync(process.env.FAULTS_FILE, String(Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[7]) + touched[0] - 1));
}
`;

interface Usage {
  cpuSeconds: number;
  childrenSeconds: number;
  minorFaults?: number;
  threads?: { main: number; alive: number; ended: number; aliveThreads: number };
}

async function runWithReporter(dir: string, env: Record<string, string>): Promise<Usage> {
  const script = join(dir, 'child.mjs');
  writeFileSync(script, CHILD);
  const usageFile = join(dir, 'usage.json');
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', USAGE_PRELOAD, script], { env: { ...process.env, ...env, TAO_BENCH_USAGE_FILE: usageFile }, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('close', resolve);
  });
  expect(code).toBe(0);
  return JSON.parse(readFileSync(usageFile, 'utf8')) as Usage;
}

describe.skipIf(!existsSync('/proc/thread-self/stat'))('the bench usage reporter', () => {
  it('splits the process CPU into the main thread, the threads alive at exit and the threads that ended', async () => {
    const dir = tempDir('tao-usage-');
    // (in ticks of 1/100 s: a worker of 0.60 s that ends, then 0.25 s on the main thread)
    const usage = await runWithReporter(dir, { WORKER_TICKS: '60', MAIN_TICKS: '25' });
    const t = usage.threads!;
    expect(t).toBeDefined();
    expect(t.ended).toBeGreaterThanOrEqual(0.59);
    expect(t.main).toBeGreaterThanOrEqual(0.25);
    // the worker's time is not the main thread's, nor that of the threads still there at exit
    // (V8's platform threads and libuv's pool, which did next to nothing here)
    expect(t.main).toBeLessThan(t.ended);
    expect(t.aliveThreads).toBeGreaterThan(0);
    expect(t.alive).toBeLessThan(t.ended);
  });

  it('puts it the other way round when the main thread does more', async () => {
    const dir = tempDir('tao-usage-');
    const usage = await runWithReporter(dir, { WORKER_TICKS: '5', MAIN_TICKS: '40' });
    const t = usage.threads!;
    expect(t.main).toBeGreaterThanOrEqual(0.4);
    expect(t.ended).toBeGreaterThanOrEqual(0.04);
    expect(t.ended).toBeLessThan(t.main);
  });

  it('reports the process\'s minor page faults, as its own /proc count gives them at the end', async () => {
    const dir = tempDir('tao-usage-');
    const faultsFile = join(dir, 'faults.txt');
    const usage = await runWithReporter(dir, { WORKER_TICKS: '1', MAIN_TICKS: '1', FAULTS_FILE: faultsFile, TOUCH_MB: '16' });
    const own = Number(readFileSync(faultsFile, 'utf8'));
    // the reporter reads at exit, a little later: as many, or a few more (its own reads and writes)
    expect(usage.minorFaults).toBeGreaterThanOrEqual(own);
    expect(usage.minorFaults! - own).toBeLessThan(2000);
  });
});
