/**
 * `replay`: send a tenant's dead letters again, through the same mapping, overrides, encoding and
 * delivery as `run`, under the same `log.record.uid` as the first attempt.
 *
 * - A line letter (`kind: line`) goes to every destination of the tenant; a batch letter
 *   (`kind: batch`, rejected by one destination) only to the destination that rejected it.
 *   `--destination NAME` sends to NAME only: line letters, batch letters NAME rejected, and batch
 *   letters of a destination no longer in the configuration (re-routed to NAME).
 * - Each record is rebuilt as the segment the source runner made of it (object key → keyInfo,
 *   the object's uid prefix, its line number, its text), so `log.record.uid` is
 *   `<uidPrefix>:<line>` as before (or the record's `eventId`).
 * - What a destination accepted is appended to `dead-letter/replayed.ndjson` (fsync) before the
 *   next send: a second replay sends nothing twice. What fails again (still unmappable, rejected
 *   again, unreachable) is reported and stays for the next replay; the exit code is then 1.
 * - `--dry-run` maps everything (so it also says what would fail again) and sends nothing.
 *
 * Letters written before they carried the uid prefix (`uidPrefix`, `records`): the prefix is
 * derived as the `directory` source of those versions did (from the object's key; today's derives
 * it from the file's identity, and writes it into every letter) when every source of the tenant
 * is a directory; otherwise such a letter is refused, naming its file and line.
 */
