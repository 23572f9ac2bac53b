/**
 * What a WebAssembly hot path would buy the encode worker: an experiment, not part of the daemon
 * (scripts/bench/README.md; figures in docs/performance.md).
 *
 *   npm run bench:wasm -- [--corpus DIR] [--events 200000] [--reps 5] [--json FILE]
 *
 * `npm run bench:wasm` bundles this file with esbuild (dist/bench/) and runs it with plain node,
 * as bench:enrichment does: under tsx the code measured (dist/) would be tsx's transform of it.
 *
 * In one process, on the same lines (the bench corpus, its gzip objects gunzipped in memory):
 *   ours         the encode worker's whole work: ChunkProcessor.process, OTLP protobuf, into a
 *                shared output buffer as the pool lends one
 *   scan, JS     FlatJsonLine.scan of every line (src/decoding/flat-json-line.ts)
 *   scan, wasm   the same scan in WebAssembly (scan-encode.as.ts), the object copied in first
 *   least, JS    the scan and every field written as a string attribute with ProtoWriter: the
 *                least an OTLP encoder writes (no mapping, no event time, no body)
 *   least, wasm  the same in WebAssembly
 * Before timing, it checks that the WebAssembly scan gives what FlatJsonLine gives (accepted or
 * not, kinds, ranges, names) on every line and on lines made to fall back, and that both "least"
 * encoders write the same bytes; any difference fails the run (exit 1).
 */
import { existsSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { corpusFiles } from '../corpus-files.mjs';
import type { ChunkTask } from '../../../src/pipeline/chunk-processor.js';

/** The repository: this file is in scripts/bench/wasm-hot-path/, or bundled into dist/bench/. */
let ROOT = path.dirname(fileURLToPath(import.meta.url));
while (!existsSync(path.join(ROOT, 'package.json'))) {
  if (path.dirname(ROOT) === ROOT) throw new Error(`not within the repository: ${fileURLToPath(import.meta.url)}`);
  ROOT = path.dirname(ROOT);
}
const HERE = path.join(ROOT, 'scripts', 'bench', 'wasm-hot-path');
const DIST = path.join(ROOT, 'dist');
const { FlatJsonLine } = (await import(path.join(DIST, 'decoding', 'flat-json-line.js'))) as typeof import('../../../src/decoding/flat-json-line.js');
const { ProtoWriter, keyFieldOf, T_SL_LOG_RECORDS, T_LR_ATTRIBUTES } = (await import(path.join(DIST, 'export', 'otlp-protobuf', 'writer.js'))) as typeof import('../../../src/export/otlp-protobuf/writer.js');
const { ChunkProcessor } = (await import(path.join(DIST, 'pipeline', 'chunk-processor.js'))) as typeof import('../../../src/pipeline/chunk-processor.js');
const { loadCatalog } = (await import(path.join(DIST, 'mapping', 'catalog.js'))) as typeof import('../../../src/mapping/catalog.js');
const { parseObjectKey } = (await import(path.join(DIST, 'decoding', 'object-key.js'))) as typeof import('../../../src/decoding/object-key.js');

const { values: args } = parseArgs({
  options: {
    corpus: { type: 'string' },
    events: { type: 'string', default: '200000' },
    reps: { type: 'string', default: '5' },
    json: { type: 'string' },
  },
});
const REPS = Number(args.reps);

// ---------------------------------------------------------------------------------------------
// The corpus, in memory

let tempDir: string | undefined;
let corpusDir = args.corpus;
if (!corpusDir) {
  tempDir = mkdtempSync(path.join(os.tmpdir(), 'tao-wasm-'));
  corpusDir = path.join(tempDir, 'corpus');
  // corpus.ts in a process of its own (imported into this bundle, its command line would run too)
  const made = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(ROOT, 'scripts', 'bench', 'corpus.ts'), '--out', tempDir, '--events', String(Number(args.events))], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`corpus.ts exited with ${made.status ?? made.signal}: ${made.stderr}`);
}
const keys = corpusFiles(corpusDir);
const objects = keys.map((file) => {
  const raw = readFileSync(file);
  return raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw;
});
if (tempDir) rmSync(tempDir, { recursive: true, force: true });
/** Per line: object, start, end (no newline). */
const lines: number[] = [];
objects.forEach((bytes, o) => {
  for (let p = 0; p < bytes.length; ) {
    let e = bytes.indexOf(0x0a, p);
    if (e < 0) e = bytes.length;
    if (e > p) lines.push(o, p, e);
    p = e + 1;
  }
});
const lineCount = lines.length / 3;
const inputBytes = objects.reduce((n, b) => n + b.length, 0);

