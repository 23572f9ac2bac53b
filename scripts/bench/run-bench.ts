/**
 * Throughput and memory benchmark: `npm run bench` (builds first, then runs this file).
 *
 *   npm run bench -- [--events 200000] [--reps 3] [--no-big] [--big-bytes 1000000000]
 *                    [--big-reps 1] [--no-plain] [--tenants 100] [--tenant-idle 20]
 *                    [--no-throughput] [--json FILE] [--profile] [--keep]
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
 *   floor / ours on a plain copy of the corpus (every object gunzipped): the CPU comparison
 *   big     ours on one ~1 GB (uncompressed) gzip object
 *   tenants (--tenants N) the daemon with 1 and with N small tenants: peak and settled RSS
 *
 * Reports the median wall time over the repetitions, events/s, MB/s of uncompressed input
 * (MB = 10^6 bytes), CPU-seconds (user + system of the child's process tree, from
 * report-usage.mjs) and the peak RSS of the child. Progress goes to stderr, the table to stdout.
 * Everything talks to 127.0.0.1 only.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { freePort, readVmRssKb, readCpuSeconds, exportedSoFar } from './daemon-probes.js';
import { ReceiverProcess } from './receiver-process.js';
import { generateCorpus, generateBigObject, makeWorld, Rng, CORPUS_SEED, REPO_ROOT, type CorpusSummary, type BigObjectSummary } from './corpus.js';

const BENCH_DIR = path.join(REPO_ROOT, 'scripts', 'bench');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const USAGE_PRELOAD = pathToFileURL(path.join(BENCH_DIR, 'report-usage.mjs')).href;
/**
 * floorRatio/naiveRatio: throughput (wall time); cpuRatio: ours' CPU-seconds over the floor's on
 * the plain corpus (at most); peakRssMb: ours on the bench corpus and on the big object (under);
 * perTenantMb: settled RSS per idle tenant (under).
 */
const TARGETS = { floorRatio: 0.5, naiveRatio: 5, cpuRatio: 1.2, peakRssMb: 128, perTenantMb: 1 };
/**
 * Extra YAML lines of the bench tenant (indented under `- id: bench`), e.g. an enrichment
 * section to compare with it on and off. Empty: the plain mapping.
 */