import { basename, join, resolve } from 'node:path';
import type { LoadedConfig, TenantConfig } from './config.js';
import type { Logger } from './logger.js';
import { loadCatalog, type Catalog } from '../mapping/catalog.js';
import { loadTenantOverrides, processorTenant } from './tenant-runtime.js';
import type { TenantOverrides } from '../mapping/tenant-overrides.js';
import { createDestination, loadDestinationTypes } from '../export/destination-registry.js';
import type { Destination } from '../export/destination.js';
import { encodingKey, type EncodingSpec } from '../export/encodings.js';
import { deliver, type RetryPolicy } from '../export/delivery.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import { uidPrefixFor } from '../sources/source.js';
import { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import { startEnrichmentFor } from './enrichment-refresher.js';
import type { ChunkSegment } from '../pipeline/chunk-processor.js';
import { deadLetterFiles, keyInfoOfLetter, readDeadLetterFile, ReplayRecordStore, type BadLineLetter, type RejectedBatchLetter, type StoredLetter } from '../pipeline/dead-letter-store.js';
import { reasonLabel } from '../pipeline/source-runner.js';
import { pipelineSettings } from './daemon.js';
import { connectorScope } from './version.js';
import { registerSecrets, scrubSecrets, secretsOfDocument, secretsOfEnvironment } from '../core/redaction.js';
import { parseDuration } from '../core/duration.js';

export interface ReplayOptions {
  tenant?: string;
  /** Only letters whose reason contains this (case-insensitive), or matches `/regex/flags`. */
  reason?: string;
  /** Only letters written at or after this time (ISO 8601, or a duration ago: `2h`). */
  since?: string;
  /** Only letters written before this time. */
  until?: string;
  destination?: string;
  dryRun: boolean;
  /** How long one request is retried before its destination counts as unreachable (default: `pipeline.retryFor`, else 5 minutes). */
  retryForMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Stops between sends (SIGINT/SIGTERM): what was acknowledged is recorded. */
  signal?: AbortSignal;
  now?: number;
}

export const EXIT_REPLAY_OK = 0;
export const EXIT_REPLAY_FAILED = 1;
export const EXIT_REPLAY_USAGE = 2;

/** A problem with the command line or the configuration: exit 2, nothing read or sent. */
export class ReplayUsageError extends Error {
  override name = 'ReplayUsageError';
}

/** The line of a letter kept only in part (see chunk-processor.ts MAX_RAW_IN_DEAD_LETTER). */
const MAX_RAW_IN_DEAD_LETTER = 1 << 20;
/** Failures listed one by one, per tenant; the rest are counted. */
const MAX_LISTED_FAILURES = 50;

/** What the report groups letters by: a batch letter's HTTP status, else the reason's opening words without values (as the metrics label it). */
function groupLabel(letter: { kind: string; reason?: unknown; status?: unknown }): string {
  if (letter.kind === 'batch' && typeof letter.status === 'number') return `HTTP ${letter.status}`;
  const reason = typeof letter.reason === 'string' ? letter.reason : '';
  return reasonLabel(reason) || reason.slice(0, 48);
}

interface Filters {
  reason?: (reason: string) => boolean;
  since?: number;
  until?: number;
}

/** `--reason`: `/regex/flags`, else a case-insensitive substring. */
export function reasonMatcher(value: string): (reason: string) => boolean {
  const m = /^\/(.*)\/([a-z]*)$/s.exec(value);
  if (m) {
    let re: RegExp;
    try {
      re = new RegExp(m[1]!, m[2]);
    } catch (err) {
      throw new ReplayUsageError(`--reason: not a regular expression: ${(err as Error).message}`);
    }
    return (reason) => re.test(reason);
  }
  const needle = value.toLowerCase();
  return (reason) => reason.toLowerCase().includes(needle);
}

/** `--since`/`--until`: ISO 8601 (`2026-12-01`, `2026-12-01T10:00:00Z`) or a duration ago (`90m`, `2h`, `1d`). */
export function parseTimeFlag(flag: string, value: string, now: number): number {
  const ago = parseDuration(value);
  if (ago !== undefined) return now - ago;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new ReplayUsageError(`${flag}: not a time: ${value} (use e.g. 2026-12-01T10:00:00Z, 2026-12-01 or 2h for two hours ago)`);
  return t;
}

// ---------------------------------------------------------------------------------------------
// The report

interface Row {
  kind: string;
  reason: string;
  destination: string;
  records: number;
  already: number;
  sent: number;
  skipped: number;
  failed: number;
}

interface Failure {
  /** `<dead-letter file>:<line>` */
  where: string;
  /** `<object>:<line>` of the record, when it is one record */
  record?: string;
  destination?: string;
  reason: string;
  /** How many records it is about (1 when absent). */
  records?: number;
}

class TenantReport {
  readonly rows = new Map<string, Row>();
  readonly failures: Failure[] = [];
  failedCount = 0;
  letters = { line: 0, batch: 0, other: 0 };
  alreadyLetters = 0;
  dropped = 0;

  constructor(readonly tenant: string) {}

  /** `label`: what letters are grouped by (groupLabel). */
  row(kind: string, label: string, destination: string): Row {
    const key = `${kind}\n${label}\n${destination}`;
    let r = this.rows.get(key);
    if (!r) {
      r = { kind, reason: label, destination, records: 0, already: 0, sent: 0, skipped: 0, failed: 0 };
      this.rows.set(key, r);
    }
    return r;
  }

  fail(f: Failure): void {
    this.failedCount += f.records ?? 1;
    if (this.failures.length < MAX_LISTED_FAILURES) this.failures.push({ ...f, reason: scrubSecrets(f.reason) });
  }

  format(dryRun: boolean): string {
    const out: string[] = [];
    const total = this.letters.line + this.letters.batch + this.letters.other;
    out.push(
      `tenant ${this.tenant}${dryRun ? ' (dry run: nothing is sent)' : ''}: ${total} dead letters selected (${this.letters.line} line, ${this.letters.batch} batch${this.letters.other ? `, ${this.letters.other} unreadable` : ''}), ${this.alreadyLetters} of them replayed before`,
    );
    const rows = [...this.rows.values()].sort((a, b) => a.kind.localeCompare(b.kind) || a.reason.localeCompare(b.reason) || a.destination.localeCompare(b.destination));
    if (rows.length > 0) {
      const head = ['kind', 'reason', 'destination', 'records', 'replayed before', dryRun ? 'would send' : 'sent', 'skipped', dryRun ? 'would fail' : 'failed'];
      const cells = rows.map((r) => [r.kind, r.reason, r.destination, String(r.records), String(r.already), String(r.sent), String(r.skipped), String(r.failed)]);
      const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
      const line = (c: string[]): string => '  ' + c.map((v, i) => (i >= 3 ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
      out.push(line(head));
      for (const c of cells) out.push(line(c));
    }
    if (rows.some((r) => r.skipped > 0)) out.push('  skipped: lines of a rejected batch (old letter format) that do not map: they were not in the rejected request; each has a line letter of its own');
    if (this.dropped > 0) out.push(`  ${this.dropped} of the records are dropped by the tenant's overrides (settled, not sent)`);
    if (this.failedCount > 0) {
      out.push(`  ${dryRun ? 'would fail' : 'failed (they stay for the next replay)'}:`);
      for (const f of this.failures) {
        const n = f.records !== undefined && f.records !== 1 ? `${f.records} records` : f.record;
        out.push(`    ${f.where}${n ? ` (${n})` : ''}${f.destination ? ` → ${f.destination}` : ''}: ${f.reason}`);
      }
      const listed = this.failures.reduce((a, f) => a + (f.records ?? 1), 0);
      if (this.failedCount > listed) out.push(`    … and ${this.failedCount - listed} more records`);
    }
    return scrubSecrets(out.join('\n'));
  }
}

// ---------------------------------------------------------------------------------------------
// Records to send

/** One record of a letter, as the source runner had it. */
interface Item {
  letter: StoredLetter;
  kind: 'line' | 'batch';
  /** The report's group (groupLabel). */
  label: string;
  /** Index of the record within its letter (what replayed.ndjson records). */
  index: number;
  object: string;
  uidPrefix: string;
  line: number;
  raw: string;
  /** What the source knew of the object (dead-letter `info`). */
  info?: Partial<ObjectKeyInfo>;
  /** A line of an old-format batch letter (all of the batch's lines, not only those at fault). */
  wholeBatchLine: boolean;
  targets: string[];
}

interface Group {
  targets: string[];
  items: Item[];
  bytes: number;
}

interface Target {
  destination: Destination;
  /** Set once it stayed unreachable (nothing more is tried on it). */
  down?: string;
}

type Records = Array<{ object: string; uidPrefix: string; line: number; raw: string; wholeBatchLine: boolean; info?: Partial<ObjectKeyInfo> }>;

/** Why a line letter cannot be sent again from what it holds, if it cannot. */
function unreplayableLine(letter: BadLineLetter): string | undefined {
  if (typeof letter.raw !== 'string' || letter.raw === '') {
    return /^object unreadable/.test(letter.reason)
      ? 'the rest of the object could not be read, so the letter holds no line to send: read the object again from its source (docs/operations.md: Re-reading a time range)'
      : 'the letter holds no line to send';
  }
  if (/exceeds maxLineBytes/.test(letter.reason)) return 'the letter keeps only the start of the line (longer than maxLineBytes): raise maxLineBytes and read the object again';
  if (/^invalid UTF-8/.test(letter.reason)) return "the letter shows U+FFFD for the bad bytes, not the line's own bytes: fix the object and read it again";
  if (letter.raw.length >= MAX_RAW_IN_DEAD_LETTER) return 'the letter keeps only the first 1 MiB of the line: read the object again';
  return undefined;
}

/** The uid prefix a source gave an object, for letters written before they carried it. */
function derivedUidPrefix(tenant: TenantConfig, object: string): string | undefined {
  // the versions that wrote such letters gave a directory object the identity `directory\n<key>`
  // whatever its root (today's derive it from the file's identity and write it into the letter)
  if (tenant.sources.every((s) => s.type === 'directory')) return uidPrefixFor(`directory\n${object}`);
  return undefined;
}

function noPrefix(tenant: TenantConfig): string {
  const types = [...new Set(tenant.sources.map((s) => s.type))].join(', ');
  return `written before dead letters carried the object's uid prefix; for a ${types} source it cannot be rebuilt, so the records would not keep their log.record.uid: read the objects again from the source instead (docs/operations.md: Re-reading a time range)`;
}

function recordsOf(letter: BadLineLetter | RejectedBatchLetter, tenant: TenantConfig): Records | string {
  if (letter.kind === 'line') {
    const why = unreplayableLine(letter);
    if (why) return why;
    if (typeof letter.object !== 'string' || typeof letter.line !== 'number') return 'a line letter without object or line';
    const uidPrefix = typeof letter.uidPrefix === 'string' && letter.uidPrefix !== '' ? letter.uidPrefix : derivedUidPrefix(tenant, letter.object);
    if (!uidPrefix) return noPrefix(tenant);
    return [{ object: letter.object, uidPrefix, line: letter.line, raw: letter.raw, wholeBatchLine: false, ...(letter.info ? { info: letter.info } : {}) }];
  }
  if (Array.isArray(letter.records)) {
    const out: Records = [];
    for (const r of letter.records) {
      if (!r || typeof r.object !== 'string' || typeof r.uidPrefix !== 'string' || typeof r.line !== 'number' || typeof r.raw !== 'string') return 'a record of the letter lacks object, uidPrefix, line or raw';
      out.push({ object: r.object, uidPrefix: r.uidPrefix, line: r.line, raw: r.raw, wholeBatchLine: false, ...(r.info ? { info: r.info } : {}) });
    }
    return out;
  }
  // the old format: every line of the batch (blank ones left out), and the line ranges of its objects
  if (!Array.isArray(letter.objects) || !Array.isArray(letter.lines)) return 'a batch letter without records, or objects and lines';
  const expected = letter.objects.reduce((n, o) => n + (o.lastLine - o.firstLine + 1), 0);
  if (expected !== letter.lines.length) {
    return `written before batch letters carried their records: its ${letter.lines.length} lines cannot be matched to the ${expected} line numbers of its objects (blank lines were left out), so the records would not keep their log.record.uid`;
  }
  const out: Records = [];
  let at = 0;
  for (const o of letter.objects) {
    const uidPrefix = derivedUidPrefix(tenant, o.object);
    if (!uidPrefix) return noPrefix(tenant);
    for (let line = o.firstLine; line <= o.lastLine; line++) out.push({ object: o.object, uidPrefix, line, raw: letter.lines[at++]!, wholeBatchLine: true });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

export async function replayCommand(loaded: LoadedConfig, options: ReplayOptions, out: (text: string) => void, log: Logger): Promise<number> {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now();
  const { config, baseDir } = loaded;
  registerSecrets(secretsOfEnvironment(env));
  registerSecrets(secretsOfDocument(config, env, baseDir));

  const filters: Filters = {};
  if (options.reason !== undefined) filters.reason = reasonMatcher(options.reason);
  if (options.since !== undefined) filters.since = parseTimeFlag('--since', options.since, now);
  if (options.until !== undefined) filters.until = parseTimeFlag('--until', options.until, now);
  const tenants = options.tenant === undefined ? config.tenants : config.tenants.filter((t) => t.id === options.tenant);
  if (tenants.length === 0) throw new ReplayUsageError(`--tenant: no tenant '${options.tenant}' in ${loaded.file} (tenants: ${config.tenants.map((t) => t.id).join(', ')})`);

  const catalog = loadCatalog(config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined);
  const overridesOf = new Map<string, TenantOverrides | undefined>();
  for (const t of tenants) {
    const overrides = loadTenantOverrides(t, baseDir, catalog); // a clear error with file and line
    if (overrides) registerSecrets(secretsOfDocument(overrides, env, baseDir));
    overridesOf.set(t.id, overrides);
  }
  const settings = pipelineSettings(loaded, true);
  if (options.retryForMs !== undefined) settings.retry = { ...settings.retry, maxElapsedMs: options.retryForMs };
  const scope = connectorScope();
  const stateDir = resolve(baseDir, config.state.dir);
  let failed = false;
  for (const tenant of tenants) {
    const report = await replayTenant(tenant, { loaded, catalog, overrides: overridesOf.get(tenant.id), stateDir, settings, scope, filters, options, log, env });
    out(report.format(options.dryRun) + '\n');
    if (report.failedCount > 0) failed = true;
    if (options.signal?.aborted) {
      out('interrupted: what the destinations acknowledged is recorded; run replay again for the rest\n');
      return EXIT_REPLAY_FAILED;
    }
  }
  return failed ? EXIT_REPLAY_FAILED : EXIT_REPLAY_OK;
}

interface TenantJob {
  loaded: LoadedConfig;
  catalog: Catalog;
  /** The tenant's overrides, as read and checked before any tenant was replayed. */
  overrides: TenantOverrides | undefined;
  stateDir: string;
  settings: ReturnType<typeof pipelineSettings>;
  scope: ReturnType<typeof connectorScope>;
  filters: Filters;
  options: ReplayOptions;
  log: Logger;
  env: NodeJS.ProcessEnv;
}

async function replayTenant(tenant: TenantConfig, job: TenantJob): Promise<TenantReport> {
  const { options, settings, filters } = job;
  const report = new TenantReport(tenant.id);
  const targets = new Map<string, Target>();
  await loadDestinationTypes(tenant.destinations);
  for (const cfg of tenant.destinations) {
    const d = createDestination(cfg, { baseDir: job.loaded.baseDir, scope: job.scope, env: job.env, tenantId: tenant.id, log: job.log });
    targets.set(d.name, { destination: d });
  }
  const names = [...targets.keys()];
  if (options.destination !== undefined && !targets.has(options.destination)) {
    await Promise.all([...targets.values()].map((t) => t.destination.shutdown().catch(() => undefined)));
    throw new ReplayUsageError(`--destination: tenant ${tenant.id} has no destination '${options.destination}' (its destinations: ${names.join(', ')})`);
  }
  // the same processor `run` uses (in this thread: a replay is small), with the tenant's overrides
  const pool = new EncodeWorkerPool(0, { catalog: job.catalog, scope: job.scope, tenants: [processorTenant(tenant, job.overrides)] });
  const dir = join(job.stateDir, tenant.id, 'dead-letter');
  const replayed = new ReplayRecordStore(dir);
  replayed.load();
  const signal = options.signal ?? new AbortController().signal;
  const groups = new Map<string, Group>();
  /** `<destination>\n<uidPrefix>:<line>` of the records taken on in this run: a record is sent once per run. */
  const queued = new Set<string>();

  // the tenant's users and sites (enrichment), loaded once the first records are to be sent
  let enrichment: ReturnType<typeof startEnrichmentFor> | undefined;
  const flush = async (key: string): Promise<void> => {
    const g = groups.get(key);
    if (!g || g.items.length === 0) return;
    groups.delete(key);
    if (!options.dryRun) await (enrichment ??= startEnrichmentFor(tenant, { baseDir: job.loaded.baseDir, env: job.env, log: job.log }, pool, signal));
    await sendGroup(g, { tenant, pool, targets, replayed, report, settings, signal, dryRun: options.dryRun, log: job.log });
  };

  /** Where a letter goes; undefined: not selected (it belongs to another destination than --destination). */
  const targetsOf = (letter: BadLineLetter | RejectedBatchLetter): string[] | string | undefined => {
    if (letter.kind === 'line') return options.destination !== undefined ? [options.destination] : names;
    const own = letter.destination;
    if (options.destination !== undefined) {
      if (own === options.destination || !targets.has(own)) return [options.destination];
      return undefined;
    }
    if (targets.has(own)) return [own];
    return `rejected by destination '${own}', which is not in the tenant's configuration any more: give --destination NAME to send it to another`;
  };

  try {
    for (const { file, day } of deadLetterFiles(dir)) {
      // a file holds the letters of one UTC day: skip whole days outside the window
      const dayStart = Date.parse(`${day}T00:00:00Z`);
      if (filters.since !== undefined && dayStart + 86_400_000 <= filters.since) continue;
      if (filters.until !== undefined && dayStart >= filters.until) continue;
      for await (const stored of readDeadLetterFile(file)) {
        if (signal.aborted) break;
        const where = `${file}:${stored.line}`;
        const letter = stored.letter;
        if (!letter) {
          if (filters.reason || filters.since !== undefined || filters.until !== undefined) continue; // nothing to filter on
          report.letters.other++;
          report.row('?', 'not a dead letter', '-').records++;
          report.row('?', 'not a dead letter', '-').failed++;
          report.fail({ where, reason: stored.error ?? 'not a dead letter' });
          continue;
        }
        const reason = typeof letter.reason === 'string' ? letter.reason : '';
        if (filters.reason && !filters.reason(reason)) continue;
        const label = groupLabel(letter);
        if (filters.since !== undefined || filters.until !== undefined) {
          const t = typeof letter.time === 'string' ? Date.parse(letter.time) : NaN;
          if (Number.isNaN(t)) continue;
          if (filters.since !== undefined && t < filters.since) continue;
          if (filters.until !== undefined && t >= filters.until) continue;
        }
        const to = targetsOf(letter);
        if (to === undefined) continue;
        report.letters[letter.kind]++;
        const records = typeof to === 'string' ? to : recordsOf(letter, tenant);
        if (typeof records === 'string') {
          const dest = typeof to === 'string' ? (letter as RejectedBatchLetter).destination : to.join(', ');
          const n = letter.kind === 'line' ? 1 : Array.isArray(letter.records) ? letter.records.length : Array.isArray(letter.lines) ? letter.lines.length : 1;
          const row = report.row(letter.kind, label, dest);
          row.records += n;
          row.failed += n;
          report.fail({ where, records: n, ...(letter.kind === 'line' && typeof letter.object === 'string' ? { record: `${letter.object}:${letter.line}` } : {}), reason: records });
          continue;
        }
        let pending = 0;
        for (let index = 0; index < records.length; index++) {
          const r = records[index]!;
          const left: string[] = [];
          for (const d of to) {
            const row = report.row(letter.kind, label, d);
            row.records++;
            const identity = `${d}\n${r.uidPrefix}:${r.line}`;
            // replayed before, from this letter or another holding the same record (a crash re-read its object), or queued in this run
            if (replayed.isDone(stored.id, d, index) || replayed.hasRecord(d, `${r.uidPrefix}:${r.line}`) || queued.has(identity)) row.already++;
            else {
              left.push(d);
              queued.add(identity);
            }
          }
          if (left.length === 0) continue;
          pending++;
          const key = left.join('\u0000');
          let g = groups.get(key);
          if (!g) {
            g = { targets: left, items: [], bytes: 0 };
            groups.set(key, g);
          }
          g.items.push({ letter: { file: stored.file, line: stored.line, id: stored.id }, kind: letter.kind, label, index, ...r, targets: left });
          g.bytes += r.raw.length;
          // a batch as `run` makes them: at most batchSize records, about maxBatchBytes
          if (g.items.length >= settings.batchSize || g.bytes >= settings.maxBatchBytes) await flush(key);
        }
        if (pending === 0) report.alreadyLetters++;
      }
      if (signal.aborted) break;
    }
    for (const key of [...groups.keys()]) {
      if (signal.aborted) break;
      await flush(key);
    }
  } finally {
    replayed.close();
    await (await enrichment?.catch(() => undefined))?.stop();
    await pool.close();
    await Promise.all([...targets.values()].map((t) => t.destination.shutdown().catch(() => undefined)));
  }
  return report;
}

interface SendContext {
  tenant: TenantConfig;
  pool: EncodeWorkerPool;
  targets: Map<string, Target>;
  replayed: ReplayRecordStore;
  report: TenantReport;
  settings: { retry: RetryPolicy };
  signal: AbortSignal;
  dryRun: boolean;
  log: Logger;
}

/** Map, encode and deliver one group of records (all going to the same destinations), then record what was accepted. */
async function sendGroup(g: Group, ctx: SendContext): Promise<void> {
  const { report, targets, signal } = ctx;
  const where = (it: Item): string => `${it.letter.file}:${it.letter.line}`;
  const record = (it: Item): string => `${it.object}:${it.line}`;
  const encodings: EncodingSpec[] = [];
  const encodingOf = new Map<string, number>();
  for (const name of g.targets) {
    const spec = targets.get(name)!.destination.encoding;
    const k = encodingKey(spec);
    if (!encodingOf.has(k)) encodingOf.set(k, encodings.push(spec) - 1);
  }
  const segments: ChunkSegment[] = g.items.map((it) => ({ keyInfo: keyInfoOfLetter(it.object, it.info), uidPrefix: it.uidPrefix, firstLine: it.line, bytes: Buffer.from(it.raw, 'utf8') }));
  const result = await ctx.pool.run({ tenant: ctx.tenant.id, segments, encodings, observedTimeUnixNano: (BigInt(Date.now()) * 1_000_000n).toString() });
  try {
    const unmapped = new Map<number, string>();
    for (const dl of result.deadLetters) unmapped.set(dl.segment, dl.reason);
    report.dropped += Object.values(result.droppedByType).reduce((a, b) => a + b, 0);
    /** Records settled whatever a destination says: mapped (sent, or dropped by the overrides), or an old batch letter's line that never was in its request. */
    const settled: Item[] = [];
    g.items.forEach((it, i) => {
      const why = unmapped.get(i);
      if (why === undefined) settled.push(it);
      else if (it.wholeBatchLine) {
        for (const d of it.targets) report.row(it.kind, it.label, d).skipped++;
      } else {
        for (const d of it.targets) report.row(it.kind, it.label, d).failed++;
        report.fail({ where: where(it), record: record(it), reason: `${ctx.dryRun ? 'would fail again' : 'fails again'}: ${why}` });
      }
    });
    const skippedLines = g.items.filter((it, i) => it.wholeBatchLine && unmapped.has(i));

    await Promise.all(
      g.targets.map(async (name) => {
        const t = targets.get(name)!;
        const sendable = settled;
        if (ctx.dryRun) {
          for (const it of sendable) report.row(it.kind, it.label, name).sent++;
          return;
        }
        const fail = (reason: string): void => {
          const byLetter = new Map<string, Item[]>();
          for (const it of sendable) {
            report.row(it.kind, it.label, name).failed++;
            let its = byLetter.get(it.letter.id);
            if (!its) byLetter.set(it.letter.id, (its = []));
            its.push(it);
          }
          for (const its of byLetter.values()) report.fail({ where: where(its[0]!), record: record(its[0]!), records: its.length, destination: name, reason });
        };
        if (t.down) return fail(`not sent: destination unreachable (${t.down})`);
        if (result.records > 0) {
          for (const payload of result.payloads[encodingOf.get(encodingKey(t.destination.encoding))!]!) {
            const r = await deliver(t.destination, payload, result.records, ctx.settings.retry, signal, {
              onRetry: (reason, delayMs, attempt) => ctx.log.warn({ tenant: ctx.tenant.id, destination: name, reason, delayMs, attempt, records: result.records }, 'replay: export failed; retrying'),
            });
            if (r.kind === 'done') continue;
            if (r.kind === 'rejected') return fail(`rejected again${r.outcome.status !== undefined ? ` (HTTP ${r.outcome.status})` : ''}: ${r.outcome.reason}`);
            if (r.kind === 'gave-up') {
              t.down = r.lastReason;
              return fail(`not sent: destination unreachable (${r.lastReason})`);
            }
            return fail('not sent: interrupted');
          }
        }
        // acknowledged (or nothing to send: every record dropped by the overrides): recorded before the next send
        const byLetter = new Map<string, { letter: string; destination: string; items: number[]; records: string[]; file: string; line: number }>();
        const accepted = new Set(sendable);
        for (const it of [...sendable, ...skippedLines]) {
          let e = byLetter.get(it.letter.id);
          if (!e) {
            e = { letter: it.letter.id, destination: name, items: [], records: [], file: basename(it.letter.file), line: it.letter.line };
            byLetter.set(it.letter.id, e);
          }
          e.items.push(it.index);
          // (a skipped line is done for this letter only: it may be a record another letter holds)
          if (accepted.has(it)) e.records.push(`${it.uidPrefix}:${it.line}`);
        }
        try {
          ctx.replayed.record([...byLetter.values()]);
        } catch (err) {
          // delivered but not recorded: the next replay sends these again (same log.record.uid)
          return fail(`delivered, but ${ctx.replayed.file} cannot be written (${(err as Error).message}): the next replay sends them again`);
        }
        for (const it of sendable) report.row(it.kind, it.label, name).sent++;
      }),
    );
  } finally {
    result.release?.();
  }
}
