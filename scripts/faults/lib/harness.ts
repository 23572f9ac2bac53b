/**
 * What every fault scenario shares: a work directory, the built CLI run as a child process with
 * its peak RSS sampled from /proc/<pid>/status, config files, the dead-letter files, and the
 * judgement of a run by the unique `testSeq` each fixture record carries (`tableau.test_seq` at
 * the destination): every valid record delivered, duplicates counted per sequence, every bad
 * line dead-lettered with its reason.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, existsSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startCli, REPO_ROOT, type CliProcess, type CliResult } from '../../../test/support/cli-process.js';
import type { ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { readCheckpointState } from '../../../src/pipeline/checkpoint-file.js';

export { REPO_ROOT };

export type Outcome = 'pass' | 'FAIL' | 'skip';

export interface ScenarioResult {
  eventsIn: number;
  delivered: number;
  duplicates: number;
  deadLettered: number;
  peakRssMb: number;
  outcome: Outcome;
  notes: string;
}

export interface ScenarioOptions {
  short: boolean;
}

export interface Scenario {
  name: string;
  /** One line: what it does to the daemon. */
  title: string;
  run(ctx: FaultContext, options: ScenarioOptions): Promise<ScenarioResult>;
}

/** What the build in dist/ supports (other parts of the daemon are being built concurrently). */
export interface Features {
  /** `server:` in the config (HTTP endpoints, /metrics). */
  server: boolean;
  destinationTypes: string[];
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------
// Peak RSS of a child process
// ---------------------------------------------------------------------------

/** Polls VmHWM (peak resident set) and VmRSS of a process until it exits. */
export class RssSampler {
  peakKb = 0;
  private timer: NodeJS.Timeout;
  constructor(private readonly pid: number, intervalMs = 100) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }
  sample(): void {
    let text: string;
    try {
      text = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    } catch {
      return; // gone
    }
    for (const name of ['VmHWM', 'VmRSS']) {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
      if (m) this.peakKb = Math.max(this.peakKb, Number(m[1]));
    }
  }
  stop(): void {
    clearInterval(this.timer);
  }
  get peakMb(): number {
    return Math.round(this.peakKb / 1024);
  }
}

export interface Daemon {
  proc: CliProcess;
  rss: RssSampler;
  output(): string;
  /** Resolves once the process exited (RSS sampling stopped). */
  exited: Promise<CliResult>;
  kill(signal: NodeJS.Signals): void;
  get alive(): boolean;
}

// ---------------------------------------------------------------------------
// The per-scenario context
// ---------------------------------------------------------------------------

export class FaultContext {
  readonly root: string;
  /** Every stdout/stderr byte of every CLI run of the scenario (for secret scans). */
  outputs: string[] = [];
  peakRssKb = 0;
  private readonly cleanups: Array<() => unknown> = [];
  private readonly daemons = new Set<Daemon>();

  constructor(
    readonly name: string,
    parent: string,
    readonly features: Features,
    readonly log: (msg: string) => void,
  ) {
    this.root = mkdtempSync(join(parent, `${name}-`));
  }

  dir(name: string): string {
    const d = join(this.root, name);
    mkdirSync(d, { recursive: true });
    return d;
  }

  defer(fn: () => unknown): void {
    this.cleanups.push(fn);
  }

  get peakRssMb(): number {
    return Math.round(this.peakRssKb / 1024);
  }

  /** The built CLI as a child process, its RSS sampled. */
  start(args: string[], env: Record<string, string> = {}): Daemon {
    const proc = startCli(args, { env: { LOG_LEVEL: 'info', ...env } });
    const rss = new RssSampler(proc.child.pid!);
    const outputIndex = this.outputs.push('') - 1;
    const exited = proc.exited.then((r) => {
      rss.stop();
      this.peakRssKb = Math.max(this.peakRssKb, rss.peakKb);
      this.outputs[outputIndex] = r.stdout + r.stderr;
      writeFileSync(join(this.root, `cli-${outputIndex + 1}.log`), `${args.join(' ')}\nexit ${r.code} ${r.signal ?? ''}\n${r.stdout}${r.stderr}`);
      this.daemons.delete(d);
      return r;
    });
    const d: Daemon = {
      proc,
      rss,
      output: () => proc.stdout() + proc.stderr(),
      exited,
      kill: (signal) => {
        if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
      },
      get alive() {
        return proc.child.exitCode === null && proc.child.signalCode === null;
      },
    };
    this.daemons.add(d);
    return d;
  }

