/**
 * Soak of `type: tableau-server`: `npm run soak:tableau-server` (builds first).
 *
 *   npm run soak:tableau-server -- [--rate 2000] [--seconds 120] [--rotate-every 20] [--json FILE]
 *
 * A simulated node writes `--rate` events/s (default 2 000) into the four process folders of a
 * logs tree in a temp dir (two processes per folder, half-written lines, each file rotated every
 * `--rotate-every` seconds, alternately by rename and by copy-and-truncate: the writers of the
 * `server-node` fault scenario), while the built CLI runs in daemon mode with a `tableau-server`
 * source (its default poll interval) and an `otlp` destination at a receiver on 127.0.0.1 that
 * decodes every request. Each record carries the time it was written; the receiver takes
 * lag = time received − time written. Every 10 s a row: events written and received, lag p50 /
 * p99 / max of the records received in the window, the daemon's RSS. At the end: every record
 * received (once, or how many duplicates), lag over the run, RSS first / last / peak. Exit 1 when
 * a record is missing, the lag p99 is 5 s or more, or the RSS grew by more than 50 % from the
 * first 20 s to the last 20 s. Nothing leaves the machine.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { REPO_ROOT } from './corpus.js';
import { decodeOtlpLogsBody } from '../../test/support/otlp-receiver.js';
import { ProcessLog } from '../faults/scenarios/server-node.js';

const { values: flags } = parseArgs({
  options: {
    rate: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '120' },
    'rotate-every': { type: 'string', default: '20' },
    json: { type: 'string' },
  },
  strict: true,
});
const RATE = Number(flags.rate);
const SECONDS = Number(flags.seconds);
const ROTATE_EVERY_S = Number(flags['rotate-every']);
const TICK_MS = 50;
const FOLDERS = ['backgrounder', 'dataserver', 'vizportal', 'vizqlserver'];
const TYPES = ['hist_access_view', 'login_authentication', 'vizql_http_request', 'add_delete_user_to_group'];
const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tao-soak-server-'));
const logs = path.join(work, 'logs');
const procs: ProcessLog[] = [];
for (const f of FOLDERS) {
  fs.mkdirSync(path.join(logs, f), { recursive: true });
  for (let i = 0; i < 2; i++) procs.push(new ProcessLog(path.join(logs, f), `${f}_${i}`));
}

// the receiver: decode, note lag and sequence, keep nothing else
const received = new Map<number, number>();
let windowLags: number[] = [];
const allLags: number[] = [];
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    for (const r of decodeOtlpLogsBody(body, 'protobuf')) {
      const seq = Number(r.attributes['tableau.test_seq']);
      received.set(seq, (received.get(seq) ?? 0) + 1);
      const lag = now - Number(r.attributes['tableau.test_written_at']);
      windowLags.push(lag);
      allLags.push(lag);
    }
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;

const config = path.join(work, 'config.yaml');
fs.writeFileSync(
  config,
  JSON.stringify({
    state: { dir: path.join(work, 'state') },
    server: { enabled: false },
    tenants: [{ id: 'soak', sources: [{ type: 'tableau-server', logsDir: logs, hostName: 'soak-node' }], destinations: [{ type: 'otlp', endpoint: `http://127.0.0.1:${port}` }] }],
  }),
);
const daemon = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'run', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn' } });
let stderr = '';
daemon.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));

function rssMb(): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${daemon.pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

const maxOf = (xs: number[]): number => xs.reduce((m, x) => (x > m ? x : m), 0);
const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

let seq = 0;
const line = (folder: string): string => {
  const s = seq++;
  const rec = { eventTime: new Date().toISOString(), eventType: TYPES[s % TYPES.length], siteLuid: SITE, actorUserLuid: `user-${s % 97}`, viewName: `view ${s % 211}`, testSeq: s, testWrittenAt: Date.now(), folder };
  return `${JSON.stringify(rec)}\n`;
};

const rows: Array<{ t: number; written: number; received: number; lagP50: number; lagP99: number; lagMax: number; rssMb: number }> = [];
const rss: Array<{ t: number; mb: number }> = [];
const started = Date.now();
let nextRotation = ROTATE_EVERY_S * 1000;
let nextRow = 10_000;
const rotations = { rename: 0, copytruncate: 0 };
process.stderr.write(`soak: ${RATE} events/s for ${SECONDS} s into ${procs.length} processes in ${FOLDERS.length} folders, rotating every ${ROTATE_EVERY_S} s\n`);
process.stdout.write('|   t (s) | written | received | lag p50 (ms) | lag p99 (ms) | lag max (ms) | RSS (MB) |\n| ------: | ------: | -------: | -----------: | -----------: | -----------: | -------: |\n');
for (let tick = 0; ; tick++) {
  const elapsed = Date.now() - started;
  if (elapsed >= SECONDS * 1000) break;
  // as many events as the rate asks for by now, spread over the processes
  const due = Math.floor((RATE * elapsed) / 1000) - seq;
  for (let i = 0; i < procs.length; i++) {
    const n = Math.floor(due / procs.length) + (i < due % procs.length ? 1 : 0);
    if (n > 0) procs[i]!.write(Array.from({ length: n }, () => line(FOLDERS[Math.floor(i / 2)]!)), Math.random() < 0.5);
  }
  if (elapsed >= nextRotation) {
    for (const p of procs) rotations[p.rotate() as 'rename' | 'copytruncate']++;
    nextRotation += ROTATE_EVERY_S * 1000;
  }
  if (tick % 20 === 0) rss.push({ t: elapsed / 1000, mb: rssMb() });
  if (elapsed >= nextRow) {
    const row = { t: Math.round(elapsed / 1000), written: seq, received: received.size, lagP50: pct(windowLags, 50), lagP99: pct(windowLags, 99), lagMax: maxOf(windowLags), rssMb: rssMb() };
    rows.push(row);
    windowLags = [];
    process.stdout.write(`| ${String(row.t).padStart(7)} | ${String(row.written).padStart(7)} | ${String(row.received).padStart(8)} | ${String(row.lagP50).padStart(12)} | ${String(row.lagP99).padStart(12)} | ${String(row.lagMax).padStart(12)} | ${String(row.rssMb).padStart(8)} |\n`);
    nextRow += 10_000;
  }
  await new Promise((r) => setTimeout(r, TICK_MS));
}
for (const p of procs) p.finish();
const written = seq;
const deadline = Date.now() + 60_000;
while (received.size < written && Date.now() < deadline && daemon.exitCode === null) await new Promise((r) => setTimeout(r, 100));
daemon.kill('SIGTERM');
await new Promise((r) => daemon.once('close', r));
server.close();

const duplicates = [...received.values()].reduce((n, c) => n + c - 1, 0);
const early = rss.filter((r) => r.t >= 5 && r.t < 25).map((r) => r.mb);
const late = rss.filter((r) => r.t >= SECONDS - 20).map((r) => r.mb);
const summary = {
  rate: RATE,
  seconds: SECONDS,
  written,
  received: received.size,
  duplicates,
  rotations,
  lagP50: pct(allLags, 50),
  lagP99: pct(allLags, 99),
  lagMax: maxOf(allLags),
  rssEarlyMb: maxOf(early),
  rssLateMb: maxOf(late),
  rssPeakMb: maxOf(rss.map((r) => r.mb)),
  cores: os.cpus().length,
  node: process.version,
};
const failures: string[] = [];
if (summary.received < written) failures.push(`${written - summary.received} records never arrived`);
if (summary.lagP99 >= 5000) failures.push(`lag p99 ${summary.lagP99} ms ≥ 5 s`);
if (summary.rssEarlyMb > 0 && summary.rssLateMb > summary.rssEarlyMb * 1.5) failures.push(`RSS grew from ${summary.rssEarlyMb} MB to ${summary.rssLateMb} MB`);
process.stdout.write(
  `\n${written} written, ${summary.received} received (${duplicates} duplicates); ${rotations.rename} rotations by rename, ${rotations.copytruncate} by copytruncate\n` +
    `lag p50 ${summary.lagP50} ms, p99 ${summary.lagP99} ms, max ${summary.lagMax} ms; RSS ${summary.rssEarlyMb} MB (5–25 s) → ${summary.rssLateMb} MB (last 20 s), peak ${summary.rssPeakMb} MB; ${summary.cores} cores, Node ${summary.node}\n` +
    (failures.length ? `FAIL: ${failures.join('; ')}\n${stderr.slice(-2000)}\n` : 'pass\n'),
);
if (flags.json) fs.writeFileSync(flags.json, JSON.stringify({ summary, rows, failures }, null, 2));
fs.rmSync(work, { recursive: true, force: true });
process.exit(failures.length ? 1 : 0);
