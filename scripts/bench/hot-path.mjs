// @ts-check
/**
 * The encode worker's steady work, in-process: `npm run bench:hot-path -- --corpus DIR [--baseline
 * CHECKOUT] [--users FILE --sites FILE] [--reps N]`.
 *
 * Every object of the corpus (plain or `.gz`, as `npm run bench -- --keep` leaves it) cut into
 * tasks of 2 MB as the pipeline makes them, their bytes in shared memory and each written into
 * one reused output buffer in shared memory (as the daemon's shared buffers are: without reuse
 * every request lands in new memory, and the page faults weigh on every byte written), mapped and encoded to OTLP protobuf by `ChunkProcessor.process`: the
 * CPU time of a pass (`process.cpuUsage`). With `--baseline`, another checkout's build
 * (`CHECKOUT/dist`, built) is loaded beside this one and their passes alternate; the paired
 * median of the differences is reported; with `--processes N` that comparison is made in N
 * processes, each loading the two builds in the other order from the one before, and the
 * median and range of their paired medians are reported (one process is not enough: what V8
 * compiles differs from process to process). With `--users`/`--sites` (the bench's lookup files),
 * the tenant's reference data is loaded and the records are enriched. A first pass of each is
 * left out (the compilers' warm-up): what this measures is the work once optimized, not a
 * run's start, so a gain here is larger than in a whole `run --once`.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { corpusFiles } from './corpus-files.mjs';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values: flags } = parseArgs({
  options: {
    corpus: { type: 'string' },
    baseline: { type: 'string' },
    users: { type: 'string' },
    sites: { type: 'string' },
    reps: { type: 'string', default: '9' },
    processes: { type: 'string', default: '1' },
    'load-first': { type: 'string', default: 'baseline' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help || !flags.corpus) {
  process.stdout.write('npm run bench:hot-path -- --corpus DIR [--baseline CHECKOUT [--processes N]] [--users FILE --sites FILE] [--reps N]\n');
  process.exit(flags.help ? 0 : 2);
}
const REPS = Number(flags.reps);
const PROCESSES = Number(flags.processes);
if (!Number.isInteger(PROCESSES) || PROCESSES < 1 || !['baseline', 'this'].includes(flags['load-first'])) {
  process.stderr.write(`hot-path: --processes takes a whole number from 1, --load-first baseline or this\n`);
  process.exit(2);
}
if (PROCESSES > 1) {
  // One process is not enough: what V8 compiles, and when, differs from process to process, and
  // the same two builds can differ by several per cent one way in one process and the other way
  // in the next. Each process here loads the two builds in the other order from the one before.
  if (!flags.baseline) {
    process.stderr.write('hot-path: --processes needs --baseline (it repeats the comparison)\n');
    process.exit(2);
  }
  const args = process.argv.slice(2).filter((a, i, all) => a !== '--processes' && all[i - 1] !== '--processes' && !a.startsWith('--processes='));
  /** @type {number[]} */
  const percents = [];
  for (let k = 0; k < PROCESSES; k++) {
    const first = k % 2 ? 'this' : 'baseline';
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args, '--load-first', first], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const m = /paired median: (-?\d+) ms \((-?[\d.]+) %\)/.exec(r.stdout ?? '');
    if (r.status !== 0 || !m) {
      process.stderr.write(`hot-path: process ${k + 1} failed (status ${r.status})\n${r.stdout ?? ''}`);
      process.exit(1);
    }
    percents.push(Number(m[2]));
    process.stdout.write(`process ${k + 1} (${first === 'this' ? 'this checkout' : 'the baseline'} loaded first): ${m[1]} ms (${m[2]} %)\n`);
  }
  const sorted = [...percents].sort((a, b) => a - b);
  const mid = sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  process.stdout.write(`this checkout - baseline over ${PROCESSES} processes: median ${mid.toFixed(1)} %, from ${sorted[0].toFixed(1)} to ${sorted[sorted.length - 1].toFixed(1)} %\n`);
  process.exit(0);
}
const corpus = path.resolve(flags.corpus);
if (!fs.existsSync(corpus) || !fs.statSync(corpus).isDirectory()) {
  process.stderr.write(`hot-path: ${corpus}: not a folder\n`);
  process.exit(2);
}
const files = corpusFiles(corpus);
if (files.length === 0) {
  process.stderr.write(`hot-path: ${corpus}: no files\n`);
  process.exit(2);
}
/** A lookup file's lines; a line that is not JSON stops the run, named by file and line. @param {string} f */
const ndjson = (f) =>
  fs.readFileSync(f, 'utf8').split('\n').flatMap((l, i) => {
    if (l.trim() === '') return [];
    try {
      return [JSON.parse(l)];
    } catch (err) {
      process.stderr.write(`hot-path: ${f}:${i + 1}: ${/** @type {Error} */ (err).message}\n`);
      process.exit(2);
    }
  });