// ---------------------------------------------------------------------------------------------
// The WebAssembly module

interface WasmExports {
  memory: WebAssembly.Memory;
  init(base: number): number;
  kindsAt(): number;
  startsAt(): number;
  endsAt(): number;
  idsAt(): number;
  keyStartsAt(): number;
  keyEndsAt(): number;
  scan(start: number, end: number): number;
  encodeLines(start: number, end: number, out: number): number;
}
const wasmModule = await WebAssembly.compile(readFileSync(path.join(HERE, 'scan-encode.wasm')));
const instance = await WebAssembly.instantiate(wasmModule, { env: { abort: () => { throw new Error('wasm abort'); } } });
const wasm = instance.exports as unknown as WasmExports;
const largest = Math.max(...objects.map((b) => b.length), 4096);
const inputAt = (wasm.init(1 << 16) + 15) & ~15;
const outputAt = inputAt + largest + 64;
const outputSize = largest * 3 + (1 << 16);
const needed = outputAt + outputSize;
if (needed > wasm.memory.buffer.byteLength) wasm.memory.grow(Math.ceil((needed - wasm.memory.buffer.byteLength) / 65536));
const memory = (): Uint8Array => new Uint8Array(wasm.memory.buffer);

/** Copies bytes into the module's input area with 16 zero bytes after them (the SIMD loops read ahead). */
function copyIn(bytes: Uint8Array): void {
  const m = memory();
  m.set(bytes, inputAt);
  m.fill(0, inputAt + bytes.length, inputAt + bytes.length + 16);
}

// ---------------------------------------------------------------------------------------------
// Checks: the same scan, the same bytes

/** Lines that must fall back (or not) exactly as FlatJsonLine decides. */
const EDGE_LINES = [
  '{}', ' { } ', '{"a":1}', '{"a":"x\\"y"}', '{"a":{"b":1}}', '{"a":[1]}', '{"a":1,"a":2}', '{"0":1}',
  '{"a":-0.5e+3}', '{"a":01}', '{"a":1.}', '{"a":true,"b":false,"c":null}', '{"a":tru}', '{"a":"\u00e9\u4e2d\ud83d\ude00"}',
  '{"a":"x\ty"}', '{"a":"' + 'z'.repeat(40) + '"}', '{"a" : "b" , "c" :2 }', '{"a":"b"', '{"a":"b"}x', '{"\u00e9":1}',
  '{"a":1,}', '[1]', '', '{"a":"' + 'q'.repeat(15) + '"}', '{"a":"' + 'q'.repeat(16) + '"}', '{"a":"' + 'q'.repeat(17) + '"}',
].map((s) => Buffer.from(s));
EDGE_LINES.push(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])); // invalid UTF-8
EDGE_LINES.push(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d])); // a surrogate

