/**
 * Enrichment benchmark: `npm run bench:enrichment` (builds first, then runs this file).
 *
 *   npm run bench:enrichment -- [--users 200000] [--sites 5000] [--records 60000] [--reps 5]
 *                               [--workers 1,4] [--json FILE]
 *
 * 1. Memory. For each worker count, in a child process of its own (node --expose-gc): an encode
 *    pool is started and its workers warmed with tasks, RSS measured (after GC); then a tenant's
 *    reference data of `--users` users (each on 1 to 3 sites) and `--sites` sites is generated
 *    and published (built into one SharedArrayBuffer), the caller's copy dropped, RSS measured;
 *    every worker runs tasks that look users up, RSS measured; the data is withdrawn, RSS
 *    measured. Reported: the table's bytes, its build time, and the RSS of the whole process
 *    (main thread and workers) at each step.
 * 2. Hot path. The same records (vizql_http_request-like, ~1 KB, actors drawn from the users,
 *    sites from the sites) through ChunkProcessor.process in this process, enrichment off and on
 *    in alternation in the same run (`--reps` each), for OTLP protobuf (the direct writer) and
 *    Splunk HEC (the object path). Two actor mixes: uniform over all users (the per-worker cache
 *    misses most lookups: the worst case) and skewed (a few users make most of the activity).
 *    A third variant, "lookup only", has a table of the same users with nothing but their ids
 *    (every lookup finds its user, nothing is added): the lookup's own cost, without the cost of
 *    encoding the attributes it adds. Reported: the CPU time of the fastest pass of each (CPU
 *    time rather than wall time: on a shared machine it is far less disturbed by the others;
 *    this thread's where Node tells it, each pass from a collected heap: see pass()), and the
 *    cost of enrichment in % of the pass.
 *
 * Everything stays in this machine (no network). Progress goes to stderr, the table to stdout.
 * `npm run bench:enrichment` compiles this file with esbuild (dist/bench/) and runs it with plain
 * node: under tsx, the code measured (dist/) would be tsx's transform of it, slower and not what
 * the daemon runs.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

/** The repository (this file is in scripts/bench/, or compiled into dist/bench/). */
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

import type { ReferenceData, UserReference, SiteReference } from '../../src/mapping/reference-data.js';
import type { ChunkTask, ProcessorInit } from '../../src/pipeline/chunk-processor.js';
import type { EncodingSpec } from '../../src/export/encodings.js';
import { Rng } from './rng.js';

const DIST = path.join(REPO_ROOT, 'dist');
const { ChunkProcessor } = (await import(path.join(DIST, 'pipeline', 'chunk-processor.js'))) as typeof import('../../src/pipeline/chunk-processor.js');
const { EncodeWorkerPool } = (await import(path.join(DIST, 'pipeline', 'worker-pool.js'))) as typeof import('../../src/pipeline/worker-pool.js');
const { buildReferenceTable } = (await import(path.join(DIST, 'mapping', 'reference-table-builder.js'))) as typeof import('../../src/mapping/reference-table-builder.js');
const { loadCatalog } = (await import(path.join(DIST, 'mapping', 'catalog.js'))) as typeof import('../../src/mapping/catalog.js');

