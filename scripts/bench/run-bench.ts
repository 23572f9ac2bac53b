/**
 * Throughput and memory benchmark: `npm run bench` (builds first, then runs this file).
 *
 *   npm run bench -- [--events 200000] [--reps 3] [--no-big] [--big-bytes 1000000000]
 *                    [--big-reps 1] [--json FILE] [--profile] [--keep]
 *
 * Generates a synthetic corpus (corpus.ts) in a temp dir, starts a local OTLP/HTTP receiver on
 * 127.0.0.1 that discards what it gets, and measures, each case in its own child process:
 *
 *   floor   read + gunzip + split + JSON.parse every line, nothing else (floor.mjs)
 *   naive   the same lines through the OpenTelemetry SDK's LoggerProvider + BatchLogRecordProcessor
 *           + OTLP/HTTP protobuf exporter (naive.mjs), with a queue big enough not to drop;
 *           once more with the SDK's default queue to show what it drops
 *   ours    `node dist/cli.js run --once --config …` (directory source → otlp destination,
 *           checkpoints on, a fresh state dir per repetition)
 *   big     ours on one ~1 GB (uncompressed) gzip object
 *
 * Reports the median wall time over the repetitions, events/s, MB/s of uncompressed input
 * (MB = 10^6 bytes) and the peak RSS of the child. Progress goes to stderr, the table to stdout.
 * Everything talks to 127.0.0.1 only.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { generateCorpus, generateBigObject, REPO_ROOT, type CorpusSummary, type BigObjectSummary } from './corpus.js';

const BENCH_DIR = path.join(REPO_ROOT, 'scripts', 'bench');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const TARGETS = { floorRatio: 0.5, naiveRatio: 5, peakRssMb: 300 };

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

const { values: flags } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    reps: { type: 'string', default: '3' },
    big: { type: 'boolean', default: true },
    'no-big': { type: 'boolean', default: false },
    'big-bytes': { type: 'string', default: '1000000000' },
    'big-reps': { type: 'string', default: '1' },
    json: { type: 'string' },
    profile: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help) {
  process.stdout.write(
    'npm run bench -- [--events N] [--reps N] [--no-big] [--big-bytes N] [--big-reps N] [--json FILE] [--profile] [--keep]\n',
  );
  process.exit(0);
}
function positiveInt(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`--${name}: expected a positive integer, got ${v}\n`);
    process.exit(2);
  }
  return n;
}
const EVENTS = positiveInt('events', flags.events);
const REPS = positiveInt('reps', flags.reps);
const RUN_BIG = flags.big && !flags['no-big'];
const BIG_BYTES = positiveInt('big-bytes', flags['big-bytes']);
const BIG_REPS = positiveInt('big-reps', flags['big-reps']);

// ---------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------

const t0 = Date.now();
function progress(msg: string): void {
  process.stderr.write(`[bench ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

// ---------------------------------------------------------------------------
// Local OTLP/HTTP receiver: accepts POST /v1/logs, discards the body, answers 200
// ---------------------------------------------------------------------------

class DiscardingReceiver {
  requests = 0;
  bytes = 0;
  private server = http.createServer((req, res) => {
    if (req.method !== 'POST' || !req.url || !req.url.startsWith('/v1/logs')) {
      req.resume();
      res.writeHead(404, { 'Content-Length': '0' });
      res.end();
      return;
    }
    req.on('data', (chunk: Buffer) => {
      this.bytes += chunk.length;
    });
    req.on('end', () => {
      this.requests++;
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': '0' });
      res.end();
    });
  });

  async start(): Promise<string> {
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }
  reset(): void {
    this.requests = 0;
    this.bytes = 0;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------
// Child processes: wall time and peak RSS (polling /proc/<pid>/status every 50 ms)
// ---------------------------------------------------------------------------

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  wallSeconds: number;
  /** Max of VmHWM/VmRSS seen while polling, and what the child reported itself if it did. */
  peakRssBytes: number;
  stdout: string;
  stderr: string;
}