function checkScan(): { lines: number; fallbacks: number; differences: string[] } {
  const js = new FlatJsonLine();
  const names: string[] = [];
  const differences: string[] = [];
  let fallbacks = 0;
  const compare = (bytes: Uint8Array, start: number, end: number, where: string): void => {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const ok = js.scan(buf, start, end);
    copyIn(bytes.subarray(start, end));
    const n = wasm.scan(inputAt, inputAt + end - start);
    if (!ok) fallbacks++;
    if (ok !== n >= 0 || (ok && n !== js.size)) {
      differences.push(`${where}: JS ${ok ? js.size + ' fields' : 'falls back'}, wasm ${n < 0 ? 'falls back' : n + ' fields'}`);
      return;
    }
    if (!ok) return;
    const m = memory();
    const view = new DataView(wasm.memory.buffer);
    for (let i = 0; i < n; i++) {
      const kind = m[wasm.kindsAt() + i];
      const vs = view.getInt32(wasm.startsAt() + 4 * i, true) - inputAt + start;
      const ve = view.getInt32(wasm.endsAt() + 4 * i, true) - inputAt + start;
      const id = view.getInt32(wasm.idsAt() + 4 * i, true);
      const ks = view.getInt32(wasm.keyStartsAt() + 4 * i, true) - inputAt + start;
      const ke = view.getInt32(wasm.keyEndsAt() + 4 * i, true) - inputAt + start;
      const name = (names[id] ??= buf.toString('latin1', ks, ke));
      if (kind !== js.kinds[i] || vs !== js.starts[i] || ve !== js.ends[i] || name !== js.name(i) || buf.toString('latin1', ks, ke) !== name) {
        differences.push(`${where}, field ${i}: JS ${js.name(i)} kind ${js.kinds[i]} [${js.starts[i]}, ${js.ends[i]}), wasm ${name} kind ${kind} [${vs}, ${ve})`);
        return;
      }
    }
  };
  EDGE_LINES.forEach((b, i) => compare(b, 0, b.length, `edge line ${i + 1} (${JSON.stringify(b.toString())})`));
  for (let i = 0; i < lines.length && differences.length < 10; i += 3) compare(objects[lines[i]!]!, lines[i + 1]!, lines[i + 2]!, `${keys[lines[i]!]}, line at byte ${lines[i + 1]}`);
  return { lines: lineCount + EDGE_LINES.length, fallbacks, differences };
}

// ---------------------------------------------------------------------------------------------
// The cases

const jsScanner = new FlatJsonLine();
const writer = new ProtoWriter(1 << 22);
const keyFields: Uint8Array[] = [];

function scanJs(): number {
  let fields = 0;
  for (let i = 0; i < lines.length; i += 3) {
    if (jsScanner.scan(objects[lines[i]!]!, lines[i + 1]!, lines[i + 2]!)) fields += jsScanner.size;
  }
  return fields;
}

function scanWasm(): number {
  let fields = 0;
  let li = 0;
  for (let o = 0; o < objects.length; o++) {
    const bytes = objects[o]!;
    copyIn(bytes);
    for (; li < lines.length && lines[li] === o; li += 3) {
      const n = wasm.scan(inputAt + lines[li + 1]!, inputAt + lines[li + 2]!);
      if (n > 0) fields += n;
    }
  }
  return fields;
}

/** Per object, what the least encoder in JS writes (a copy when `keep`). */
function leastJs(keep?: Uint8Array[]): number {
  let written = 0;
  let li = 0;
  for (let o = 0; o < objects.length; o++) {
    const bytes = objects[o]!;
    writer.pos = 0;
    for (; li < lines.length && lines[li] === o; li += 3) {
      if (!jsScanner.scan(bytes, lines[li + 1]!, lines[li + 2]!)) throw new Error(`${keys[o]}: a line falls back; the least encoders handle flat lines only`);
      writer.byte(T_SL_LOG_RECORDS);
      const record = writer.begin();
      for (let i = 0; i < jsScanner.size; i++) {
        const id = jsScanner.nameId(i);
        const key = (keyFields[id] ??= keyFieldOf(jsScanner.name(i)));
        writer.stringAttribute(T_LR_ATTRIBUTES, key, bytes, jsScanner.starts[i]!, jsScanner.ends[i]!);
      }
      writer.end(record);
    }
    written += writer.pos;
    keep?.push(Uint8Array.prototype.slice.call(writer.buf, 0, writer.pos));
  }
  return written;
}

function leastWasm(keep?: Uint8Array[]): number {
  let written = 0;
  for (let o = 0; o < objects.length; o++) {
    const bytes = objects[o]!;
    copyIn(bytes);
    const n = wasm.encodeLines(inputAt, inputAt + bytes.length, outputAt);
    if (n < 0) throw new Error(`${keys[o]}: a line falls back; the least encoders handle flat lines only`);
    if (n > outputSize) throw new Error('the output area is too small');
    written += n;
    keep?.push(memory().slice(outputAt, outputAt + n));
  }
  return written;
}