const { values: flags } = parseArgs({
  options: {
    users: { type: 'string', default: '200000' },
    sites: { type: 'string', default: '5000' },
    records: { type: 'string', default: '30000' },
    reps: { type: 'string', default: '15' },
    workers: { type: 'string', default: '1,4' },
    json: { type: 'string' },
    'memory-child': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help) {
  process.stdout.write('npm run bench:enrichment -- [--users N] [--sites N] [--records N] [--reps N] [--workers 1,4] [--json FILE]\n');
  process.exit(0);
}
const USERS = Number(flags.users);
const SITES = Number(flags.sites);
const RECORDS = Number(flags.records);
const REPS = Number(flags.reps);
const progress = (msg: string): void => void process.stderr.write(`[enrichment-bench] ${msg}\n`);

// ---------------------------------------------------------------------------
// Data

const hex = (rng: Rng, n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += '0123456789abcdef'[rng.int(0, 15)];
  return s;
};
const uuid = (rng: Rng): string => `${hex(rng, 8)}-${hex(rng, 4)}-4${hex(rng, 3)}-a${hex(rng, 3)}-${hex(rng, 12)}`;
const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Katherine', 'Margaret', 'Niklaus', 'Radia'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Backus', 'Johnson', 'Hamilton', 'Wirth', 'Perlman'];
const ROLES = ['Viewer', 'Explorer', 'ExplorerCanPublish', 'Creator', 'SiteAdministratorExplorer', 'SiteAdministratorCreator'];

/** The LUIDs of the users and sites: a function of their number (tasks can name them without the data). */
const userLuid = (i: number): string => `${(Math.imul(i + 1, 2654435761) >>> 0).toString(16).padStart(8, '0')}-5eed-4000-8000-${i.toString(16).padStart(12, '0')}`;
const siteLuid = (i: number): string => `${(Math.imul(i + 7, 2246822519) >>> 0).toString(16).padStart(8, '0')}-51e0-4000-8000-${i.toString(16).padStart(12, '0')}`;

function referenceData(): ReferenceData {
  const rng = new Rng(19);
  const sites: SiteReference[] = Array.from({ length: SITES }, (_, i) => ({ id: siteLuid(i), name: `Site ${i} ${LAST[i % LAST.length]}`, contentUrl: `site${i}` }));
  const users: UserReference[] = Array.from({ length: USERS }, (_, i) => {
    const first = FIRST[rng.int(0, FIRST.length - 1)]!;
    const last = LAST[rng.int(0, LAST.length - 1)]!;
    const siteRoles: Record<string, string> = {};
    for (let k = rng.int(1, 3); k > 0; k--) siteRoles[sites[rng.int(0, SITES - 1)]!.id] = ROLES[rng.int(0, ROLES.length - 1)]!;
    return { id: userLuid(i), name: `${first.toLowerCase()}.${last.toLowerCase()}${i}`, email: `${first.toLowerCase()}.${last.toLowerCase()}${i}@example.com`, fullName: `${first} ${last}`, siteRoles };
  });
  return { status: 'loaded', users, sites, loadedAtMs: Date.now() };
}

/**
 * `n` vizql-like lines (~1 KB) in objects of SITE_BLOCK records of one site each (as Tableau
 * writes them: one site per object); the actor drawn from all users (uniform), or 80 % of the
 * records by 1 % of the users (skewed).
 */
const SITE_BLOCK = 3000;
function lines(data: ReferenceData, n: number, skewed: boolean, seed: number): Array<{ site: string; lines: string[] }> {
  const rng = new Rng(seed);
  const hot = Math.max(1, Math.floor(data.users.length / 100));
  const objects: Array<{ site: string; lines: string[] }> = [];
  for (let i = 0; i < n; i++) {
    if (i % SITE_BLOCK === 0) objects.push({ site: data.sites[rng.int(0, data.sites.length - 1)]!.id, lines: [] });
    const object = objects[objects.length - 1]!;
    const u = data.users[skewed && rng.chance(0.8) ? rng.int(0, hot - 1) : rng.int(0, data.users.length - 1)]!;
    object.lines.push(JSON.stringify({
      eventTime: `2026-11-29T10:${String(Math.floor(i / 1000) % 60).padStart(2, '0')}:00.${String(i % 1000).padStart(3, '0')}123Z`,
      actorUserLuid: u.id,
      initiatingUserLuid: u.id,
      siteLuid: object.site,
      licensingRoleName: 'Creator',
      siteRoleId: 10,
      systemAdminLevel: 0,
      eventOutcome: 'success',
      method: 'POST',
      requestUri: `/vizql/t/site/w/Quarterly/v/Overview/bootstrapSession/sessions/${hex(rng, 32).toUpperCase()}-0:0?:iid=${rng.int(1, 9)}`,
      endpointName: 'bootstrapSession',
      duration: rng.int(4, 900),
      ipAddress: `10.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(0, 255)}`,
      userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      requestId: hex(rng, 24),
      sessionId: hex(rng, 32),
      viewLuid: uuid(rng),
      viewName: 'Overview',
      workbookLuid: uuid(rng),
      workbookName: 'Quarterly P&L',
    }));
  }
  return objects;
}

const KEY_INFO = { pod: 'prod-useast-a', eventType: 'vizql_http_request' };

/** Tasks of about 2 MB (the pipeline's batch size), a segment per object. */
function tasksOf(objects: Array<{ site: string; lines: string[] }>, encodings: EncodingSpec[], tenant: string): ChunkTask[] {
  const tasks: ChunkTask[] = [];
  let task: ChunkTask | undefined;
  let bytes = 0;
  for (const o of objects) {
    let line = 1;
    for (let at = 0; at < o.lines.length; ) {
      if (!task || bytes >= 2 << 20) {
        task = { tenant, segments: [], encodings, observedTimeUnixNano: '1' };
        tasks.push(task);
        bytes = 0;
      }
      let end = at;
      let size = 0;
      while (end < o.lines.length && bytes + size < 2 << 20) size += o.lines[end++]!.length + 1;
      task.segments.push({ keyInfo: { ...KEY_INFO, siteLuid: o.site }, uidPrefix: `bench-${o.site}`, firstLine: line, bytes: new Uint8Array(Buffer.from(o.lines.slice(at, end).join('\n'))) });
      bytes += size;
      line += end - at;
      at = end;
    }
  }
  return tasks;
}

const scope = { name: 'enrichment-bench', version: '1' };
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

// ---------------------------------------------------------------------------
// Memory (child process)

function rssMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss / 1e6;
}