/** The lookup files, parsed: dropped once every build has its table (passes must not carry 200 000 objects in the heap the daemon's worker does not have). */
let reference = flags.users ? { users: ndjson(flags.users), sites: flags.sites ? ndjson(flags.sites) : [] } : undefined;
const enriched = reference !== undefined;
// (in shared memory, as the daemon's output buffers are: see inSharedMemory)
const output = new Uint8Array(new SharedArrayBuffer(16 << 20)).fill(1);

/**
 * A segment's bytes in a SharedArrayBuffer, as the daemon hands them to an encode worker (its
 * shared buffers, pipeline/shared-buffers.ts): V8 and Node copy out of shared memory by other
 * paths than out of a worker's own, so a pass over private copies would not measure the daemon's.
 * @param {Uint8Array} seg
 */
function inSharedMemory(seg) {
  const bytes = new Uint8Array(new SharedArrayBuffer(seg.length));
  bytes.set(seg);
  return bytes;
}

/** A build's pass over the corpus, ready to run. @param {string} checkout */
async function passOf(checkout) {
  const dist = path.join(checkout, 'dist');
  const { ChunkProcessor } = await import(path.join(dist, 'pipeline', 'chunk-processor.js'));
  const { buildReferenceTable } = await import(path.join(dist, 'mapping', 'reference-table-builder.js'));
  const { loadCatalog } = await import(path.join(dist, 'mapping', 'catalog.js'));
  const { parseObjectKey } = await import(path.join(dist, 'decoding', 'object-key.js'));
  const processor = new ChunkProcessor({ catalog: loadCatalog(), scope: { name: 'hot-path', version: '1' }, tenants: [{ id: 't' }] });
  if (reference) processor.setReference('t', { status: 'loaded', buffer: buildReferenceTable({ ...reference, loadedAtMs: 1 }) });
  const tasks = [];
  let task;
  let bytes = 0;
  for (const f of files) {
    const key = path.relative(corpus, f);
    const raw = fs.readFileSync(f);
    const buf = f.endsWith('.gz') ? zlib.gunzipSync(raw) : raw;
    let at = 0;
    let line = 1;
    while (at < buf.length) {
      if (!task || bytes >= 2 << 20) {
        task = { tenant: 't', segments: [], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1', output };
        tasks.push(task);
        bytes = 0;
      }
      let end = Math.min(buf.length, at + (2 << 20) - bytes);
      if (end < buf.length) {
        const nl = buf.lastIndexOf(0x0a, end - 1);
        end = nl >= at ? nl + 1 : buf.indexOf(0x0a, end) + 1 || buf.length;
      }
      const seg = buf.subarray(at, end);
      let n = 0;
      for (const c of seg) if (c === 0x0a) n++;
      task.segments.push({ keyInfo: parseObjectKey(key), uidPrefix: key, firstLine: line, bytes: inSharedMemory(seg) });
      bytes += seg.length;
      line += n;
      at = end;
    }
  }
  return () => {
    const t0 = process.cpuUsage();
    let records = 0;
    let out = 0;
    for (const t of tasks) {
      const r = processor.process(t);
      records += r.records;
      for (const e of r.payloads) for (const p of e) out += p.byteLength;
    }
    const d = process.cpuUsage(t0);
    return { ms: (d.user + d.system) / 1000, records, out };
  };
}

/** @param {number[]} a */
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// (loaded in the order asked: --processes alternates it; the baseline's passes come first either way)
const ours = async () => ({ name: 'this checkout', pass: await passOf(REPO_ROOT), ms: /** @type {number[]} */ ([]) });
const baseline = async () => ({ name: `baseline ${flags.baseline}`, pass: await passOf(path.resolve(/** @type {string} */ (flags.baseline))), ms: /** @type {number[]} */ ([]) });
/** @type {Array<{ name: string, pass: () => { ms: number, records: number, out: number }, ms: number[] }>} */
const builds = [];
if (!flags.baseline) builds.push(await ours());
else if (flags['load-first'] === 'this') {
  const o = await ours();
  builds.push(await baseline(), o);
} else builds.push(await baseline(), await ours());
reference = undefined;
for (const b of builds) {
  const w = b.pass();
  process.stderr.write(`[hot-path] ${b.name}: ${w.records} records, ${w.out} bytes of OTLP, warm-up ${w.ms.toFixed(0)} ms\n`);
}
for (let r = 0; r < REPS; r++) {
  // alternated, the order swapped each round: a drift of the machine's speed favours neither
  for (const b of r % 2 ? [...builds].reverse() : builds) b.ms.push(b.pass().ms);
}
process.stdout.write(`Node ${process.version}, ${files.length} objects, ${enriched ? 'enrichment on' : 'enrichment off'}, ${REPS} passes each: CPU ms a pass\n`);
for (const b of builds) process.stdout.write(`  ${b.name}: median ${median(b.ms).toFixed(0)}, min ${Math.min(...b.ms).toFixed(0)}\n`);
if (builds.length === 2) {
  const [base, ours] = builds;
  const d = median(ours.ms.map((x, i) => x - base.ms[i]));
  process.stdout.write(`  this checkout - baseline, paired median: ${d.toFixed(0)} ms (${((d / median(base.ms)) * 100).toFixed(1)} %)\n`);
}
