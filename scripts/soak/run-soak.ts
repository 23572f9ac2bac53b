/**
 * Soak: the daemon fed at a steady rate for a long time, its memory and state sampled.
 * `npm run soak` (builds first, then runs this file).
 *
 *   npm run soak -- [--duration 1h] [--rate 1000] [--object-seconds 10] [--hour-seconds 60]
 *                   [--lookback-hours 2] [--sample 10] [--burst-every 5m --burst-events 60000]
 *                   [--node-flags "FLAGS"] [--json FILE] [--keep]
 *
 * Starts a local OTLP/HTTP receiver on 127.0.0.1 in a process of its own (it discards what it
 * gets; ../bench/receiver-process.ts), the real CLI
 * (`dist/cli.js run`, a daemon, not --once) with a `directory` source and an `otlp` destination,
 * and a writer that drops a gzip object of `rate × object-seconds` vizql_http_request records
 * into the tree every `object-seconds` (written as `*.tmp` and renamed, as a copy from S3 would
 * be). Time runs faster in the object keys and records than on the clock: one hour partition
 * (`h=HH`) every `hour-seconds`, so an hour's soak goes through 60 partitions and the source's
 * watermark (`lookbackHours`) has to keep the checkpoint small; objects of partitions past the
 * look-back are deleted (the disk stays small too). With `--burst-every`, the writer also drops
 * `--burst-events` more records at once at that interval (objects of at most 5 000, the first at
 * one interval from the start): a backlog that fills the daemon's batches in flight at moments
 * the soak chooses, so that two soaks compared side by side see the same bursts, whatever else
 * runs on the machine.
 *
 * Every `sample` seconds it records the daemon's RSS, CPU-seconds, events written and exported
 * (from /metrics), and the sizes of the state files; at the end it stops writing, waits until
 * everything written is exported, stops the daemon (SIGTERM) and prints the curve and a summary:
 * RSS at the start and the end, its slope after the warm-up, the largest state files. Exit code
 * 1 when events were not all exported or the daemon failed. Everything talks to 127.0.0.1 only.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { REPO_ROOT, Rng, makeWorld, vizqlRecord } from '../bench/corpus.js';
import { ReceiverProcess } from '../bench/receiver-process.js';
import { freePort, exportedSoFar, exportedIn, mainHeapIn, metricsText, readVmRssKb, sharedRegionsIn, workerHeapsIn } from '../bench/daemon-probes.js';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '1h' },
    rate: { type: 'string', default: '1000' },
    'object-seconds': { type: 'string', default: '10' },
    'hour-seconds': { type: 'string', default: '60' },
    'lookback-hours': { type: 'string', default: '2' },
    sample: { type: 'string', default: '10' },
    'burst-every': { type: 'string' },
    'burst-events': { type: 'string', default: '60000' },
    'node-flags': { type: 'string', default: '' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help) {
  process.stdout.write(
    'npm run soak -- [--duration 1h] [--rate EVENTS_PER_S] [--object-seconds S] [--hour-seconds S] [--lookback-hours H] [--sample S] [--burst-every S --burst-events N] [--node-flags "FLAGS"] [--json FILE] [--keep]\n' +
      '  --duration        how long events are written (90s, 3m, 1h; default 1h)\n' +
      '  --rate            events per second (default 1000)\n' +
      '  --object-seconds  one object every this many seconds (default 10)\n' +
      '  --hour-seconds    seconds of the clock per hour partition of the keys (default 60)\n' +
      '  --lookback-hours  the directory source\'s lookbackHours (default 2)\n' +
      '  --sample          seconds between samples (default 10)\n' +
      '  --burst-every     a burst of --burst-events records at once at this interval (e.g. 5m; default none)\n' +
      '  --burst-events    records in each burst, in objects of at most 5 000 (default 60000)\n' +
      '  --node-flags      node flags for the daemon, e.g. the image\'s: --node-flags=--no-concurrent-recompilation\n',
  );
  process.exit(0);
}
function fail(msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(2);
}
function seconds(name: string, v: string | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v ?? '');
  if (!m) fail(`--${name}: expected a duration like 90s, 3m or 1h, got ${v}`);
  const n = Number(m[1]);
  const s = m[2] === 'ms' ? n / 1000 : m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n;
  if (!(s > 0)) fail(`--${name}: must be more than 0`);
  return s;
}
function positiveInt(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) fail(`--${name}: expected a positive integer, got ${v}`);
  return n;
}
const DURATION_S = seconds('duration', flags.duration);
const RATE = positiveInt('rate', flags.rate);
const OBJECT_S = seconds('object-seconds', flags['object-seconds']);
const HOUR_S = seconds('hour-seconds', flags['hour-seconds']);
const LOOKBACK_H = positiveInt('lookback-hours', flags['lookback-hours']);
const SAMPLE_S = seconds('sample', flags.sample);
const BURST_EVERY_S = flags['burst-every'] === undefined ? undefined : seconds('burst-every', flags['burst-every']);
const BURST_EVENTS = positiveInt('burst-events', flags['burst-events']);
const BURST_OBJECT_EVENTS = 5000;
const NODE_FLAGS = flags['node-flags'].split(/\s+/).filter((f) => f.length > 0);

const t0 = Date.now();
function progress(msg: string): void {
  process.stderr.write(`[soak ${((Date.now() - t0) / 1000).toFixed(0).padStart(5)}s] ${msg}\n`);
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- the daemon's figures ------------------------------------------------------------------

function rssMb(pid: number): number {
  return readVmRssKb(pid) / 1024;
}
function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
/** Bytes of every file below `dir`, by path relative to it. */
function fileSizes(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        try {
          out.set(path.relative(dir, p), fs.statSync(p).size);
        } catch {
          // replaced meanwhile (an atomic save)
        }
      }
    }
  };
  walk(dir);
  return out;
}