let currentChild: ChildProcess | null = null;

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('OTEL_')) continue; // the configs below say everything
    if (k === 'NODE_OPTIONS' && v?.includes('tsx')) continue;
    env[k] = v;
  }
  return env;
}

function readRssKb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    let max = 0;
    for (const m of status.matchAll(/^(?:VmHWM|VmRSS):\s+(\d+) kB/gm)) max = Math.max(max, Number(m[1]));
    return max;
  } catch {
    return 0; // gone already, or no /proc
  }
}

function runChild(args: string[], env: NodeJS.ProcessEnv = childEnv()): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    currentChild = child;
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      stdout += s;
    });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      if (stderr.length > 4_000_000) stderr = stderr.slice(-2_000_000);
    });
    let peakKb = 0;
    const poll = (): void => {
      if (child.pid !== undefined) peakKb = Math.max(peakKb, readRssKb(child.pid));
    };
    poll();
    const timer = setInterval(poll, 50);
    child.on('error', (err) => {
      clearInterval(timer);
      currentChild = null;
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearInterval(timer);
      currentChild = null;
      const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve({ code, signal, wallSeconds, peakRssBytes: peakKb * 1024, stdout, stderr });
    });
  });
}

function lastJsonLine(text: string): Record<string, unknown> | undefined {
  const lines = text.trim().split('\n').reverse();
  for (const l of lines) {
    try {
      const v = JSON.parse(l) as unknown;
      if (v && typeof v === 'object') return v as Record<string, unknown>;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

interface RepResult {
  wallSeconds: number;
  /** Time measured inside the child, where it reports one. */
  innerSeconds?: number;
  peakRssBytes: number;
  events: number;
  requests: number;
  requestBytes: number;
  dropped?: number;
  ok: boolean;
  problem?: string;
}

interface CaseSummary {
  name: string;
  description: string;
  events: number;
  inputBytes: number;
  reps: RepResult[];
  medianSeconds: number;
  eventsPerSecond: number;
  mbPerSecond: number;
  /** Max over repetitions. */
  peakRssMb: number;
  note?: string;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function summarise(name: string, description: string, events: number, inputBytes: number, reps: RepResult[], note?: string): CaseSummary {
  const medianSeconds = median(reps.map((r) => r.wallSeconds));
  return {
    name,
    description,
    events,
    inputBytes,
    reps,
    medianSeconds,
    eventsPerSecond: events / medianSeconds,
    mbPerSecond: inputBytes / 1e6 / medianSeconds,
    peakRssMb: Math.max(...reps.map((r) => r.peakRssBytes)) / 1e6,
    ...(note ? { note } : {}),
  };
}

async function runFloor(corpus: CorpusSummary): Promise<RepResult> {
  const r = await runChild([path.join(BENCH_DIR, 'floor.mjs'), corpus.dir]);
  const out = lastJsonLine(r.stdout);
  const events = Number(out?.events ?? 0);
  const ok = r.code === 0 && events === corpus.events;
  return {
    wallSeconds: r.wallSeconds,
    innerSeconds: Number(out?.seconds),
    peakRssBytes: Math.max(r.peakRssBytes, Number(out?.maxRssBytes ?? 0)),
    events,
    requests: 0,
    requestBytes: 0,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, ${events} events: ${r.stderr.slice(-500)}` }),
  };
}

async function runNaive(corpus: CorpusSummary, receiver: DiscardingReceiver, endpoint: string, queue: number | 'default'): Promise<RepResult> {
  receiver.reset();
  const r = await runChild([path.join(BENCH_DIR, 'naive.mjs'), corpus.dir, `${endpoint}/v1/logs`, String(queue)]);
  const out = lastJsonLine(r.stdout);
  const events = Number(out?.events ?? 0);
  const dropped = Number(out?.dropped ?? 0);
  const failed = Number(out?.failed ?? 0);
  const ok = r.code === 0 && events === corpus.events && failed === 0 && (queue === 'default' || dropped === 0);
  return {
    wallSeconds: r.wallSeconds,
    innerSeconds: Number(out?.seconds),
    peakRssBytes: Math.max(r.peakRssBytes, Number(out?.maxRssBytes ?? 0)),
    events,
    requests: receiver.requests,
    requestBytes: receiver.bytes,
    dropped,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, ${events} events, ${dropped} dropped, ${failed} failed: ${r.stderr.slice(-500)}` }),
  };
}

async function writeOursConfig(workDir: string, sourceDir: string, stateDir: string, endpoint: string): Promise<string> {
  const file = path.join(workDir, `ours-${path.basename(stateDir)}.yaml`);
  const yaml = [
    '# generated by scripts/bench/run-bench.ts',
    `state: { dir: ${JSON.stringify(stateDir)} }`,
    'tenants:',
    '  - id: bench',
    '    sources:',
    `      - { type: directory, path: ${JSON.stringify(sourceDir)} }`,
    '    destinations:',
    `      - { type: otlp, endpoint: ${JSON.stringify(endpoint)}, protocol: http/protobuf }`,
    '',
  ].join('\n');
  await fsp.writeFile(file, yaml);
  return file;
}

async function runOurs(
  workDir: string,
  sourceDir: string,
  expectedEvents: number,
  receiver: DiscardingReceiver,
  endpoint: string,
  label: string,
  nodeFlags: string[] = [],
): Promise<RepResult> {
  const stateDir = path.join(workDir, 'state', label);
  await fsp.rm(stateDir, { recursive: true, force: true });
  const config = await writeOursConfig(workDir, sourceDir, stateDir, endpoint);
  receiver.reset();
  const r = await runChild([...nodeFlags, CLI, 'run', '--once', '--config', config]);
  let finished: Record<string, unknown> | undefined;
  for (const line of r.stderr.split('\n')) {
    if (!line.includes('run --once finished')) continue;
    try {
      finished = JSON.parse(line) as Record<string, unknown>;
    } catch {
      // not JSON
    }
  }
  const exported = Number(finished?.exported ?? 0);
  const checkpoints = fs.existsSync(path.join(stateDir, 'bench', 'checkpoints.json'));
  const ok = r.code === 0 && exported === expectedEvents && receiver.requests > 0 && checkpoints;
  const result: RepResult = {
    wallSeconds: r.wallSeconds,
    ...(finished?.seconds !== undefined ? { innerSeconds: Number(finished.seconds) } : {}),
    peakRssBytes: r.peakRssBytes,
    events: exported,
    requests: receiver.requests,
    requestBytes: receiver.bytes,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, exported ${exported}/${expectedEvents}, ${receiver.requests} requests, checkpoints ${checkpoints}: ${r.stderr.slice(-800)}` }),
  };
  await fsp.rm(stateDir, { recursive: true, force: true });
  return result;
}

// ---------------------------------------------------------------------------
// CPU profile summary (--profile)
// ---------------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  topFunctions: Array<{ fn: string; where: string; selfMs: number; percent: number }>;
  byArea: Array<{ area: string; selfMs: number; percent: number }>;
}

function areaOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native / V8 builtins)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  const dist = /\/dist\/(.+?)\.js$/.exec(url);
  if (dist) return `ours: ${dist[1]!.split('/')[0]}`;
  if (url.startsWith('node:')) return `node: ${url.slice(5).split('/')[0]}`;
  return url;
}

function summariseProfile(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  let total = 0;
  const fns = new Map<string, { fn: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const fn = functionName || '(anonymous)';
    const where = url ? `${url.replace(`file://${REPO_ROOT}/`, '').replace(/^.*node_modules\//, '')}:${lineNumber + 1}` : '';
    const key = `${fn}@${where}`;
    const e = fns.get(key) ?? { fn, where, us: 0 };
    e.us += us;
    fns.set(key, e);
    const area = areaOf(url, fn);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const pct = (us: number): number => (total ? (100 * us) / total : 0);
  return {
    totalMs: total / 1000,
    topFunctions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ fn: e.fn, where: e.where, selfMs: e.us / 1000, percent: pct(e.us) })),
    byArea: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([area, us]) => ({ area, selfMs: us / 1000, percent: pct(us) })),
  };
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

function table(headers: string[], rows: string[][], rightAlign: boolean[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]): string =>
    cells.map((c, i) => (rightAlign[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [fmt(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt)].join('\n');
}

const num = (n: number, digits = 0): string => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function caseRow(c: CaseSummary): string[] {
  const bad = c.reps.filter((r) => !r.ok).length;
  const notes = [c.note, bad ? `${bad}/${c.reps.length} reps FAILED CHECKS` : ''].filter(Boolean).join('; ');
  return [c.name, num(c.events), num(c.medianSeconds, 2), num(c.eventsPerSecond), num(c.mbPerSecond, 1), num(c.peakRssMb, 0), String(c.reps.length), notes];
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!fs.existsSync(CLI)) {
    process.stderr.write(`${CLI} is missing: run npm run build (npm run bench does it)\n`);
    return 2;
  }
  const workDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tao-bench-'));
  const receiver = new DiscardingReceiver();
  const cleanup = async (): Promise<void> => {
    await receiver.stop().catch(() => undefined);
    if (flags.keep) progress(`kept ${workDir}`);
    else await fsp.rm(workDir, { recursive: true, force: true });
  };
  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) process.exit(130);
    interrupted = true;
    progress('interrupted: stopping the child and cleaning up');
    if (currentChild?.pid) currentChild.kill('SIGKILL');
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const endpoint = await receiver.start();
    progress(`work dir ${workDir}; receiver ${endpoint}/v1/logs`);
    progress(`generating ${num(EVENTS)} events`);
    let lastCorpusReport = 0;
    const corpus = await generateCorpus({
      dir: path.join(workDir, 'corpus'),
      events: EVENTS,
      onProgress: (m) => {
        if (Date.now() - lastCorpusReport > 5000) {
          lastCorpusReport = Date.now();
          progress(m);
        }
      },
    });
    progress(
      `corpus: ${num(corpus.events)} events (${num(corpus.vizqlEvents)} vizql, avg ${corpus.avgVizqlRecordBytes} B; ${num(corpus.otherEvents)} of ${corpus.eventTypes - 1} other types), ` +
        `${corpus.objects} objects (${corpus.gzipObjects} gzip), ${num(corpus.uncompressedBytes / 1e6, 1)} MB uncompressed, ${num(corpus.compressedBytes / 1e6, 1)} MB on disk`,
    );

    const floorReps: RepResult[] = [];
    const naiveReps: RepResult[] = [];
    const oursReps: RepResult[] = [];
    const naiveQueue = corpus.events + 1;
    const check = (name: string, r: RepResult): void => {
      progress(
        `  ${name}: ${num(r.wallSeconds, 2)} s, ${num(r.events)} events, peak RSS ${num(r.peakRssBytes / 1e6)} MB` +
          (r.requests ? `, ${r.requests} requests / ${num(r.requestBytes / 1e6, 1)} MB to the receiver` : '') +
          (r.dropped ? `, ${num(r.dropped)} dropped` : '') +
          (r.ok ? '' : `  CHECK FAILED: ${r.problem}`),
      );
    };
    for (let rep = 1; rep <= REPS; rep++) {
      progress(`rep ${rep}/${REPS}: floor`);
      const f = await runFloor(corpus);
      check('floor', f);
      floorReps.push(f);
      progress(`rep ${rep}/${REPS}: naive (maxQueueSize ${num(naiveQueue)})`);
      const n = await runNaive(corpus, receiver, endpoint, naiveQueue);
      check('naive', n);
      naiveReps.push(n);
      progress(`rep ${rep}/${REPS}: ours`);
      const o = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, `rep-${rep}`);
      check('ours', o);
      oursReps.push(o);
    }
    progress('naive with the SDK default queue (2048), once');
    const nd = await runNaive(corpus, receiver, endpoint, 'default');
    check('naive-default-queue', nd);

    const floor = summarise('floor', 'read + gunzip + split + JSON.parse, one thread', corpus.events, corpus.uncompressedBytes, floorReps);
    const naive = summarise('naive', 'SDK LoggerProvider + BatchLogRecordProcessor + OTLP proto exporter', corpus.events, corpus.uncompressedBytes, naiveReps, `maxQueueSize ${num(naiveQueue)}, dropped ${num(Math.max(...naiveReps.map((r) => r.dropped ?? 0)))}`);
    const ours = summarise('ours', 'dist/cli.js run --once, directory → otlp http/protobuf, checkpoints', corpus.events, corpus.uncompressedBytes, oursReps, `${median(oursReps.map((r) => r.requests))} requests`);
    const ndDropped = nd.dropped ?? 0;
    const naiveDefault = summarise('naive (SDK defaults)', 'as naive, default maxQueueSize 2048', corpus.events, corpus.uncompressedBytes, [{ ...nd, ok: nd.ok }], `DROPPED ${num(ndDropped)} (${num((100 * ndDropped) / corpus.events, 1)}%) silently`);

    let profile: ProfileSummary | undefined;
    if (flags.profile) {
      progress('ours once more with --cpu-prof');
      const profDir = path.join(workDir, 'prof');
      await fsp.mkdir(profDir, { recursive: true });
      const p = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, 'profile', ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
      check('ours --cpu-prof', p);
      const file = (await fsp.readdir(profDir)).find((f) => f.endsWith('.cpuprofile'));
      if (file) profile = summariseProfile(JSON.parse(await fsp.readFile(path.join(profDir, file), 'utf8')) as CpuProfile);
    }

    let big: { object: BigObjectSummary; result: CaseSummary } | undefined;
    if (RUN_BIG) {
      progress(`generating the big object (~${num(BIG_BYTES / 1e6)} MB uncompressed)`);
      await fsp.rm(corpus.dir, { recursive: true, force: true }); // free the disk and page cache
      const object = await generateBigObject({ dir: path.join(workDir, 'big'), targetBytes: BIG_BYTES, onProgress: progress });
      progress(`big object: ${num(object.events)} events, ${num(object.uncompressedBytes / 1e6)} MB uncompressed, ${num(object.compressedBytes / 1e6, 1)} MB gzip`);
      const reps: RepResult[] = [];
      for (let rep = 1; rep <= BIG_REPS; rep++) {
        progress(`big rep ${rep}/${BIG_REPS}: ours`);
        const r = await runOurs(workDir, object.dir, object.events, receiver, endpoint, `big-${rep}`);
        check('ours big', r);
        reps.push(r);
      }
      big = { object, result: summarise('ours, one big object', 'one gzip object', object.events, object.uncompressedBytes, reps, `${num(object.compressedBytes / 1e6)} MB gzip`) };
    }

    // ---- report ---------------------------------------------------------------------------
    const cores = os.availableParallelism();
    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    const out: string[] = [];
    out.push('');
    out.push(`tableau-activity-otel benchmark — Node ${process.version}, ${cores} cores (${cpu}), ${os.platform()} ${os.release()}`);
    out.push(
      `corpus: ${num(corpus.events)} events in ${corpus.objects} objects (${corpus.gzipObjects} gzip), ${corpus.eventTypes} event types, ` +
        `${num(corpus.uncompressedBytes / 1e6, 1)} MB uncompressed (vizql records avg ${corpus.avgVizqlRecordBytes} B); median of ${REPS} rep(s); MB = 10^6 bytes`,
    );
    out.push('');
    const headers = ['case', 'events', 'seconds', 'events/s', 'MB/s', 'peak RSS MB', 'reps', 'notes'];
    const align = [false, true, true, true, true, true, true, false];
    const rows = [floor, naive, naiveDefault, ours].map(caseRow);
    out.push(table(headers, rows, align));
    const floorRatio = ours.eventsPerSecond / floor.eventsPerSecond;
    const naiveRatio = ours.eventsPerSecond / naive.eventsPerSecond;
    const mark = (ok: boolean): string => (ok ? 'met' : 'NOT MET');
    const pairedFloor = oursReps.map((o, i) => floorReps[i]!.wallSeconds / o.wallSeconds);
    const pairedNaive = oursReps.map((o, i) => naiveReps[i]!.wallSeconds / o.wallSeconds);
    out.push('');
    out.push(`ours / floor: ${num(floorRatio, 2)}x   (target >= ${TARGETS.floorRatio}x: ${mark(floorRatio >= TARGETS.floorRatio)})`);
    out.push(`ours / naive: ${num(naiveRatio, 2)}x   (target >= ${TARGETS.naiveRatio}x: ${mark(naiveRatio >= TARGETS.naiveRatio)})`);
    out.push(`ours peak RSS: ${num(ours.peakRssMb)} MB   (target < ${TARGETS.peakRssMb} MB: ${mark(ours.peakRssMb < TARGETS.peakRssMb)})`);
    if (REPS > 1) {
      // The machine's speed drifts during a run (shared hosts): a ratio within one repetition
      // (floor, naive and ours back to back) is less exposed to that than a ratio of medians.
      const range = (xs: number[]): string => `${num(Math.min(...xs), 2)}-${num(Math.max(...xs), 2)}`;
      out.push(
        `paired, within each repetition (median, range): ours / floor ${num(median(pairedFloor), 2)}x (${range(pairedFloor)}), ` +
          `ours / naive ${num(median(pairedNaive), 2)}x (${range(pairedNaive)})`,
      );
    }
    if (big) {
      out.push('');
      out.push(
        `big object: ${num(big.object.events)} events, ${num(big.object.uncompressedBytes / 1e6)} MB uncompressed in one gzip object (${num(big.object.compressedBytes / 1e6, 1)} MB)`,
      );
      out.push(table(headers, [caseRow(big.result)], align));
      out.push(`big peak RSS: ${num(big.result.peakRssMb)} MB   (target < ${TARGETS.peakRssMb} MB: ${mark(big.result.peakRssMb < TARGETS.peakRssMb)})`);
    }
    if (profile) {
      out.push('');
      out.push(`CPU profile of ours (main thread, ${num(profile.totalMs / 1000, 2)} s sampled), self time by area:`);
      out.push(table(['area', 'self ms', '%'], profile.byArea.map((a) => [a.area, num(a.selfMs), num(a.percent, 1)]), [false, true, true]));
      out.push('');
      out.push('top functions by self time:');
      out.push(table(['function', 'where', 'self ms', '%'], profile.topFunctions.map((f) => [f.fn, f.where, num(f.selfMs), num(f.percent, 1)]), [false, false, true, true]));
    }
    const failures = [floor, naive, ours, ...(big ? [big.result] : [])].flatMap((c) => c.reps.filter((r) => !r.ok).map((r) => `${c.name}: ${r.problem}`));
    if (failures.length) {
      out.push('');
      out.push('CHECKS FAILED:');
      for (const f of failures) out.push(`  ${f}`);
    }
    process.stdout.write(out.join('\n') + '\n');

    if (flags.json) {
      const doc = {
        machine: { node: process.version, cores, cpu, platform: os.platform(), release: os.release(), totalMemMb: Math.round(os.totalmem() / 1e6) },
        settings: { events: EVENTS, reps: REPS, big: RUN_BIG, bigBytes: BIG_BYTES, bigReps: BIG_REPS },
        corpus,
        cases: { floor, naive, naiveDefaultQueue: naiveDefault, ours },
        ratios: { oursToFloor: floorRatio, oursToNaive: naiveRatio, pairedOursToFloor: pairedFloor, pairedOursToNaive: pairedNaive },
        targets: {
          ...TARGETS,
          met: {
            floorRatio: floorRatio >= TARGETS.floorRatio,
            naiveRatio: naiveRatio >= TARGETS.naiveRatio,
            peakRss: ours.peakRssMb < TARGETS.peakRssMb,
            ...(big ? { bigPeakRss: big.result.peakRssMb < TARGETS.peakRssMb } : {}),
          },
        },
        ...(big ? { big } : {}),
        ...(profile ? { profile } : {}),
      };
      await fsp.writeFile(flags.json, JSON.stringify(doc, null, 2) + '\n');
      progress(`wrote ${flags.json}`);
    }
    progress('done');
    return failures.length ? 1 : 0;
  } finally {
    await cleanup();
  }
}

process.exitCode = await main();