const processor = new ChunkProcessor({ catalog: loadCatalog(), scope: { name: 'wasm-hot-path', version: '1' }, tenants: [{ id: 'bench' }] });
const sharedOutput = new Uint8Array(new SharedArrayBuffer(largest * 3 + (1 << 20)));
const tasks: ChunkTask[] = objects.map((bytes, o) => ({
  tenant: 'bench',
  encodings: [{ kind: 'otlp-protobuf' }],
  observedTimeUnixNano: '1',
  output: sharedOutput,
  segments: [{ keyInfo: parseObjectKey(path.relative(corpusDir, keys[o]!)), uidPrefix: `o${o}`, firstLine: 1, bytes }],
}));

function ours(): number {
  let written = 0;
  let records = 0;
  for (const task of tasks) {
    const r = processor.process(task);
    records += r.records;
    if (r.deadLetters.length > 0) throw new Error(`${r.deadLetters.length} dead letters: ${r.deadLetters[0]!.reason}`);
    for (const p of r.payloads[0]!) written += p.length;
  }
  if (records !== lineCount) throw new Error(`ours mapped ${records} records of ${lineCount}`);
  return written;
}

// ---------------------------------------------------------------------------------------------

const scanCheck = checkScan();
process.stderr.write(
  `${lineCount} lines (${(inputBytes / 1e6).toFixed(1)} MB) in ${objects.length} objects, node ${process.version}; scan compared on ${scanCheck.lines} lines ` +
    `(${scanCheck.fallbacks} fall back in both): ${scanCheck.differences.length === 0 ? 'the same' : 'DIFFERENT'}\n`,
);
for (const d of scanCheck.differences) process.stderr.write(`  ${d}\n`);
if (scanCheck.differences.length > 0) process.exit(1);
const fromJs: Uint8Array[] = [];
const fromWasm: Uint8Array[] = [];
try {
  leastJs(fromJs);
  leastWasm(fromWasm);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}
const unequal = fromJs.findIndex((b, o) => Buffer.compare(b, fromWasm[o]!) !== 0);
if (unequal >= 0) {
  process.stderr.write(`the least encoders' bytes differ: ${keys[unequal]}: JS wrote ${fromJs[unequal]!.length} bytes, wasm ${fromWasm[unequal]!.length}\n`);
  process.exit(1);
}
process.stderr.write(`the least encoders' bytes: the same (${fromJs.reduce((n, b) => n + b.length, 0)})\n`);
fromJs.length = 0;
fromWasm.length = 0;

const cases: Array<[string, () => number]> = [
  ['ours', ours],
  ['scan, JS', scanJs],
  ['scan, wasm', scanWasm],
  ['least, JS', () => leastJs()],
  ['least, wasm', () => leastWasm()],
];
const cpuMs: Record<string, number[]> = {};
const outputs: Record<string, number> = {};
const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
for (let rep = 0; rep < REPS; rep++) {
  // alternated, the order reversed every other repetition
  for (const [name, run] of rep % 2 ? [...cases].reverse() : cases) {
    const before = cpuNow();
    outputs[name] = run();
    (cpuMs[name] ??= []).push(cpuNow() - before);
  }
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const rows = cases.map(([name]) => ({ case: name, cpuMs: median(cpuMs[name]!), range: [Math.min(...cpuMs[name]!), Math.max(...cpuMs[name]!)], usPerLine: (median(cpuMs[name]!) * 1000) / lineCount, output: outputs[name]! }));
process.stdout.write(`| case | CPU ms (median of ${REPS}) | range | µs a line | output |\n| --- | ---: | --- | ---: | ---: |\n`);
for (const r of rows) process.stdout.write(`| ${r.case} | ${r.cpuMs.toFixed(0)} | ${r.range.map((x) => x.toFixed(0)).join('-')} | ${r.usPerLine.toFixed(2)} | ${r.case.startsWith('scan') ? `${r.output} fields` : `${(r.output / 1e6).toFixed(1)} MB`} |\n`);
if (args.json) writeFileSync(args.json, JSON.stringify({ node: process.version, lines: lineCount, inputBytes, objects: objects.length, reps: REPS, rows }, null, 2) + '\n');