  /** Run the CLI to its end (killed after `timeoutMs`). */
  async run(args: string[], env: Record<string, string> = {}, timeoutMs = 600_000): Promise<CliResult & { timedOut: boolean }> {
    const d = this.start(args, env);
    let timedOut = false;
    const t = setTimeout(() => {
      timedOut = true;
      d.kill('SIGKILL');
    }, timeoutMs);
    const r = await d.exited;
    clearTimeout(t);
    return { ...r, timedOut };
  }

  /** SIGTERM, then SIGKILL if it has not exited within `ms`. */
  async stop(d: Daemon, ms = 30_000): Promise<CliResult> {
    d.kill('SIGTERM');
    const t = setTimeout(() => d.kill('SIGKILL'), ms);
    const r = await d.exited;
    clearTimeout(t);
    return r;
  }

  /** A config file (JSON, which is YAML). Daemon-mode runs get no HTTP endpoints unless `server` is given. */
  writeConfig(dir: string, doc: { stateDir?: string; pipeline?: Record<string, unknown>; server?: Record<string, unknown> | false; tenants: unknown[] }): string {
    const file = join(dir, 'config.yaml');
    const out: Record<string, unknown> = { state: { dir: doc.stateDir ?? join(dir, 'state') } };
    if (doc.pipeline) out.pipeline = doc.pipeline;
    if (this.features.server) out.server = doc.server === undefined || doc.server === false ? { enabled: false } : doc.server;
    out.tenants = doc.tenants;
    writeFileSync(file, JSON.stringify(out, null, 2));
    return file;
  }

  allOutput(): string {
    return [...this.outputs, ...[...this.daemons].map((d) => d.output())].join('\n');
  }