async function memoryChild(workers: number): Promise<void> {
  const init: ProcessorInit = { catalog: loadCatalog(), scope, tenants: [{ id: 't' }] };
  const pool = new EncodeWorkerPool(workers, init);
  // records of users spread over the whole list (their LUIDs are a function of their number: no data needed)
  const rng = new Rng(7);
  const perWorker = 6000;
  const objects = Array.from({ length: 2 * Math.max(1, workers) }, (_, o) => ({
    site: siteLuid(o),
    lines: Array.from({ length: perWorker / 2 }, (_, i) => JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', actorUserLuid: userLuid(rng.int(0, USERS - 1)), siteLuid: siteLuid(o), seq: i })),
  }));
  const tasks = tasksOf(objects, [{ kind: 'otlp-protobuf' }], 't');
  const runAll = async (): Promise<void> => {
    for (let r = 0; r < 3; r++) for (const x of await Promise.all(tasks.map((t) => pool.run({ ...t, segments: t.segments.map((seg) => ({ ...seg, bytes: new Uint8Array(seg.bytes) })) })))) x.release?.();
  };
  const settle = async (): Promise<number> => {
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 300));
      rssMb();
    }
    return rssMb();
  };
  await runAll();
  const before = await settle();
  let data: ReferenceData | undefined = referenceData();
  const t0 = performance.now();
  pool.publishReferenceData('t', data);
  const buildMs = performance.now() - t0;
  data = undefined; // the caller's copy goes: what stays is the table
  const published = await settle();
  await runAll(); // every worker looks users up (its cache fills)
  const used = await settle();
  const tableBytes = pool.referenceBytes;
  pool.publishReferenceData('t', undefined);
  await runAll();
  const withdrawn = await settle();
  await pool.close();
  process.stdout.write(JSON.stringify({ workers, tableBytes, buildMs, rssBeforeMb: before, rssPublishedMb: published, rssAfterMb: used, rssWithdrawnMb: withdrawn, heapUsedMb: process.memoryUsage().heapUsed / 1e6 }) + '\n');
}

if (flags['memory-child'] !== undefined) {
  await memoryChild(Number(flags['memory-child']));
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Main

const report: Record<string, unknown> = { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg(), users: USERS, sites: SITES, records: RECORDS, reps: REPS };

const memory: Array<Record<string, number>> = [];
for (const w of String(flags.workers).split(',').map(Number)) {
  progress(`memory: ${w} worker(s)`);
  // (this same script, compiled: see the npm script; under tsx the code measured would be tsx's transform of it)
  const child = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv.filter((a) => a !== '--expose-gc'), process.argv[1]!, '--memory-child', String(w), '--users', String(USERS), '--sites', String(SITES)], { encoding: 'utf8', cwd: REPO_ROOT, maxBuffer: 1 << 20 });
  if (child.status !== 0) {
    process.stderr.write(child.stderr);
    throw new Error(`memory child (${w} workers) failed: exit ${child.status}`);
  }
  memory.push(JSON.parse(child.stdout.trim().split('\n').pop()!) as Record<string, number>);
}
report.memory = memory;

progress('hot path: building data and records');
const data = referenceData();
const catalog = loadCatalog();
const HEC: EncodingSpec = { kind: 'splunk-hec', sourcetype: 'tableau:activity', fields: [], cimFields: false, maxRequestBytes: 1 << 20, compression: 'none' } as EncodingSpec;
const encodingsOf: Record<string, EncodingSpec[]> = { 'otlp-protobuf (direct)': [{ kind: 'otlp-protobuf' }], 'splunk-hec (objects)': [HEC] };
const processor = new ChunkProcessor({ catalog, scope, tenants: [{ id: 'off' }, { id: 'on' }, { id: 'lookup' }] });
processor.setReference('on', { status: 'loaded', buffer: buildReferenceTable(data) });
// the same users with nothing but their ids: every lookup finds its user, nothing is added (the lookup's own cost)
processor.setReference('lookup', { status: 'loaded', buffer: buildReferenceTable({ ...data, users: data.users.map((u) => ({ id: u.id })), sites: data.sites.map((x) => ({ id: x.id })) }) });