const OURS_TENANT_YAML: string[] = [];

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
    plain: { type: 'boolean', default: true },
    'no-plain': { type: 'boolean', default: false },
    tenants: { type: 'string', default: '0' },
    'tenant-idle': { type: 'string', default: '20' },
    'no-throughput': { type: 'boolean', default: false },
    baseline: { type: 'string' },
    'ours-node-flags': { type: 'string', default: '' },
    'baseline-node-flags': { type: 'string', default: '' },
    'ours-env': { type: 'string', multiple: true, default: [] },
    enrichment: { type: 'boolean', default: false },
    'small-objects': { type: 'string', default: '0' },
    json: { type: 'string' },
    profile: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help) {
  process.stdout.write(
    'npm run bench -- [--events N] [--reps N] [--no-big] [--big-bytes N] [--big-reps N] [--no-plain]\n' +
      '                 [--tenants N] [--tenant-idle SECONDS] [--no-throughput] [--json FILE] [--profile] [--keep]\n' +
      '  --no-plain       skip the plain (not gzip) copy of the corpus (the CPU comparison)\n' +
      '  --tenants N      also measure the daemon with 1 and with N small tenants (RSS per tenant)\n' +
      '  --tenant-idle S  seconds the tenants stay idle after their data before RSS is read (default 20)\n' +
      '  --no-throughput  only the --tenants measurement\n' +
      '  --baseline DIR   also run DIR/dist/cli.js (another checkout, built) in every repetition: before/after in one run\n' +
      '  --ours-node-flags "FLAGS"  node flags for ours (not the baseline), e.g. the image\'s: --ours-node-flags=--max-semi-space-size=1\n' +
      '  --baseline-node-flags "FLAGS"  node flags for the baseline: the same as ours\' to compare two builds as the image runs them\n' +
      '  --ours-env K=V   an environment variable for ours (not the baseline); repeatable\n' +
      '  --enrichment     also run ours with enrichment on (lookup files of 200 000 users and 5 000 sites, the corpus\'s among them) in every repetition\n' +
      '  --small-objects N  also run ours (and the baseline) on N small plain objects of 5 records in every repetition (a checkpoint of megabytes)\n',
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
const RUN_PLAIN = flags.plain && !flags['no-plain'];
const TENANTS = flags.tenants === '0' ? 0 : positiveInt('tenants', flags.tenants);
const TENANT_IDLE_SECONDS = positiveInt('tenant-idle', flags['tenant-idle']);
const RUN_THROUGHPUT = !flags['no-throughput'];
/** Node flags and environment for ours only (e.g. the image's launcher: Dockerfile ENTRYPOINT and ENV), not for the baseline. */
const OURS_NODE_FLAGS = flags['ours-node-flags'].split(/\s+/).filter((f) => f.length > 0);
const BASELINE_NODE_FLAGS = flags['baseline-node-flags'].split(/\s+/).filter((f) => f.length > 0);
const OURS_ENV: Record<string, string> = {};
for (const kv of flags['ours-env']) {
  const i = kv.indexOf('=');
  if (i <= 0) {
    process.stderr.write(`--ours-env: expected K=V, got ${kv}\n`);
    process.exit(2);
  }
  OURS_ENV[kv.slice(0, i)] = kv.slice(i + 1);
}
/** The node arguments and environment of a run of `cli`: ours gets OURS_NODE_FLAGS and OURS_ENV. */
function launch(cli: string, args: string[], nodeFlags: string[] = []): { args: string[]; env: NodeJS.ProcessEnv } {
  if (cli !== CLI) return { args: [...BASELINE_NODE_FLAGS, ...nodeFlags, cli, ...args], env: childEnv() };
  return { args: [...OURS_NODE_FLAGS, ...nodeFlags, cli, ...args], env: { ...childEnv(), ...OURS_ENV } };
}
const RUN_ENRICHMENT = flags.enrichment;
const SMALL_OBJECTS = flags['small-objects'] === '0' ? 0 : positiveInt('small-objects', flags['small-objects']);
const BASELINE_CLI = flags.baseline ? path.resolve(flags.baseline, 'dist', 'cli.js') : undefined;
if (BASELINE_CLI && !fs.existsSync(BASELINE_CLI)) {
  process.stderr.write(`--baseline: ${BASELINE_CLI} is missing (build that checkout first)\n`);
  process.exit(2);
}
if (!RUN_THROUGHPUT && TENANTS === 0) {
  process.stderr.write('--no-throughput needs --tenants N\n');
  process.exit(2);
}

// ---------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------

const t0 = Date.now();
function progress(msg: string): void {
  process.stderr.write(`[bench ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
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
  /**
   * User + system CPU-seconds of the child's process tree (report-usage.mjs, at its exit); when
   * it could not report (killed), the last value polled from /proc/<pid>/stat.
   */
  cpuSeconds: number;
  /** The child's own CPU by thread (report-usage.mjs), when it could report. */
  threads: ThreadSeconds | undefined;
  /** The child's own page faults and system time (report-usage.mjs), when it could report. */
  faults: FaultCount | undefined;
  stdout: string;
  stderr: string;
}

/**
 * A process's CPU-seconds by thread, at its exit (report-usage.mjs): its main thread, the
 * threads still there (V8's platform threads, libuv's pool), the threads that had ended (the
 * encode workers of a `run --once`, which stops them before it exits).
 */
interface ThreadSeconds {
  main: number;
  alive: number;
  ended: number;
}

/** A process's minor page faults (a first touch of a page) and its system CPU-seconds, at its exit (report-usage.mjs). */
interface FaultCount {
  minor: number;
  systemSeconds: number;
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

let usageDir = os.tmpdir();
let usageSeq = 0;

function runChild(args: string[], env: NodeJS.ProcessEnv = childEnv(), onSpawn?: (child: ChildProcess) => void): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const usageFile = path.join(usageDir, `usage-${process.pid}-${++usageSeq}.json`);
    fs.rmSync(usageFile, { force: true });
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, ['--import', USAGE_PRELOAD, ...args], {
      cwd: REPO_ROOT,
      env: { ...env, TAO_BENCH_USAGE_FILE: usageFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onSpawn?.(child);
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
    let polledCpu = 0;
    const poll = (): void => {
      if (child.pid === undefined) return;
      peakKb = Math.max(peakKb, readRssKb(child.pid));
      polledCpu = Math.max(polledCpu, readCpuSeconds(child.pid, true) ?? 0);
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
      let cpuSeconds = polledCpu;
      let threads: ThreadSeconds | undefined;
      let faults: FaultCount | undefined;
      try {
        const usage = JSON.parse(fs.readFileSync(usageFile, 'utf8')) as { cpuSeconds: number; systemSeconds: number; maxRssBytes: number; minorFaults?: number; threads?: ThreadSeconds };
        cpuSeconds = usage.cpuSeconds;
        threads = usage.threads;
        if (usage.minorFaults !== undefined) faults = { minor: usage.minorFaults, systemSeconds: usage.systemSeconds };
        peakKb = Math.max(peakKb, usage.maxRssBytes / 1024);
        fs.rmSync(usageFile, { force: true });
      } catch {
        // killed before it could report: the polled figures
      }
      resolve({ code, signal, wallSeconds, peakRssBytes: peakKb * 1024, cpuSeconds, threads, faults, stdout, stderr });
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
  /** User + system CPU-seconds of the child's process tree. */
  cpuSeconds: number;
  /** The child's own CPU by thread, when it reported it. */
  threads?: ThreadSeconds | undefined;
  faults?: FaultCount | undefined;
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
  /** Median over the repetitions of their CPU-seconds (user + system, process tree). */
  medianCpuSeconds: number;
  eventsPerSecond: number;
  mbPerSecond: number;
  /** Median over the repetitions of their peak RSS. */
  medianPeakRssMb: number;
  /** Max over repetitions. */
  peakRssMb: number;
  note?: string;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Medians of the repetitions' CPU by thread, each part on its own; undefined when a repetition did not report it. */
function medianThreads(reps: RepResult[]): ThreadSeconds | undefined {
  if (reps.length === 0 || reps.some((r) => r.threads === undefined)) return undefined;
  return {
    main: median(reps.map((r) => r.threads!.main)),
    alive: median(reps.map((r) => r.threads!.alive)),
    ended: median(reps.map((r) => r.threads!.ended)),
  };
}

/** The medians of the repetitions' page faults and system CPU-seconds (undefined when one could not report them). */
function medianFaults(reps: RepResult[]): FaultCount | undefined {
  if (reps.length === 0 || reps.some((r) => r.faults === undefined)) return undefined;
  return { minor: median(reps.map((r) => r.faults!.minor)), systemSeconds: median(reps.map((r) => r.faults!.systemSeconds)) };
}

function summarise(name: string, description: string, events: number, inputBytes: number, reps: RepResult[], note?: string): CaseSummary {
  const medianSeconds = median(reps.map((r) => r.wallSeconds));
  return {
    name,
    description,
    events,
    inputBytes,
    reps,
    medianSeconds,
    medianCpuSeconds: median(reps.map((r) => r.cpuSeconds)),
    eventsPerSecond: events / medianSeconds,
    mbPerSecond: inputBytes / 1e6 / medianSeconds,
    medianPeakRssMb: median(reps.map((r) => r.peakRssBytes)) / 1e6,
    peakRssMb: Math.max(...reps.map((r) => r.peakRssBytes)) / 1e6,
    ...(note ? { note } : {}),
  };
}

async function runFloor(dir: string, expectedEvents: number): Promise<RepResult> {
  const r = await runChild([path.join(BENCH_DIR, 'floor.mjs'), dir]);
  const out = lastJsonLine(r.stdout);
  const events = Number(out?.events ?? 0);
  const ok = r.code === 0 && events === expectedEvents;
  return {
    wallSeconds: r.wallSeconds,
    cpuSeconds: r.cpuSeconds,
    threads: r.threads,
    faults: r.faults,
    innerSeconds: Number(out?.seconds),
    peakRssBytes: Math.max(r.peakRssBytes, Number(out?.maxRssBytes ?? 0)),
    events,
    requests: 0,
    requestBytes: 0,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, ${events} events: ${r.stderr.slice(-500)}` }),
  };
}