  async cleanup(keep: boolean): Promise<void> {
    for (const d of [...this.daemons]) {
      d.kill('SIGKILL');
      await d.exited.catch(() => undefined);
    }
    for (const fn of this.cleanups.reverse()) {
      try {
        await fn();
      } catch {
        /* best effort */
      }
    }
    if (!keep) rmSync(this.root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// Dead letters and judgement
// ---------------------------------------------------------------------------

export interface DeadLetterEntry {
  kind: 'line' | 'batch' | 'torn';
  object?: string;
  line?: number;
  reason?: string;
  raw?: string;
  [k: string]: unknown;
}

/** Every dead letter of a tenant (`<state>/<tenant>/dead-letter/*.ndjson`); unparseable lines come back as `torn`. */
export function readDeadLetters(stateDir: string, tenant: string): DeadLetterEntry[] {
  const dir = join(stateDir, tenant, 'dead-letter');
  if (!existsSync(dir)) return [];
  const out: DeadLetterEntry[] = [];
  for (const f of readdirSync(dir).sort()) {
    if (!f.endsWith('.ndjson')) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        out.push(JSON.parse(line) as DeadLetterEntry);
      } catch {
        out.push({ kind: 'torn', raw: line.slice(0, 200) });
      }
    }
  }
  return out;
}

/**
 * A tenant's saved checkpoint state (checkpoints.json with its journal) as text, without when it
 * was saved and the journal's generation: what the progress is. '' before the first save.
 */
export function savedCheckpoint(stateDir: string, tenant: string): string {
  const dir = join(stateDir, tenant);
  if (!existsSync(join(dir, 'checkpoints.json'))) return '';
  const { savedAt: _at, journal: _journal, ...progress } = readCheckpointState(dir);
  return JSON.stringify(progress);
}

export function seqOf(r: ReceivedLogRecord): number | undefined {
  const v = r.attributes['tableau.test_seq'];
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;
}

export function seqCounts(records: ReceivedLogRecord[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const r of records) {
    const s = seqOf(r);
    if (s !== undefined) m.set(s, (m.get(s) ?? 0) + 1);
  }
  return m;
}

export interface BadExpectation {
  /** What it is, for the notes. */
  label: string;
  /** The object's key ends with this. */
  object: string;
  /** Its line (for a rest-of-object dead letter: the first line not read). */
  line: number;
  reason: RegExp;
}

export interface Expectation {
  /** Sequences that must arrive. */
  valid: Iterable<number>;
  /** Sequences carried by bad lines: they must not arrive. */
  badSeqs?: Iterable<number>;
  bad?: BadExpectation[];
  /** Lines (valid + bad) the scenario put in. */
  eventsIn?: number;
  /** Most duplicates acceptable (0 where nothing crashed or was cut). */
  dupBound: number;
  rssLimitMb: number;
}

export interface Judgement {
  delivered: number;
  duplicates: number;
  deadLettered: number;
  failures: string[];
}

/** Compare what arrived and what was dead-lettered with what should have. */
export function judge(received: ReceivedLogRecord[], letters: DeadLetterEntry[], exp: Expectation, peakRssMb: number): Judgement {
  const counts = seqCounts(received);
  const valid = new Set(exp.valid);
  const failures: string[] = [];
  let delivered = 0;
  let duplicates = 0;
  const missing: number[] = [];
  for (const s of valid) {
    const n = counts.get(s) ?? 0;
    if (n > 0) delivered++;
    else missing.push(s);
  }
  for (const [s, n] of counts) {
    if (n > 1) duplicates += n - 1;
    if (!valid.has(s)) failures.push(`sequence ${s} arrived but was not a valid record of the scenario`);
  }
  if (missing.length > 0) failures.push(`${missing.length} valid records never arrived (e.g. seq ${missing.slice(0, 5).join(', ')})`);
  for (const s of exp.badSeqs ?? []) if (counts.has(s)) failures.push(`bad line with seq ${s} was delivered instead of dead-lettered`);
  if (duplicates > exp.dupBound) failures.push(`${duplicates} duplicates > bound ${exp.dupBound}`);
  const lineLetters = letters.filter((l) => l.kind === 'line');
  for (const b of exp.bad ?? []) {
    const hit = lineLetters.find((l) => typeof l.object === 'string' && l.object.endsWith(b.object) && l.line === b.line);
    if (!hit) failures.push(`${b.label}: no dead letter for ${b.object}:${b.line}`);
    else if (!b.reason.test(hit.reason ?? '')) failures.push(`${b.label}: dead-lettered with reason "${String(hit.reason).slice(0, 100)}", expected ${b.reason}`);
  }
  const torn = letters.filter((l) => l.kind === 'torn').length;
  if (torn > 0) failures.push(`${torn} dead-letter lines are not valid JSON (torn writes)`);
  const expectedLetters = new Set((exp.bad ?? []).map((b) => `${b.object}:${b.line}`));
  const unexpected = lineLetters.filter((l) => ![...expectedLetters].some((k) => typeof l.object === 'string' && `${l.object}:${l.line}`.endsWith(k)));
  if (unexpected.length > 0) failures.push(`${unexpected.length} unexpected dead letters (e.g. ${unexpected[0]!.object}:${unexpected[0]!.line} ${String(unexpected[0]!.reason).slice(0, 80)})`);
  if (peakRssMb > exp.rssLimitMb) failures.push(`peak RSS ${peakRssMb} MB > ${exp.rssLimitMb} MB`);
  return { delivered, duplicates, deadLettered: lineLetters.length, failures };
}

export function resultOf(j: Judgement, eventsIn: number, peakRssMb: number, extraFailures: string[], notes: string[]): ScenarioResult {
  const failures = [...j.failures, ...extraFailures];
  return {
    eventsIn,
    delivered: j.delivered,
    duplicates: j.duplicates,
    deadLettered: j.deadLettered,
    peakRssMb,
    outcome: failures.length === 0 ? 'pass' : 'FAIL',
    notes: [...failures.map((f) => `FAIL: ${f}`), ...notes].join('; '),
  };
}

export function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'tao-faults-'));
}

/** Lines of the CLI's JSON log output with this `msg` (or matching it). */
export function logLines(output: string, msg: string | RegExp): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    let j: Record<string, unknown>;
    try {
      j = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const m = String(j.msg ?? '');
    if (typeof msg === 'string' ? m === msg : msg.test(m)) out.push(j);
  }
  return out;
}