const VARIANTS = ['off', 'on', 'lookup'] as const;
/** This thread's CPU where Node can tell it, else the process's (see pass() below). */
const cpuUsage = (process as { threadCpuUsage?: typeof process.cpuUsage }).threadCpuUsage?.bind(process) ?? process.cpuUsage.bind(process);
/** A full collection (the npm script runs this file with --expose-gc). */
const collect = (globalThis as { gc?: () => void }).gc;
const hot: Array<Record<string, unknown>> = [];
for (const skewed of [false, true]) {
  const objects = lines(data, RECORDS, skewed, skewed ? 2 : 1);
  for (const [name, encodings] of Object.entries(encodingsOf)) {
    const tasks = Object.fromEntries(VARIANTS.map((v) => [v, tasksOf(objects, encodings, v)])) as Record<(typeof VARIANTS)[number], ChunkTask[]>;
    // CPU time, not wall time: on a shared machine the other processes lengthen the wall time of
    // a pass, much less its CPU time. Each pass starts from a collected heap, and counts this
    // thread's CPU where Node can tell it (process.threadCpuUsage, Node 23.9 and later): V8's
    // concurrent marking of what the earlier passes left (the lines, the users, the tables) lands
    // on its helper threads at random, and made a pass take 150 to 450 ms of the process's CPU
    const pass = (v: (typeof VARIANTS)[number]): number => {
      collect?.();
      const t0 = cpuUsage();
      let records = 0;
      for (const t of tasks[v]) records += processor.process(t).records;
      if (records !== RECORDS) throw new Error(`expected ${RECORDS} records, mapped ${records}`);
      const d = cpuUsage(t0);
      return (d.user + d.system) / 1000;
    };
    for (const v of VARIANTS) pass(v); // warm-up
    const ms: Record<string, number[]> = { off: [], on: [], lookup: [] };
    for (let r = 0; r < REPS; r++) {
      // a different order each round, so a drift of the machine's speed favours none
      const order = [...VARIANTS.slice(r % 3), ...VARIANTS.slice(0, r % 3)];
      for (const v of order) ms[v]!.push(pass(v));
    }
    const min = (xs: number[]): number => Math.min(...xs);
    const row = {
      mix: skewed ? 'skewed' : 'uniform',
      encoding: name,
      offMs: min(ms.off!),
      onMs: min(ms.on!),
      lookupMs: min(ms.lookup!),
      costPct: (min(ms.on!) / min(ms.off!) - 1) * 100,
      lookupCostPct: (min(ms.lookup!) / min(ms.off!) - 1) * 100,
      medianCostPct: (median(ms.on!) / median(ms.off!) - 1) * 100,
      all: ms,
    };
    progress(`${row.mix} ${name}: off ${row.offMs.toFixed(0)} ms, on ${row.onMs.toFixed(0)} ms (${row.costPct.toFixed(1)} %), lookup only ${row.lookupMs.toFixed(0)} ms (${row.lookupCostPct.toFixed(1)} %)`);
    hot.push(row);
  }
}
report.hotPath = hot;

const out: string[] = [];
out.push(`enrichment: ${USERS} users, ${SITES} sites; ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
out.push('');
out.push('process RSS (main thread and workers, after GC): before any data; once the table is published and the caller\'s copy dropped; after every worker looked users up; after withdrawal');
out.push('');
out.push('| workers | table (SAB) | build | RSS before | published | added | after lookups | added | withdrawn |');
out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const m of memory) {
  const mb = (k: string): string => `${m[k]!.toFixed(0)} MB`;
  out.push(`| ${m.workers} | ${(m.tableBytes! / 1e6).toFixed(1)} MB | ${m.buildMs!.toFixed(0)} ms | ${mb('rssBeforeMb')} | ${mb('rssPublishedMb')} | ${(m.rssPublishedMb! - m.rssBeforeMb!).toFixed(0)} MB | ${mb('rssAfterMb')} | ${(m.rssAfterMb! - m.rssBeforeMb!).toFixed(0)} MB | ${mb('rssWithdrawnMb')} |`);
}
out.push('');
out.push(`CPU time (${'threadCpuUsage' in process ? "this thread's" : "the process's"}, each pass from a collected heap), fastest of ${REPS} passes of ${RECORDS} records each (interleaved); "lookup only": every user found, nothing added`);
out.push('');
out.push('| actors | encoding | off | on | cost | lookup only | its cost | cost, medians |');
out.push('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const h of hot) {
  const n = (k: string): number => h[k] as number;
  out.push(`| ${String(h.mix)} | ${String(h.encoding)} | ${n('offMs').toFixed(0)} ms | ${n('onMs').toFixed(0)} ms | ${n('costPct').toFixed(1)} % | ${n('lookupMs').toFixed(0)} ms | ${n('lookupCostPct').toFixed(1)} % | ${n('medianCostPct').toFixed(1)} % |`);
}
process.stdout.write(out.join('\n') + '\n');
if (flags.json) writeFileSync(flags.json, JSON.stringify(report, null, 2));