async function runNaive(corpus: CorpusSummary, receiver: ReceiverProcess, endpoint: string, queue: number | 'default'): Promise<RepResult> {
  await receiver.reset();
  const r = await runChild([path.join(BENCH_DIR, 'naive.mjs'), corpus.dir, `${endpoint}/v1/logs`, String(queue)]);
  const out = lastJsonLine(r.stdout);
  const events = Number(out?.events ?? 0);
  const dropped = Number(out?.dropped ?? 0);
  const failed = Number(out?.failed ?? 0);
  const ok = r.code === 0 && events === corpus.events && failed === 0 && (queue === 'default' || dropped === 0);
  const received = await receiver.counts();
  return {
    wallSeconds: r.wallSeconds,
    cpuSeconds: r.cpuSeconds,
    threads: r.threads,
    faults: r.faults,
    innerSeconds: Number(out?.seconds),
    peakRssBytes: Math.max(r.peakRssBytes, Number(out?.maxRssBytes ?? 0)),
    events,
    requests: received.requests,
    requestBytes: received.bytes,
    dropped,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, ${events} events, ${dropped} dropped, ${failed} failed: ${r.stderr.slice(-500)}` }),
  };
}

/**
 * Lookup files for --enrichment: the corpus's users and sites (its world, made again from the
 * corpus's seed) among 200 000 users and 5 000 sites, as a large tenant has. Returns the tenant's
 * enrichment YAML.
 */
async function writeLookupFiles(workDir: string): Promise<string[]> {
  const world = makeWorld(new Rng(CORPUS_SEED));
  const rng = new Rng(0x5eed);
  const sites = [...world.map((s) => ({ id: s.luid, name: s.name, contentUrl: s.uri }))];
  while (sites.length < 5000) sites.push({ id: rng.uuid(), name: `Site ${sites.length}`, contentUrl: `site${sites.length}` });
  const lines: string[] = [];
  for (const s of world) {
    for (const u of s.users) lines.push(JSON.stringify({ id: u.luid, name: u.email, email: u.email, fullName: u.displayName, siteRoles: { [s.luid]: 'Explorer' } }));
  }
  for (let i = lines.length; i < 200_000; i++) {
    const site = sites[i % sites.length]!.id;
    lines.push(JSON.stringify({ id: rng.uuid(), name: `user${i}@example.com`, email: `user${i}@example.com`, fullName: `User ${i}`, siteRoles: { [site]: 'Viewer' } }));
  }
  const usersFile = path.join(workDir, 'lookup-users.ndjson');
  const sitesFile = path.join(workDir, 'lookup-sites.ndjson');
  await fsp.writeFile(usersFile, lines.join('\n') + '\n');
  await fsp.writeFile(sitesFile, sites.map((x) => JSON.stringify(x)).join('\n') + '\n');
  return ['enrichment:', `  users: { file: ${JSON.stringify(usersFile)} }`, `  sites: { file: ${JSON.stringify(sitesFile)} }`, '  initialWait: 5m'];
}

async function writeOursConfig(workDir: string, sourceDir: string, stateDir: string, endpoint: string, extraYaml: string[] = OURS_TENANT_YAML): Promise<string> {
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
    ...extraYaml.map((l) => `    ${l}`),
    '',
  ].join('\n');
  await fsp.writeFile(file, yaml);
  return file;
}

async function runOurs(
  workDir: string,
  sourceDir: string,
  expectedEvents: number,
  receiver: ReceiverProcess,
  endpoint: string,
  label: string,
  nodeFlags: string[] = [],
  cli: string = CLI,
  extraYaml?: string[],
  /** A tenant state folder whose `enrichment/` (the lookup files' saved copies) the run starts with, as after a restart. */
  savedCopiesFrom?: string,
): Promise<RepResult> {
  const stateDir = path.join(workDir, 'state', label);
  await fsp.rm(stateDir, { recursive: true, force: true });
  if (savedCopiesFrom) await fsp.cp(path.join(savedCopiesFrom, 'enrichment'), path.join(stateDir, 'bench', 'enrichment'), { recursive: true });
  const config = await writeOursConfig(workDir, sourceDir, stateDir, endpoint, extraYaml);
  await receiver.reset();
  const l = launch(cli, ['run', '--once', '--config', config], nodeFlags);
  const r = await runChild(l.args, l.env);
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
  const received = await receiver.counts();
  const ok = r.code === 0 && exported === expectedEvents && received.requests > 0 && checkpoints;
  const result: RepResult = {
    wallSeconds: r.wallSeconds,
    cpuSeconds: r.cpuSeconds,
    threads: r.threads,
    faults: r.faults,
    ...(finished?.seconds !== undefined ? { innerSeconds: Number(finished.seconds) } : {}),
    peakRssBytes: r.peakRssBytes,
    events: exported,
    requests: received.requests,
    requestBytes: received.bytes,
    ok,
    ...(ok ? {} : { problem: `exit ${r.code}, exported ${exported}/${expectedEvents}, ${received.requests} requests, checkpoints ${checkpoints}: ${r.stderr.slice(-800)}` }),
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
  return [
    c.name,
    num(c.events),
    num(c.medianSeconds, 2),
    num(c.eventsPerSecond),
    num(c.mbPerSecond, 1),
    num(c.medianCpuSeconds, 2),
    num(c.medianPeakRssMb, 0),
    num(c.peakRssMb, 0),
    String(c.reps.length),
    notes,
  ];
}
const HEADERS = ['case', 'events', 'seconds', 'events/s', 'MB/s', 'CPU s', 'peak RSS MB', 'max RSS MB', 'reps', 'notes'];
const ALIGN = [false, true, true, true, true, true, true, true, true, false];

// ---------------------------------------------------------------------------
// The plain copy of the corpus (every gzip object gunzipped, same names)
// ---------------------------------------------------------------------------

/**
 * `objects` small plain objects in `dst`, copies of the corpus's plain objects of other types
 * than vizql (5 records each) under new names, spread over the day's 24 hour partitions: a
 * backlog whose checkpoint keeps an entry per object (some 400 bytes each).
 */
async function smallObjectsCopy(src: string, dst: string, objects: number): Promise<{ objects: number; events: number; bytes: number }> {
  const sources: Array<{ rel: string; text: Buffer; lines: number }> = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
      const a = path.join(dir, e.name);
      if (e.isDirectory()) await walk(a);
      else if (e.isFile() && !a.includes('eventType=vizql_http_request')) {
        const text = await fsp.readFile(a);
        if (text[0] === 0x1f && text[1] === 0x8b) continue;
        sources.push({ rel: path.relative(src, a), text, lines: text.toString('utf8').split('\n').filter((l) => l.trim() !== '').length });
      }
    }
  };
  await walk(src);
  sources.sort((a, b) => (a.rel < b.rel ? -1 : 1));
  if (sources.length === 0) throw new Error(`no plain objects in ${src} to copy`);
  let events = 0;
  let bytes = 0;
  for (let i = 0; i < objects; i++) {
    const from = sources[i % sources.length]!;
    const hour = String(i % 24).padStart(2, '0');
    const rel = from.rel.replace(/\/h=\d\d\//, `/h=${hour}/`).replace(/\.txt$/, `-${i}.txt`);
    const to = path.join(dst, rel);
    await fsp.mkdir(path.dirname(to), { recursive: true });
    await fsp.writeFile(to, from.text);
    events += from.lines;
    bytes += from.text.length;
  }
  return { objects, events, bytes };
}

async function plainCopy(src: string, dst: string): Promise<number> {
  let bytes = 0;
  const walk = async (from: string, to: string): Promise<void> => {
    await fsp.mkdir(to, { recursive: true });
    for (const e of await fsp.readdir(from, { withFileTypes: true })) {
      const a = path.join(from, e.name);
      const b = path.join(to, e.name);
      if (e.isDirectory()) await walk(a, b);
      else if (e.isFile()) {
        const fh = await fsp.open(a, 'r');
        const head = Buffer.alloc(2);
        await fh.read(head, 0, 2, 0);
        await fh.close();
        if (head[0] === 0x1f && head[1] === 0x8b) await pipeline(fs.createReadStream(a), zlib.createGunzip(), fs.createWriteStream(b));
        else await fsp.copyFile(a, b);
        bytes += (await fsp.stat(b)).size;
      }
    }
  };
  await walk(src, dst);
  return bytes;
}

// ---------------------------------------------------------------------------
// Tenants: the daemon with 1 and with N small tenants, RSS once they are idle
// ---------------------------------------------------------------------------

interface TenantsResult {
  /** 'ours', or 'baseline' (--baseline). */
  build: string;
  /** 'idle': an empty source from the start; 'after data': a small load each, then idle. */
  load: 'idle' | 'after data';
  tenants: number;
  events: number;
  /** Seconds from start until every tenant's events were exported. */
  secondsToExported: number;
  /** VmHWM over the whole run. */
  peakRssMb: number;
  /** Median VmRSS of the samples taken in the last seconds of the idle time. */
  settledRssMb: number;
  cpuSeconds: number;
  /** CPU of the idle time after the first 5 s of it (the idle collection's), in % of a core. */
  idleCpuPercent: number;
  ok: boolean;
  problem?: string;
}

async function runTenants(workDir: string, sourceDir: string, eventsPerTenant: number, n: number, endpoint: string, cli: string = CLI): Promise<TenantsResult> {
  const stateDir = path.join(workDir, 'state', `tenants-${n}-${eventsPerTenant}`);
  await fsp.rm(stateDir, { recursive: true, force: true });
  const port = await freePort();
  const lines = ['# generated by scripts/bench/run-bench.ts (--tenants)', `state: { dir: ${JSON.stringify(stateDir)} }`, `server: { address: "127.0.0.1:${port}" }`, 'tenants:'];
  for (let i = 0; i < n; i++) {
    lines.push(
      `  - id: t${String(i).padStart(3, '0')}`,
      '    sources:',
      `      - { type: directory, path: ${JSON.stringify(sourceDir)} }`,
      '    destinations:',
      `      - { type: otlp, endpoint: ${JSON.stringify(endpoint)}, protocol: http/protobuf }`,
    );
  }
  const config = path.join(workDir, `tenants-${n}.yaml`);
  await fsp.writeFile(config, lines.join('\n') + '\n');
  const expected = n * eventsPerTenant;
  let problem: string | undefined;
  let secondsToExported = NaN;
  const samples: number[] = [];
  let idleCpuPercent = NaN;
  const started = Date.now();
  const l = launch(cli, ['run', '--config', config]);
  const r = await runChild(l.args, l.env, (child) => {
    void (async () => {
      const deadline = started + 600_000;
      let exported = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        exported = await exportedSoFar(port);
        if (exported >= expected) break;
        await new Promise((res) => setTimeout(res, 500));
      }
      if (exported < expected) {
        problem = `exported ${exported}/${expected} within 10 minutes`;
      } else {
        secondsToExported = (Date.now() - started) / 1000;
        const idleUntil = Date.now() + TENANT_IDLE_SECONDS * 1000;
        // the idle CPU: from 5 s into the idle time (after the idle collection) to its end
        let idleFrom: { at: number; cpu: number } | undefined;
        while (Date.now() < idleUntil && child.exitCode === null) {
          await new Promise((res) => setTimeout(res, 500));
          const cpu = child.pid !== undefined ? readCpuSeconds(child.pid) : undefined;
          if (idleFrom === undefined && cpu !== undefined && idleUntil - Date.now() < (TENANT_IDLE_SECONDS - 5) * 1000) idleFrom = { at: Date.now(), cpu };
          // the last few seconds of the idle time: the settled figure
          if (idleUntil - Date.now() < 3000 && child.pid !== undefined) samples.push(readVmRssKb(child.pid));
        }
        const cpuNow = child.pid !== undefined ? readCpuSeconds(child.pid) : undefined;
        if (idleFrom !== undefined && cpuNow !== undefined && Date.now() > idleFrom.at) idleCpuPercent = ((cpuNow - idleFrom.cpu) / ((Date.now() - idleFrom.at) / 1000)) * 100;
      }
      child.kill('SIGTERM');
    })();
  });
  const settled = samples.filter((k) => k > 0);
  const ok = problem === undefined && settled.length > 0 && (r.code === 0 || r.signal === 'SIGTERM');
  if (!ok && problem === undefined) problem = `exit ${r.code} ${r.signal ?? ''}: ${r.stderr.slice(-800)}`;
  await fsp.rm(stateDir, { recursive: true, force: true });
  return {
    build: cli === CLI ? 'ours' : 'baseline',
    load: eventsPerTenant === 0 ? 'idle' : 'after data',
    tenants: n,
    events: expected,
    secondsToExported,
    peakRssMb: r.peakRssBytes / 1e6,
    settledRssMb: settled.length ? (median(settled) * 1024) / 1e6 : NaN,
    cpuSeconds: r.cpuSeconds,
    idleCpuPercent,
    ok,
    ...(problem ? { problem } : {}),
  };
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
  usageDir = workDir;
  const receiver = new ReceiverProcess();
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
    const cores = os.availableParallelism();
    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    const out: string[] = [];
    out.push('');
    out.push(`tableau-activity-otel benchmark — Node ${process.version}, ${cores} cores (${cpu}), ${os.platform()} ${os.release()}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the start`);
    if (OURS_NODE_FLAGS.length > 0 || Object.keys(OURS_ENV).length > 0) out.push(`ours runs as: ${Object.entries(OURS_ENV).map(([k, v]) => `${k}=${v} `).join('')}node ${[...OURS_NODE_FLAGS, 'dist/cli.js'].join(' ')} (the baseline ${BASELINE_NODE_FLAGS.length > 0 ? `as node ${BASELINE_NODE_FLAGS.join(' ')}` : 'without'})`);
    const failures: string[] = [];
    const doc: Record<string, unknown> = {
      machine: { node: process.version, cores, cpu, platform: os.platform(), release: os.release(), totalMemMb: Math.round(os.totalmem() / 1e6), loadAverageAtStart: os.loadavg() },
      settings: { events: EVENTS, reps: REPS, big: RUN_BIG, bigBytes: BIG_BYTES, bigReps: BIG_REPS, plain: RUN_PLAIN, tenants: TENANTS, tenantIdleSeconds: TENANT_IDLE_SECONDS },
    };
    const mark = (ok: boolean): string => (ok ? 'met' : 'NOT MET');
    const range = (xs: number[]): string => `${num(Math.min(...xs), 2)}-${num(Math.max(...xs), 2)}`;

    if (RUN_THROUGHPUT) {
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
      const plainDir = path.join(workDir, 'corpus-plain');
      if (RUN_PLAIN) {
        const bytes = await plainCopy(corpus.dir, plainDir);
        progress(`plain copy: ${num(bytes / 1e6, 1)} MB`);
      }

      const smallDir = path.join(workDir, 'corpus-small');
      const small = SMALL_OBJECTS > 0 ? await smallObjectsCopy(corpus.dir, smallDir, SMALL_OBJECTS) : undefined;
      if (small) progress(`small objects: ${num(small.objects)} plain objects, ${num(small.events)} events, ${num(small.bytes / 1e6, 1)} MB`);
      const smallReps: RepResult[] = [];
      const baseSmallReps: RepResult[] = [];
      const floorReps: RepResult[] = [];
      const naiveReps: RepResult[] = [];
      const oursReps: RepResult[] = [];
      const floorPlainReps: RepResult[] = [];
      const oursPlainReps: RepResult[] = [];
      const baseReps: RepResult[] = [];
      const enrichedReps: RepResult[] = [];
      const enrichedWarmReps: RepResult[] = [];
      const enrichmentYaml = RUN_ENRICHMENT ? await writeLookupFiles(workDir) : undefined;
      // the copies a run saves of the parsed lookup files (read back by the runs that start with them)
      const savedCopiesFrom = path.join(workDir, 'state', 'enrichment-load', 'bench');
      const basePlainReps: RepResult[] = [];
      const naiveQueue = corpus.events + 1;
      const check = (name: string, r: RepResult): void => {
        progress(
          `  ${name}: ${num(r.wallSeconds, 2)} s, CPU ${num(r.cpuSeconds, 2)} s, ${num(r.events)} events, peak RSS ${num(r.peakRssBytes / 1e6)} MB` +
            (r.requests ? `, ${r.requests} requests / ${num(r.requestBytes / 1e6, 1)} MB to the receiver` : '') +
            (r.dropped ? `, ${num(r.dropped)} dropped` : '') +
            (r.ok ? '' : `  CHECK FAILED: ${r.problem}`),
        );
      };
      // what loading the lookup files costs alone (a run over an empty directory): the rest of the
      // difference is the join on the hot path; the run leaves the copies the warm runs start with
      let loadOnly: { wallSeconds: number; cpuSeconds: number; peakRssBytes: number } | undefined;
      let loadOnlyWarm: { wallSeconds: number; cpuSeconds: number; peakRssBytes: number } | undefined;
      if (enrichmentYaml) {
        progress('ours, enrichment on, an empty directory (the load, and what it adds to a run)');
        const emptyDir = path.join(workDir, 'enrichment-empty');
        await fsp.mkdir(emptyDir, { recursive: true });
        const stateDir = path.join(workDir, 'state', 'enrichment-load');
        await fsp.rm(stateDir, { recursive: true, force: true });
        const config = await writeOursConfig(workDir, emptyDir, stateDir, endpoint, enrichmentYaml);
        const r = await runChild([CLI, 'run', '--once', '--config', config]);
        // again, the copies of the first there (a restart)
        const warmState = path.join(workDir, 'state', 'enrichment-load-warm');
        await fsp.rm(warmState, { recursive: true, force: true });
        await fsp.cp(path.join(savedCopiesFrom, 'enrichment'), path.join(warmState, 'bench', 'enrichment'), { recursive: true });
        const warm = await runChild([CLI, 'run', '--once', '--config', await writeOursConfig(workDir, emptyDir, warmState, endpoint, enrichmentYaml)]);
        const warmFromCopies = warm.stderr.includes('"fromSavedCopy":true');
        // the same empty run without enrichment: start-up and shutdown, which `ours` pays too
        const bareConfig = await writeOursConfig(workDir, emptyDir, `${stateDir}-bare`, endpoint, []);
        const bare = await runChild([CLI, 'run', '--once', '--config', bareConfig]);
        if (r.code !== 0 || bare.code !== 0 || warm.code !== 0 || !warmFromCopies) progress(`  CHECK FAILED: exit ${r.code} / ${warm.code} / ${bare.code}, the warm run read the saved copies: ${warmFromCopies}: ${r.stderr.slice(-500)}${warm.stderr.slice(-300)}${bare.stderr.slice(-300)}`);
        loadOnly = { wallSeconds: r.wallSeconds - bare.wallSeconds, cpuSeconds: r.cpuSeconds - bare.cpuSeconds, peakRssBytes: r.peakRssBytes };
        loadOnlyWarm = { wallSeconds: warm.wallSeconds - bare.wallSeconds, cpuSeconds: warm.cpuSeconds - bare.cpuSeconds, peakRssBytes: warm.peakRssBytes };
        progress(
          `  empty directory: ${num(r.wallSeconds, 2)} s, CPU ${num(r.cpuSeconds, 2)} s, peak RSS ${num(r.peakRssBytes / 1e6)} MB with enrichment; ` +
            `${num(warm.wallSeconds, 2)} s, CPU ${num(warm.cpuSeconds, 2)} s, peak RSS ${num(warm.peakRssBytes / 1e6)} MB with the saved copies; ${num(bare.wallSeconds, 2)} s, CPU ${num(bare.cpuSeconds, 2)} s, peak RSS ${num(bare.peakRssBytes / 1e6)} MB without`,
        );
      }
      for (let rep = 1; rep <= REPS; rep++) {
        progress(`rep ${rep}/${REPS}: floor`);
        const f = await runFloor(corpus.dir, corpus.events);
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
        if (RUN_PLAIN) {
          progress(`rep ${rep}/${REPS}: floor, plain corpus`);
          const fp = await runFloor(plainDir, corpus.events);
          check('floor plain', fp);
          floorPlainReps.push(fp);
          progress(`rep ${rep}/${REPS}: ours, plain corpus`);
          const op = await runOurs(workDir, plainDir, corpus.events, receiver, endpoint, `plain-${rep}`);
          check('ours plain', op);
          oursPlainReps.push(op);
        }
        if (enrichmentYaml) {
          progress(`rep ${rep}/${REPS}: ours, enrichment on`);
          const e = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, `enriched-${rep}`, [], CLI, enrichmentYaml);
          check('ours enriched', e);
          enrichedReps.push(e);
          progress(`rep ${rep}/${REPS}: ours, enrichment on, the lookup files' saved copies there (a restart)`);
          const w = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, `enriched-warm-${rep}`, [], CLI, enrichmentYaml, savedCopiesFrom);
          check('ours enriched, saved copies', w);
          enrichedWarmReps.push(w);
        }
        if (small) {
          progress(`rep ${rep}/${REPS}: ours, ${num(small.objects)} small objects`);
          const so = await runOurs(workDir, smallDir, small.events, receiver, endpoint, `small-${rep}`);
          check('ours small objects', so);
          smallReps.push(so);
          if (BASELINE_CLI) {
            progress(`rep ${rep}/${REPS}: baseline, ${num(small.objects)} small objects`);
            const bs = await runOurs(workDir, smallDir, small.events, receiver, endpoint, `base-small-${rep}`, [], BASELINE_CLI);
            check('baseline small objects', bs);
            baseSmallReps.push(bs);
          }
        }
        if (BASELINE_CLI) {
          progress(`rep ${rep}/${REPS}: baseline`);
          const b = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, `base-${rep}`, [], BASELINE_CLI);
          check('baseline', b);
          baseReps.push(b);
          if (RUN_PLAIN) {
            progress(`rep ${rep}/${REPS}: baseline, plain corpus`);
            const bp = await runOurs(workDir, plainDir, corpus.events, receiver, endpoint, `base-plain-${rep}`, [], BASELINE_CLI);
            check('baseline plain', bp);
            basePlainReps.push(bp);
          }
        }
      }
      progress('naive with the SDK default queue (2048), once');
      const nd = await runNaive(corpus, receiver, endpoint, 'default');
      check('naive-default-queue', nd);

      const floor = summarise('floor', 'read + gunzip + split + JSON.parse, one thread', corpus.events, corpus.uncompressedBytes, floorReps);
      const naive = summarise('naive', 'SDK LoggerProvider + BatchLogRecordProcessor + OTLP proto exporter', corpus.events, corpus.uncompressedBytes, naiveReps, `maxQueueSize ${num(naiveQueue)}, dropped ${num(Math.max(...naiveReps.map((r) => r.dropped ?? 0)))}`);
      const ours = summarise('ours', 'dist/cli.js run --once, directory → otlp http/protobuf, checkpoints', corpus.events, corpus.uncompressedBytes, oursReps, `${median(oursReps.map((r) => r.requests))} requests`);
      const ndDropped = nd.dropped ?? 0;
      const naiveDefault = summarise('naive (SDK defaults)', 'as naive, default maxQueueSize 2048', corpus.events, corpus.uncompressedBytes, [{ ...nd, ok: nd.ok }], `DROPPED ${num(ndDropped)} (${num((100 * ndDropped) / corpus.events, 1)}%) silently`);
      const floorPlain = RUN_PLAIN ? summarise('floor, plain', 'floor on the plain copy', corpus.events, corpus.uncompressedBytes, floorPlainReps) : undefined;
      const oursPlain = RUN_PLAIN ? summarise('ours, plain', 'ours on the plain copy', corpus.events, corpus.uncompressedBytes, oursPlainReps) : undefined;
      const enriched = enrichmentYaml ? summarise('ours, enrichment', 'ours with enrichment on (200 000 users, 5 000 sites from lookup files)', corpus.events, corpus.uncompressedBytes, enrichedReps) : undefined;
      const enrichedWarm = enrichmentYaml ? summarise('ours, enrichment, saved', 'ours with enrichment on, the lookup files\' copies saved by an earlier run there', corpus.events, corpus.uncompressedBytes, enrichedWarmReps) : undefined;
      const oursSmall = small ? summarise('ours, small objects', `ours on ${num(small.objects)} plain objects of 5 records`, small.events, small.bytes, smallReps) : undefined;
      const baseSmall = small && BASELINE_CLI ? summarise('baseline, small objects', `${flags.baseline} on the small objects`, small.events, small.bytes, baseSmallReps) : undefined;
      const base = BASELINE_CLI ? summarise('baseline', `${flags.baseline} on the corpus`, corpus.events, corpus.uncompressedBytes, baseReps) : undefined;
      const basePlain = BASELINE_CLI && RUN_PLAIN ? summarise('baseline, plain', `${flags.baseline} on the plain copy`, corpus.events, corpus.uncompressedBytes, basePlainReps) : undefined;

      /** One summary per thread profiled (Node writes a profile per thread: 0 the main one, then each worker). */
      const profiles: Array<{ thread: string; summary: ProfileSummary }> = [];
      if (flags.profile) {
        progress('ours once more with --cpu-prof');
        const profDir = path.join(workDir, 'prof');
        await fsp.mkdir(profDir, { recursive: true });
        const p = await runOurs(workDir, corpus.dir, corpus.events, receiver, endpoint, 'profile', ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
        check('ours --cpu-prof', p);
        for (const file of (await fsp.readdir(profDir)).filter((f) => f.endsWith('.cpuprofile')).sort()) {
          const summary = summariseProfile(JSON.parse(await fsp.readFile(path.join(profDir, file), 'utf8')) as CpuProfile);
          const busyMs = summary.byArea.filter((a) => a.area !== '(idle)').reduce((n, a) => n + a.selfMs, 0);
          if (busyMs < 50) continue; // a worker started early and not adopted
          const threadId = /\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1];
          profiles.push({ thread: threadId === '0' ? 'main thread' : `worker thread ${threadId ?? '?'}`, summary });
        }
      }

      let big: { object: BigObjectSummary; result: CaseSummary } | undefined;
      if (RUN_BIG) {
        progress(`generating the big object (~${num(BIG_BYTES / 1e6)} MB uncompressed)`);
        await fsp.rm(corpus.dir, { recursive: true, force: true }); // free the disk and page cache
        await fsp.rm(plainDir, { recursive: true, force: true });
        const object = await generateBigObject({ dir: path.join(workDir, 'big'), targetBytes: BIG_BYTES, onProgress: progress });
        progress(`big object: ${num(object.events)} events, ${num(object.uncompressedBytes / 1e6)} MB uncompressed, ${num(object.compressedBytes / 1e6, 1)} MB gzip`);
        const reps: RepResult[] = [];
        for (let rep = 1; rep <= BIG_REPS; rep++) {
          progress(`big rep ${rep}/${BIG_REPS}: ours`);
          const r = await runOurs(workDir, object.dir, object.events, receiver, endpoint, `big-${rep}`);
          check('ours big', r);
          reps.push(r);
        }
        await fsp.rm(object.dir, { recursive: true, force: true });
        big = { object, result: summarise('ours, one big object', 'one gzip object', object.events, object.uncompressedBytes, reps, `${num(object.compressedBytes / 1e6)} MB gzip`) };
      }

      // ---- report ---------------------------------------------------------------------------
      out.push(
        `corpus: ${num(corpus.events)} events in ${corpus.objects} objects (${corpus.gzipObjects} gzip), ${corpus.eventTypes} event types, ` +
          `${num(corpus.uncompressedBytes / 1e6, 1)} MB uncompressed (vizql records avg ${corpus.avgVizqlRecordBytes} B); median of ${REPS} rep(s); MB = 10^6 bytes`,
      );
      out.push('CPU s: user + system CPU-seconds of the process tree (median); peak RSS: median over the reps of each rep\'s peak; max RSS: the largest');
      out.push('');
      const rows = [floor, naive, naiveDefault, ours, ...(floorPlain && oursPlain ? [floorPlain, oursPlain] : []), ...(enriched ? [enriched] : []), ...(enrichedWarm ? [enrichedWarm] : []), ...(base ? [base] : []), ...(basePlain ? [basePlain] : []), ...(oursSmall ? [oursSmall] : []), ...(baseSmall ? [baseSmall] : [])].map(caseRow);
      out.push(table(HEADERS, rows, ALIGN));
      const floorRatio = ours.eventsPerSecond / floor.eventsPerSecond;
      const naiveRatio = ours.eventsPerSecond / naive.eventsPerSecond;
      const pairedFloor = oursReps.map((o, i) => floorReps[i]!.wallSeconds / o.wallSeconds);
      const pairedNaive = oursReps.map((o, i) => naiveReps[i]!.wallSeconds / o.wallSeconds);
      out.push('');
      out.push(`ours / floor: ${num(floorRatio, 2)}x   (target >= ${TARGETS.floorRatio}x: ${mark(floorRatio >= TARGETS.floorRatio)})`);
      out.push(`ours / naive: ${num(naiveRatio, 2)}x   (target >= ${TARGETS.naiveRatio}x: ${mark(naiveRatio >= TARGETS.naiveRatio)})`);
      out.push(`ours peak RSS: ${num(ours.medianPeakRssMb)} MB, max ${num(ours.peakRssMb)} MB   (target < ${TARGETS.peakRssMb} MB: ${mark(ours.medianPeakRssMb < TARGETS.peakRssMb)})`);
      let cpuRatio: number | undefined;
      let pairedCpu: number[] = [];
      if (floorPlain && oursPlain) {
        cpuRatio = oursPlain.medianCpuSeconds / floorPlain.medianCpuSeconds;
        pairedCpu = oursPlainReps.map((o, i) => o.cpuSeconds / floorPlainReps[i]!.cpuSeconds);
        out.push(
          `ours CPU / floor CPU, plain corpus: ${num(oursPlain.medianCpuSeconds, 2)} / ${num(floorPlain.medianCpuSeconds, 2)} s = ${num(cpuRatio, 2)}x   (target <= ${TARGETS.cpuRatio}x: ${mark(cpuRatio <= TARGETS.cpuRatio)})`,
        );
        out.push(`ours CPU / floor CPU, gzip corpus: ${num(ours.medianCpuSeconds, 2)} / ${num(floor.medianCpuSeconds, 2)} s = ${num(ours.medianCpuSeconds / floor.medianCpuSeconds, 2)}x`);
        const oursThreads = medianThreads(oursPlainReps);
        const floorThreads = medianThreads(floorPlainReps);
        if (oursThreads && floorThreads) {
          out.push(
            `  by thread, plain corpus (medians): ours main thread ${num(oursThreads.main, 2)} s, encode workers (ended before exit) ${num(oursThreads.ended, 2)} s, ` +
              `V8's and libuv's threads ${num(oursThreads.alive, 2)} s; the floor's main thread ${num(floorThreads.main, 2)} s, its other threads ${num(floorThreads.alive + floorThreads.ended, 2)} s`,
          );
        }
        const oursFaults = medianFaults(oursPlainReps);
        const floorFaults = medianFaults(floorPlainReps);
        if (oursFaults && floorFaults) {
          out.push(
            `  page faults (minor: first touches of a page), plain corpus (medians): ours ${num(oursFaults.minor)}, system CPU ${num(oursFaults.systemSeconds, 2)} s; ` +
              `the floor ${num(floorFaults.minor)}, system CPU ${num(floorFaults.systemSeconds, 2)} s`,
          );
        }
      }
      if (enriched) {
        const pairedWall = enrichedReps.map((e, i) => e.wallSeconds / oursReps[i]!.wallSeconds - 1);
        const pairedCpuCost = enrichedReps.map((e, i) => e.cpuSeconds / oursReps[i]!.cpuSeconds - 1);
        const pct = (x: number): string => `${num(100 * x, 1)} %`;
        out.push(
          `enrichment on vs off (same run, gzip corpus): wall ${num(enriched.medianSeconds, 2)} vs ${num(ours.medianSeconds, 2)} s, paired median ${pct(median(pairedWall))} (${pairedWall.map(pct).join(', ')})   (target < 5 %: ${mark(median(pairedWall) < 0.05)}); ` +
            `CPU ${num(enriched.medianCpuSeconds, 2)} vs ${num(ours.medianCpuSeconds, 2)} s, paired median ${pct(median(pairedCpuCost))}; peak RSS ${num(enriched.medianPeakRssMb)} vs ${num(ours.medianPeakRssMb)} MB`,
        );
        if (loadOnly) {
          const hotWall = (enriched.medianSeconds - loadOnly.wallSeconds) / ours.medianSeconds - 1;
          const hotCpu = (enriched.medianCpuSeconds - loadOnly.cpuSeconds) / ours.medianCpuSeconds - 1;
          out.push(
            `  of which loading the 200 000 users and 5 000 sites (empty-directory runs with and without enrichment, the difference): ${num(loadOnly.wallSeconds, 2)} s, CPU ${num(loadOnly.cpuSeconds, 2)} s (peak RSS ${num(loadOnly.peakRssBytes / 1e6)} MB); ` +
              `the rest, the join on the hot path: wall ${pct(hotWall)}, CPU ${pct(hotCpu)}   (target < 5 %: ${mark(hotWall < 0.05)})`,
          );
        }
        if (enrichedWarm) {
          const pairedWarm = enrichedWarmReps.map((e, i) => e.wallSeconds / oursReps[i]!.wallSeconds - 1);
          const pairedWarmCpu = enrichedWarmReps.map((e, i) => e.cpuSeconds / oursReps[i]!.cpuSeconds - 1);
          out.push(
            `enrichment on, the lookup files' saved copies there (a restart), vs off: wall ${num(enrichedWarm.medianSeconds, 2)} vs ${num(ours.medianSeconds, 2)} s, paired median ${pct(median(pairedWarm))} (${pairedWarm.map(pct).join(', ')})   (target < 5 %: ${mark(median(pairedWarm) < 0.05)}); ` +
              `CPU paired median ${pct(median(pairedWarmCpu))}; peak RSS ${num(enrichedWarm.medianPeakRssMb)} MB` +
              (loadOnlyWarm ? `; what the load from the copies adds to a run with nothing to read ${num(loadOnlyWarm.wallSeconds, 2)} s, CPU ${num(loadOnlyWarm.cpuSeconds, 2)} s` : ''),
          );
        }
      }
      if (basePlain && floorPlain) {
        const pairedBase = basePlainReps.map((b, i) => b.cpuSeconds / floorPlainReps[i]!.cpuSeconds);
        out.push(
          `baseline CPU / floor CPU, plain corpus: ${num(basePlain.medianCpuSeconds, 2)} / ${num(floorPlain.medianCpuSeconds, 2)} s = ${num(basePlain.medianCpuSeconds / floorPlain.medianCpuSeconds, 2)}x (paired median ${num(median(pairedBase), 2)}x); ` +
            `peak RSS ours ${num(ours.medianPeakRssMb)} MB vs baseline ${num(base!.medianPeakRssMb)} MB; wall ours ${num(ours.medianSeconds, 2)} s vs baseline ${num(base!.medianSeconds, 2)} s`,
        );
      }
      if (REPS > 1) {
        // The machine's speed drifts during a run (shared hosts): a ratio within one repetition
        // (floor, naive and ours back to back) is less exposed to that than a ratio of medians.
        out.push(
          `paired, within each repetition (median, range): ours / floor ${num(median(pairedFloor), 2)}x (${range(pairedFloor)}), ` +
            `ours / naive ${num(median(pairedNaive), 2)}x (${range(pairedNaive)})` +
            (pairedCpu.length ? `, CPU ours / floor plain ${num(median(pairedCpu), 2)}x (${range(pairedCpu)})` : ''),
        );
      }
      if (big) {
        out.push('');
        out.push(
          `big object: ${num(big.object.events)} events, ${num(big.object.uncompressedBytes / 1e6)} MB uncompressed in one gzip object (${num(big.object.compressedBytes / 1e6, 1)} MB)`,
        );
        out.push(table(HEADERS, [caseRow(big.result)], ALIGN));
        out.push(`big peak RSS: ${num(big.result.medianPeakRssMb)} MB   (target < ${TARGETS.peakRssMb} MB: ${mark(big.result.medianPeakRssMb < TARGETS.peakRssMb)})`);
      }
      for (const { thread, summary: profile } of profiles) {
        out.push('');
        out.push(`CPU profile of ours (${thread}, ${num(profile.totalMs / 1000, 2)} s sampled), self time by area:`);
        out.push(table(['area', 'self ms', '%'], profile.byArea.map((a) => [a.area, num(a.selfMs), num(a.percent, 1)]), [false, true, true]));
        out.push('');
        out.push('top functions by self time:');
        out.push(table(['function', 'where', 'self ms', '%'], profile.topFunctions.map((f) => [f.fn, f.where, num(f.selfMs), num(f.percent, 1)]), [false, false, true, true]));
      }
      if (oursSmall) out.push(`ours peak RSS on ${num(small!.objects)} small objects: ${num(oursSmall.medianPeakRssMb)} MB, max ${num(oursSmall.peakRssMb)} MB` + (baseSmall ? `; baseline ${num(baseSmall.medianPeakRssMb)} MB` : ''));
      for (const c of [floor, naive, ours, ...(floorPlain && oursPlain ? [floorPlain, oursPlain] : []), ...(big ? [big.result] : []), ...(oursSmall ? [oursSmall] : [])]) {
        for (const r of c.reps) if (!r.ok) failures.push(`${c.name}: ${r.problem}`);
      }
      Object.assign(doc, {
        corpus,
        cases: { floor, naive, naiveDefaultQueue: naiveDefault, ours, ...(floorPlain && oursPlain ? { floorPlain, oursPlain } : {}), ...(enriched ? { oursEnriched: enriched } : {}), ...(enrichedWarm ? { oursEnrichedSavedCopies: enrichedWarm } : {}), ...(base ? { baseline: base } : {}), ...(basePlain ? { baselinePlain: basePlain } : {}), ...(oursSmall ? { oursSmallObjects: oursSmall } : {}), ...(baseSmall ? { baselineSmallObjects: baseSmall } : {}) },
        ratios: { oursToFloor: floorRatio, oursToNaive: naiveRatio, pairedOursToFloor: pairedFloor, pairedOursToNaive: pairedNaive, ...(cpuRatio !== undefined ? { cpuOursToFloorPlain: cpuRatio, pairedCpuOursToFloorPlain: pairedCpu } : {}) },
        targets: {
          ...TARGETS,
          met: {
            floorRatio: floorRatio >= TARGETS.floorRatio,
            naiveRatio: naiveRatio >= TARGETS.naiveRatio,
            peakRss: ours.medianPeakRssMb < TARGETS.peakRssMb,
            ...(cpuRatio !== undefined ? { cpuRatio: cpuRatio <= TARGETS.cpuRatio } : {}),
            ...(big ? { bigPeakRss: big.result.medianPeakRssMb < TARGETS.peakRssMb } : {}),
          },
        },
        ...(big ? { big } : {}),
        ...(profiles.length ? { profiles } : {}),
      });
    }

    if (TENANTS > 0) {
      progress('generating the small tenants\' corpus');
      const small = await generateCorpus({ dir: path.join(workDir, 'tenant-corpus'), events: 1000 });
      const emptyDir = path.join(workDir, 'tenant-empty');
      await fsp.mkdir(emptyDir, { recursive: true });
      const results: TenantsResult[] = [];
      const builds = BASELINE_CLI ? [CLI, BASELINE_CLI] : [CLI];
      for (const cli of builds) for (const withData of [false, true]) for (const n of TENANTS === 1 ? [1] : [1, TENANTS]) {
        const events = withData ? small.events : 0;
        progress(`${cli === CLI ? 'ours' : 'baseline'}: daemon with ${n} tenant(s), ${withData ? `${num(small.events)} events (${small.objects} objects) each, then` : 'no data,'} idle ${TENANT_IDLE_SECONDS} s`);
        const r = await runTenants(workDir, withData ? small.dir : emptyDir, events, n, endpoint, cli);
        progress(`  ${n} tenant(s): exported in ${num(r.secondsToExported, 1)} s, peak RSS ${num(r.peakRssMb)} MB, settled ${num(r.settledRssMb)} MB, CPU ${num(r.cpuSeconds, 2)} s, idle CPU ${num(r.idleCpuPercent, 2)} % of a core${r.ok ? '' : `  CHECK FAILED: ${r.problem}`}`);
        results.push(r);
        if (!r.ok) failures.push(`tenants ${n}: ${r.problem}`);
      }
      out.push('');
      out.push(`tenants: the daemon (not --once), each tenant a directory source and an otlp destination; idle: an empty directory; after data: ${num(small.events)} events in ${small.objects} objects (every event type) each, then idle ${TENANT_IDLE_SECONDS} s`);
      out.push(
        table(
          ['build', 'load', 'tenants', 'events', 'exported after s', 'CPU s', 'idle CPU % of a core', 'peak RSS MB', 'settled RSS MB'],
          results.map((r) => [r.build, r.load, String(r.tenants), num(r.events), num(r.secondsToExported, 1), num(r.cpuSeconds, 2), num(r.idleCpuPercent, 2), num(r.peakRssMb), num(r.settledRssMb)]),
          [false, false, true, true, true, true, true, true, true],
        ),
      );
      const perTenant: Record<string, { settledMb: number; peakMb: number }> = {};
      for (const build of ['ours', 'baseline']) {
        for (const load of ['idle', 'after data'] as const) {
          const mine = results.filter((r) => r.build === build && r.load === load);
          const one = mine[0];
          const many = mine[mine.length - 1];
          if (!one || !many || many === one) continue;
          const per = { settledMb: (many.settledRssMb - one.settledRssMb) / (many.tenants - one.tenants), peakMb: (many.peakRssMb - one.peakRssMb) / (many.tenants - one.tenants) };
          perTenant[`${build}, ${load}`] = per;
          out.push(
            `${build} per tenant, ${load}: ${num(per.settledMb, 2)} MB settled, ${num(per.peakMb, 2)} MB at the peak` +
              (build === 'ours' && load === 'idle' ? `   (target < ${TARGETS.perTenantMb} MB per idle tenant: ${mark(per.settledMb < TARGETS.perTenantMb)})` : ''),
          );
        }
      }
      doc.tenants = { corpus: small, results, perTenant };
    }

    if (failures.length) {
      out.push('');
      out.push('CHECKS FAILED:');
      for (const f of failures) out.push(`  ${f}`);
    }
    process.stdout.write(out.join('\n') + '\n');

    if (flags.json) {
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