interface Sample {
  t: number;
  rssMb: number;
  /** The main thread's V8 heap in use, and V8's external memory (the daemon's /metrics). */
  heapMb: number;
  externalMb: number;
  /** The encode workers' V8 heaps in use, summed (-1 while /metrics has none). */
  workerHeapMb: number;
  /** The encode pool's regions of shared buffers (input, output; -1 while /metrics has none). */
  regions: { inputs: number; outputs: number };
  cpuSeconds: number;
  written: number;
  exported: number;
  stateBytes: number;
  checkpointBytes: number;
  stateFiles: number;
  inputFiles: number;
}

// ---- main ----------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!fs.existsSync(CLI)) fail(`${CLI} is missing: run npm run build (npm run soak does it)`);
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'tao-soak-'));
  const input = path.join(work, 'input');
  const state = path.join(work, 'state');
  await fsp.mkdir(input, { recursive: true });
  const receiver = new ReceiverProcess();
  const receiverUrl = await receiver.start();
  const port = await freePort();
  const config = path.join(work, 'soak.yaml');
  await fsp.writeFile(
    config,
    [
      '# generated by scripts/soak/run-soak.ts',
      `state: { dir: ${JSON.stringify(state)} }`,
      `server: { address: "127.0.0.1:${port}" }`,
      'tenants:',
      '  - id: soak',
      '    sources:',
      `      - { type: directory, path: ${JSON.stringify(input)}, pollInterval: 2s, lookbackHours: ${LOOKBACK_H} }`,
      '    destinations:',
      `      - { type: otlp, endpoint: ${JSON.stringify(receiverUrl)}, protocol: http/protobuf }`,
      '',
    ].join('\n'),
  );
  progress(`work dir ${work}; ${RATE} events/s for ${DURATION_S} s, an object every ${OBJECT_S} s, an hour partition every ${HOUR_S} s, lookbackHours ${LOOKBACK_H}${BURST_EVERY_S ? `; a burst of ${BURST_EVENTS} events every ${BURST_EVERY_S} s` : ''}${NODE_FLAGS.length > 0 ? `; node ${NODE_FLAGS.join(' ')}` : ''}`);

  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
  const child = spawn(process.execPath, [...NODE_FLAGS, CLI, 'run', '--config', config], { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderrTail = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    stderrTail = (stderrTail + s).slice(-20_000);
  });
  let exitCode: number | null = null;
  let exitSignal: NodeJS.Signals | null = null;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      resolve();
    }),
  );
  const pid = child.pid!;

  // the writer: simulated time starts at the top of an hour, HOUR_S clock seconds per hour
  const rng = new Rng(0x50a4);
  const sites = makeWorld(rng);
  const simStart = Math.floor(Date.now() / 3_600_000) * 3600;
  const simSecondsAt = (clockMs: number): number => simStart + ((clockMs - t0) / 1000) * (3600 / HOUR_S);
  const perObject = Math.max(1, Math.round(RATE * OBJECT_S));
  let written = 0;
  let objects = 0;
  let bursts = 0;
  const files: Array<{ file: string; hour: number }> = [];
  const writeObject = async (count: number = perObject): Promise<void> => {
    const sim = simSecondsAt(Date.now());
    const hourStart = Math.floor(sim / 3600) * 3600;
    const d = new Date(hourStart * 1000);
    const pad = (n: number): string => String(n).padStart(2, '0');
    const site = sites[objects % sites.length]!;
    const rel = `pod=soak/siteLuid=${site.luid}/y=${d.getUTCFullYear()}/m=${pad(d.getUTCMonth() + 1)}/d=${pad(d.getUTCDate())}/h=${pad(d.getUTCHours())}/eventType=vizql_http_request/activity-log-${String(objects).padStart(8, '0')}.txt`;
    const lines: string[] = [];
    for (let i = 0; i < count; i++) lines.push(JSON.stringify(vizqlRecord(rng, site, Math.floor(sim) + Math.floor((i * OBJECT_S) / count), rng.int(0, 999_999_999))));
    const file = path.join(input, rel);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(`${file}.tmp`, zlib.gzipSync(lines.join('\n') + '\n'));
    await fsp.rename(`${file}.tmp`, file);
    written += count;
    objects++;
    files.push({ file, hour: hourStart });
    // objects of partitions past the look-back (and one more) are done and forgotten: deleted
    const cutoff = hourStart - (LOOKBACK_H + 1) * 3600;
    while (files.length > 0 && files[0]!.hour < cutoff) await fsp.rm(files.shift()!.file, { force: true });
  };

  const samples: Sample[] = [];
  const sample = async (): Promise<Sample> => {
    const sizes = fileSizes(state);
    let stateBytes = 0;
    let checkpointBytes = 0;
    for (const [rel, n] of sizes) {
      stateBytes += n;
      if (path.basename(rel) === 'checkpoints.json' || path.basename(rel).startsWith('checkpoints.journal.')) checkpointBytes += n;
    }
    const metrics = await metricsText(port);
    const heap = mainHeapIn(metrics);
    const s: Sample = {
      t: (Date.now() - t0) / 1000,
      rssMb: rssMb(pid),
      heapMb: heap.used / 1e6,
      externalMb: heap.external / 1e6,
      workerHeapMb: Math.max(-1, workerHeapsIn(metrics) / 1e6),
      regions: sharedRegionsIn(metrics),
      cpuSeconds: cpuSeconds(pid),
      written,
      exported: exportedIn(metrics),
      stateBytes,
      checkpointBytes,
      stateFiles: sizes.size,
      inputFiles: files.length,
    };
    samples.push(s);
    progress(
      `RSS ${s.rssMb.toFixed(1)} MB (main heap ${s.heapMb.toFixed(1)}, external ${s.externalMb.toFixed(1)}, workers' heaps ${s.workerHeapMb.toFixed(1)}; shared regions ${s.regions.inputs}+${s.regions.outputs}), CPU ${s.cpuSeconds.toFixed(1)} s, written ${s.written}, exported ${s.exported}, ` +
        `state ${s.stateFiles} files / ${(s.stateBytes / 1024).toFixed(1)} KiB (checkpoints ${(s.checkpointBytes / 1024).toFixed(1)} KiB), input ${s.inputFiles} objects`,
    );
    return s;
  };

  let stopping = false;
  const onSignal = (): void => {
    if (stopping) process.exit(130);
    stopping = true;
    progress('interrupted: stopping the daemon');
    child.kill('SIGTERM');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const endAt = t0 + DURATION_S * 1000;
  let nextObject = Date.now();
  let nextSample = Date.now() + SAMPLE_S * 1000;
  let nextBurst = BURST_EVERY_S === undefined ? Infinity : Date.now() + BURST_EVERY_S * 1000;
  while (Date.now() < endAt && exitCode === null && !stopping) {
    if (Date.now() >= nextObject) {
      await writeObject();
      nextObject += OBJECT_S * 1000;
    }
    if (Date.now() >= nextBurst) {
      for (let left = BURST_EVENTS; left > 0; left -= BURST_OBJECT_EVENTS) await writeObject(Math.min(left, BURST_OBJECT_EVENTS));
      bursts++;
      nextBurst += BURST_EVERY_S! * 1000;
    }
    if (Date.now() >= nextSample) {
      await sample();
      nextSample += SAMPLE_S * 1000;
    }
    await sleep(Math.max(10, Math.min(nextObject, nextSample, nextBurst, endAt) - Date.now()));
  }
  progress(`stopped writing: ${written} events in ${objects} objects${bursts > 0 ? ` (${bursts} bursts)` : ''}; waiting for the daemon to export them`);
  const drainUntil = Date.now() + 120_000;
  let last = await exportedSoFar(port);
  while (exitCode === null && last < written && Date.now() < drainUntil) {
    await sleep(500);
    last = await exportedSoFar(port);
  }
  const final = await sample();
  child.kill('SIGTERM');
  await exited;
  await receiver.stop();

  // ---- report ------------------------------------------------------------------------------
  const warm = samples.filter((s) => s.t >= Math.min(60, DURATION_S / 5));
  const fit = warm.length >= 2 ? warm : samples;
  const slopeOf = (xs: Sample[]): number => {
    if (xs.length < 2) return 0;
    const xt = xs.reduce((a, s) => a + s.t, 0) / xs.length;
    const xr = xs.reduce((a, s) => a + s.rssMb, 0) / xs.length;
    return xs.reduce((a, s) => a + (s.t - xt) * (s.rssMb - xr), 0) / Math.max(1e-9, xs.reduce((a, s) => a + (s.t - xt) ** 2, 0));
  };
  const slope = slopeOf(fit);
  // the second half apart: a curve that levels off after a warm-up shows it here
  const secondHalfSlope = slopeOf(samples.filter((s) => s.t >= DURATION_S / 2));
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const avgOf = (xs: Sample[], k: 'rssMb' | 'heapMb' | 'externalMb' | 'workerHeapMb'): number => xs.reduce((a, s) => a + s[k], 0) / Math.max(1, xs.length);
  const firstQ = avgOf(samples.slice(0, quarter), 'rssMb');
  const lastQ = avgOf(samples.slice(-quarter), 'rssMb');
  const out: string[] = [];
  out.push('');
  out.push(`tableau-activity-otel soak — Node ${process.version}, ${os.availableParallelism()} cores, ${DURATION_S} s at ${RATE} events/s (${objects} objects of ${perObject}${bursts > 0 ? `, and ${bursts} bursts of ${BURST_EVENTS} events, one every ${BURST_EVERY_S} s` : ''}), lookbackHours ${LOOKBACK_H}, an hour partition every ${HOUR_S} s`);
  out.push('');
  out.push('     t s   RSS MB  heap MB  ext MB  workers MB   CPU s   written  exported  state KiB  checkpoints KiB  input objects');
  const every = Math.max(1, Math.ceil(samples.length / 40));
  for (let i = 0; i < samples.length; i++) {
    if (i % every !== 0 && i !== samples.length - 1) continue;
    const s = samples[i]!;
    out.push(
      `${s.t.toFixed(0).padStart(8)}  ${s.rssMb.toFixed(1).padStart(7)}  ${s.heapMb.toFixed(1).padStart(7)}  ${s.externalMb.toFixed(1).padStart(6)}  ${s.workerHeapMb.toFixed(1).padStart(10)}  ${s.cpuSeconds.toFixed(1).padStart(6)}  ${String(s.written).padStart(8)}  ${String(s.exported).padStart(8)}  ${(s.stateBytes / 1024).toFixed(1).padStart(9)}  ${(s.checkpointBytes / 1024).toFixed(1).padStart(15)}  ${String(s.inputFiles).padStart(13)}`,
    );
  }
  const maxRss = Math.max(...samples.map((s) => s.rssMb));
  const maxState = Math.max(...samples.map((s) => s.stateBytes));
  const maxCheckpoint = Math.max(...samples.map((s) => s.checkpointBytes));
  out.push('');
  out.push(`RSS: first quarter ${firstQ.toFixed(1)} MB, last quarter ${lastQ.toFixed(1)} MB, max ${maxRss.toFixed(1)} MB; slope after the warm-up ${(slope * 3600).toFixed(1)} MB/h, over the second half ${(secondHalfSlope * 3600).toFixed(1)} MB/h`);
  out.push(
    `main thread's heap: first quarter ${avgOf(samples.slice(0, quarter), 'heapMb').toFixed(1)} MB, last quarter ${avgOf(samples.slice(-quarter), 'heapMb').toFixed(1)} MB; ` +
      `external: first quarter ${avgOf(samples.slice(0, quarter), 'externalMb').toFixed(1)} MB, last quarter ${avgOf(samples.slice(-quarter), 'externalMb').toFixed(1)} MB; ` +
      `encode workers' heaps: first quarter ${avgOf(samples.slice(0, quarter), 'workerHeapMb').toFixed(1)} MB, last quarter ${avgOf(samples.slice(-quarter), 'workerHeapMb').toFixed(1)} MB`,
  );
  const regionChanges = samples.slice(1).filter((s, i) => s.regions.inputs + s.regions.outputs !== samples[i]!.regions.inputs + samples[i]!.regions.outputs).length;
  out.push(`shared buffer regions (input + output): at most ${Math.max(...samples.map((s) => s.regions.inputs))} + ${Math.max(...samples.map((s) => s.regions.outputs))}, changed between ${regionChanges} of ${Math.max(0, samples.length - 1)} pairs of samples`);
  out.push(`state: largest ${(maxState / 1024).toFixed(1)} KiB (checkpoints ${(maxCheckpoint / 1024).toFixed(1)} KiB), at the end ${(final.stateBytes / 1024).toFixed(1)} KiB`);
  out.push(`CPU: ${final.cpuSeconds.toFixed(1)} s for ${final.exported} events exported (${((1e6 * final.cpuSeconds) / Math.max(1, final.exported)).toFixed(1)} µs per event)`);
  const delivered = final.exported >= written;
  const daemonOk = exitCode === 0 || exitSignal === 'SIGTERM';
  if (!delivered) out.push(`NOT ALL EXPORTED: ${final.exported} of ${written}`);
  if (!daemonOk) out.push(`DAEMON FAILED: exit ${exitCode} ${exitSignal ?? ''}\n${stderrTail.slice(-3000)}`);
  process.stdout.write(out.join('\n') + '\n');
  if (flags.json) {
    await fsp.writeFile(
      flags.json,
      JSON.stringify({ settings: { durationSeconds: DURATION_S, rate: RATE, objectSeconds: OBJECT_S, hourSeconds: HOUR_S, lookbackHours: LOOKBACK_H, burstEverySeconds: BURST_EVERY_S ?? null, burstEvents: BURST_EVERY_S ? BURST_EVENTS : 0, nodeFlags: NODE_FLAGS }, written, objects, bursts, samples, summary: { firstQuarterRssMb: firstQ, lastQuarterRssMb: lastQ, maxRssMb: maxRss, slopeMbPerHour: slope * 3600, secondHalfSlopeMbPerHour: secondHalfSlope * 3600, maxStateBytes: maxState, maxCheckpointBytes: maxCheckpoint } }, null, 2) + '\n',
    );
  }
  if (flags.keep) progress(`kept ${work}`);
  else await fsp.rm(work, { recursive: true, force: true });
  return delivered && daemonOk ? 0 : 1;
}

process.exitCode = await main();
