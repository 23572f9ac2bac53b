// @ts-check
/**
 * Benchmark floor: the least work any forwarder must do. Single thread: read every object,
 * gunzip it when it starts with the gzip magic bytes, split it into lines and JSON.parse every
 * line; nothing else. Run as its own process by run-bench.ts:
 *
 *   node scripts/bench/floor.mjs CORPUS_DIR      → one JSON line on stdout
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import { corpusFiles } from './corpus-files.mjs';


const root = process.argv[2];
if (!root) {
  process.stderr.write('usage: node floor.mjs CORPUS_DIR\n');
  process.exit(2);
}
const started = process.hrtime.bigint();
let events = 0;
let bytes = 0;
let objects = 0;
let sink = 0;
for (const file of corpusFiles(root)) {
  const raw = fs.readFileSync(file);
  const buf = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b ? zlib.gunzipSync(raw) : raw;
  bytes += buf.length;
  objects++;
  for (const line of buf.toString('utf8').split('\n')) {
    const l = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (l.length === 0) continue;
    const rec = JSON.parse(l);
    if (rec.eventTime) sink++;
    events++;
  }
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
process.stdout.write(JSON.stringify({ events, bytes, objects, seconds, withEventTime: sink, maxRssBytes: process.resourceUsage().maxRSS * 1024 }) + '\n');
