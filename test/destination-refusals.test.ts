/**
 * What a destination's refusal does (issue 15): the classification table of HTTP answers
 * (src/export/http-answers.ts), redirects that are never followed, a 401 that holds the daemon
 * like an outage (checkpoint unchanged, `tao_destination_up 0`, `/readyz` 503, delivered once
 * the receiver accepts), and a 413 that splits the batch down to the one record too big to go
 * alone (dead-lettered with its object, uid prefix and line; not counted as exported).
 * Real CLI, real OTLP receiver on 127.0.0.1.
 */
import { describe, it, expect, afterEach } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { answerClass, classifyHttpAnswer } from '../src/export/http-answers.js';
import { deliver } from '../src/export/delivery.js';
import { OtlpDestination, otlpDestinationConfigSchema } from '../src/export/otlp/destination.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { startHecServer } from './support/hec-server.js';
import { SplunkHecDestination } from '../src/export/splunk-hec/destination.js';
import { splunkHecDestinationConfigSchema } from '../src/export/splunk-hec/config.js';
import { runCli } from './support/cli-process.js';
import { startDaemon, waitFor, metricValue, parseLogLines, type DaemonProcess } from './support/daemon-process.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

describe('the classification of HTTP answers (one table for every destination)', () => {
  it('2xx done; 408/429/5xx retry; 401/403/407, 3xx, 404/405/410 and unknown 4xx hold; 400/413/422 blame the content', () => {
    const table: Array<[number, string]> = [
      [200, 'done'], [202, 'done'], [204, 'done'],
      [408, 'retry'], [429, 'retry'], [500, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'],
      [401, 'hold'], [403, 'hold'], [407, 'hold'], [301, 'hold'], [302, 'hold'], [307, 'hold'], [308, 'hold'],
      [404, 'hold'], [405, 'hold'], [410, 'hold'], [409, 'hold'], [415, 'hold'],
      [400, 'reject-content'], [413, 'reject-content'], [422, 'reject-content'],
    ];
    for (const [status, cls] of table) expect([status, answerClass(status)]).toEqual([status, cls]);
  });

  it("Splunk HEC's body code decides a 400: bad events are content, a wrong index or channel is ours (hold)", () => {
    for (const code of [5, 6, 12, 13, 15]) expect(answerClass(400, code)).toBe('reject-content');
    for (const code of [7, 10, 11, 14, 16]) expect(answerClass(400, code)).toBe('hold');
    expect(answerClass(403, 4)).toBe('hold');
    expect(answerClass(503, 9)).toBe('retry');
  });

  it('outcomes: Retry-After kept on a retry, the status on a hold, the response on a rejection; a redirect names only the host it points to', () => {
    expect(classifyHttpAnswer({ status: 429, retryAfter: '2' })).toEqual({ kind: 'retry', reason: 'HTTP 429', retryAfterMs: 2000 });
    expect(classifyHttpAnswer({ status: 503, retryAfter: ['3'] })).toEqual({ kind: 'retry', reason: 'HTTP 503', retryAfterMs: 3000 });
    expect(classifyHttpAnswer({ status: 401, detail: 'token expired', retryAfter: '5' })).toMatchObject({ kind: 'hold', status: 401, reason: expect.stringMatching(/^HTTP 401: token expired \(the destination refuses our credentials/) });
    expect(classifyHttpAnswer({ status: 407 })).toMatchObject({ kind: 'hold', status: 407, reason: expect.stringContaining('proxy refuses our credentials') });
    const moved = classifyHttpAnswer({ status: 301, location: 'https://elsewhere.example:8443/v1/logs?sig=SECRETSIG' });
    expect(moved).toMatchObject({ kind: 'hold', status: 301 });
    expect(moved.kind === 'hold' && moved.reason).toContain('redirect to https://elsewhere.example:8443, not followed');
    expect(JSON.stringify(moved)).not.toContain('SECRETSIG');
    expect(classifyHttpAnswer({ status: 413, detail: 'too big', response: '{"e":1}' })).toEqual({ kind: 'rejected', reason: 'HTTP 413: too big', status: 413, response: '{"e":1}' });
    expect(classifyHttpAnswer({ status: 204 })).toEqual({ kind: 'done' });
  });
});

const closers: Array<() => Promise<unknown>> = [];
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  while (closers.length) await closers.pop()!();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  closers.push(() => r.close());
  return r;
}

/** A local HTTP server answering every request with `answer`; counts what it got. */
async function server(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ url: string; requests: () => number }> {
  let n = 0;
  const s = http.createServer((req, res) => {
    n++;
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => s.close(resolve)));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, requests: () => n };
}

describe('the HTTP client never follows a redirect', () => {
  it('a 307 to another host is a hold naming that host; the other host gets nothing and the token stays home', async () => {
    const elsewhere = await server((_req, res) => res.writeHead(200).end());
    const moved = await server((_req, res) => res.writeHead(307, { location: `${elsewhere.url}/v1/logs` }).end());
    const dest = new OtlpDestination(otlpDestinationConfigSchema.parse({ type: 'otlp', endpoint: moved.url, headers: { authorization: 'Bearer tok-SECRET-123456' } }));
    const outcome = await dest.send(new Uint8Array(0), 0, new AbortController().signal);
    await dest.shutdown();
    expect(outcome).toMatchObject({ kind: 'hold', status: 307 });
    expect(outcome.kind === 'hold' && outcome.reason).toContain(`redirect to ${elsewhere.url}, not followed`);
    expect(moved.requests()).toBe(1);
    expect(elsewhere.requests()).toBe(0);
  });

  it('a hold is retried like an outage until the destination accepts, and gives up (with its status) when the retry budget is spent', async () => {
    const r = await receiver();
    const dest = new OtlpDestination(otlpDestinationConfigSchema.parse({ type: 'otlp', endpoint: r.url }));
    const policy = { initialDelayMs: 20, maxDelayMs: 50, maxElapsedMs: Infinity };
    r.respondNext({ status: 401 }, { status: 403 }, { status: 404 });
    const seen: string[] = [];
    const ok = await deliver(dest, new Uint8Array(0), 0, policy, new AbortController().signal, { onRetry: (_reason, _d, _a, o) => seen.push(`${o.kind} ${o.kind === 'hold' ? o.status : ''}`) });
    expect(ok).toEqual({ kind: 'done', attempts: 4 });
    expect(seen).toEqual(['hold 401', 'hold 403', 'hold 404']);
    r.setStatus(401);
    const gaveUp = await deliver(dest, new Uint8Array(0), 0, { ...policy, maxElapsedMs: 300 }, new AbortController().signal);
    expect(gaveUp).toMatchObject({ kind: 'gave-up', status: 401, lastReason: expect.stringMatching(/^HTTP 401/) });
    await dest.shutdown();
  });
});

describe("Splunk HEC's answers go through the same table", () => {
  it('400 "Incorrect index" (code 7) holds and is retried; 400 "Invalid data format" (code 6) is a content rejection', async () => {
    const hec = await startHecServer({ token: 'hec-token-for-the-table-test' });
    closers.push(() => hec.close());
    const dest = new SplunkHecDestination(splunkHecDestinationConfigSchema.parse({ type: 'splunk-hec', url: hec.url, tokenEnv: 'T', compression: 'none' }), { baseDir: '.', env: { T: 'hec-token-for-the-table-test' } });
    const body = new TextEncoder().encode('{"event":{"event_name":"x"}}\n');
    const policy = { initialDelayMs: 20, maxDelayMs: 50, maxElapsedMs: Infinity };
    hec.respondNext({ status: 400, body: JSON.stringify({ text: 'Incorrect index', code: 7 }) }, { status: 400, body: JSON.stringify({ text: 'Incorrect index', code: 7 }) });
    const seen: string[] = [];
    const held = await deliver(dest, body, 1, policy, new AbortController().signal, { onRetry: (reason, _d, _a, o) => seen.push(`${o.kind}: ${reason}`) });
    expect(held).toEqual({ kind: 'done', attempts: 3 });
    expect(seen).toEqual([expect.stringMatching(/^hold: HTTP 400: Incorrect index \(HEC code 7\)/), expect.stringMatching(/^hold: /)]);
    expect(hec.events).toHaveLength(1);
    hec.respondNext({ status: 400, body: JSON.stringify({ text: 'Invalid data format', code: 6, 'invalid-event-number': 0 }) });
    const rejected = await deliver(dest, body, 1, policy, new AbortController().signal);
    expect(rejected).toMatchObject({ kind: 'rejected', attempts: 1, outcome: { status: 400, reason: 'HTTP 400: Invalid data format (HEC code 6)', response: expect.stringContaining('invalid-event-number') } });
    await dest.shutdown();
  });
});

function letters(work: string): Array<Record<string, unknown>> {
  const dir = join(work, 'state', 'acme', 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
}

function checkpointLines(work: string): number[] {
  const cp = readCheckpointState(join(work, 'state', 'acme')) as { sources: Record<string, { objects: Record<string, { line: number }> }> };
  return Object.values(cp.sources).flatMap((s) => Object.values(s.objects).map((o) => o.line));
}

describe('a refusal of our credentials holds the pipeline', () => {
  it('daemon: while the receiver answers 401 nothing moves (checkpoint, dead letters), tao_destination_up is 0 and /readyz 503; once it accepts, everything arrives once', async () => {
    const r = await receiver();
    r.setStatus(401);
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 3, 40);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: r.url }]);
    daemon = await startDaemon(['--config', config]);
    // the held batch is retried and logged with the destination and the status
    await daemon.waitForLog((l) => l.destination === 'otlp' && l.status === 401 && typeof l.msg === 'string' && l.msg.includes('holding'), 30_000);
    await waitFor('a second attempt of a batch', () => r.requests.filter((q) => q.status === 401 && q.records.length > 0).length >= 2, 30_000);
    const metrics = (await daemon.get('/metrics')).body;
    expect(metricValue(metrics, 'tao_destination_up', { tenant: 'acme', destination: 'otlp' })).toBe(0);
    expect(metricValue(metrics, 'tao_events_exported_total', { tenant: 'acme', destination: 'otlp' }) ?? 0).toBe(0);
    const ready = await daemon.get('/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body).tenants.acme.destinations[0]).toMatchObject({ name: 'otlp', state: 'failing', lastError: expect.stringMatching(/^HTTP 401/) });
    expect(checkpointLines(work).every((line) => line === 0)).toBe(true);
    expect(letters(work)).toEqual([]);
    expect(r.records()).toHaveLength(0);

    r.setStatus(null); // the token is valid again
    await r.waitForRecords(tree.records.length, 60_000);
    await waitFor('/readyz 200', async () => (await daemon!.get('/readyz')).status === 200, 30_000);
    await waitFor('the checkpoint at the end of every object', () => {
      const lines = checkpointLines(work);
      return lines.length === 3 && lines.every((l) => l === 40);
    }, 30_000);
    const after = (await daemon.get('/metrics')).body;
    expect(metricValue(after, 'tao_destination_up', { tenant: 'acme', destination: 'otlp' })).toBe(1);
    expect(metricValue(after, 'tao_events_exported_total', { tenant: 'acme', destination: 'otlp' })).toBe(120);
    const seqs = r.records().map((x) => x.attributes['tableau.test_seq'] as number);
    expect(new Set(seqs).size).toBe(120);
    expect(seqs).toHaveLength(120);
    expect(letters(work)).toEqual([]);
    // no log line carries a dead letter for the held batches
    expect(daemon.logs().some((l) => typeof l.msg === 'string' && l.msg.includes('dead-lettered'))).toBe(false);
  }, 120_000);

  it('run --once: a 401 that does not end within retryFor exits 1 with the destination and status in the log; the checkpoint stays; the next run delivers', async () => {
    const r = await receiver();
    r.setStatus(401);
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 2, 30);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: r.url }]);
    const res = await runCli(['run', '--once', '--retry-for', '2s', '--config', config]);
    expect(res.code).toBe(1);
    const lines = parseLogLines(res.stderr);
    expect(lines.find((l) => l.destination === 'otlp' && l.status === 401 && l.level !== undefined), res.stderr).toBeDefined();
    expect(res.stderr).toMatch(/destination otlp unavailable: HTTP 401/);
    expect(checkpointLines(work).every((line) => line === 0)).toBe(true);
    expect(letters(work)).toEqual([]);

    r.setStatus(null);
    const again = await runCli(['run', '--once', '--config', config]);
    expect(again.code, again.stderr).toBe(0);
    expect(r.records()).toHaveLength(60);
  });
});

describe('a 413 splits the batch down to the record that cannot fit alone', () => {
  it('only the oversized record is dead-lettered (its line counted with blank lines, CRLF and a BOM), the rest delivered once, and not counted as exported', async () => {
    const r = await receiver();
    // a proxy before the receiver takes bodies up to 12 kB: a batch of 40 records is over it,
    // every record alone is under it except one
    r.setMaxBodyBytes(12_000);
    const work = tempDir();
    const dir = join(work, 'logs', `pod=p/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view`);
    mkdirSync(dir, { recursive: true });
    const rec = (seq: number, extra: Record<string, unknown> = {}): string => JSON.stringify({ eventTime: `2026-11-29T01:00:${String(seq % 60).padStart(2, '0')}.5Z`, actorUserLuid: 'u', testSeq: seq, ...extra });
    const out: string[] = [];
    const lineOf = new Map<number, number>();
    for (let seq = 0; seq < 40; seq++) {
      if (seq % 7 === 3) out.push(''); // blank lines count
      if (seq === 11) out.push('{not json'); // a bad line: dead-lettered by the first pass only
      out.push(rec(seq, seq === 26 ? { blob: 'x'.repeat(30_000) } : {}));
      lineOf.set(seq, out.length);
    }
    writeFileSync(join(dir, 'part-0000.txt'), '\uFEFF' + out.join('\r\n') + '\r\n');
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: r.url }]);
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);

    const seqs = r.records().map((x) => x.attributes['tableau.test_seq'] as number);
    expect(seqs.sort((a, b) => a - b)).toEqual([...Array(40).keys()].filter((s) => s !== 26));
    const uids = r.records().map((x) => x.attributes['log.record.uid'] as string);
    const uidOf = (seq: number): string | undefined => uids[r.records().findIndex((x) => x.attributes['tableau.test_seq'] === seq)];
    expect(uidOf(0)).toMatch(new RegExp(`:${lineOf.get(0)}$`));
    expect(uidOf(39)).toMatch(new RegExp(`:${lineOf.get(39)}$`));
    expect(r.requests.some((q) => q.status === 413)).toBe(true);

    const all = letters(work);
    const batches = all.filter((l) => l.kind === 'batch');
    expect(batches).toHaveLength(1);
    const object = `pod=p/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view/part-0000.txt`;
    expect(batches[0]).toMatchObject({ destination: 'otlp', status: 413, reason: expect.stringMatching(/^HTTP 413: request body of \d+ bytes exceeds 12000/), objects: [{ object, firstLine: lineOf.get(26), lastLine: lineOf.get(26) }], lines: [rec(26, { blob: 'x'.repeat(30_000) })] });
    const records = batches[0]!.records as Array<Record<string, unknown>>;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ object, line: lineOf.get(26), raw: rec(26, { blob: 'x'.repeat(30_000) }) });
    expect(uidOf(25)!.replace(/:\d+$/, '')).toBe(records[0]!.uidPrefix);
    // the bad JSON line was set aside once, by the first pass, not again by the split
    expect(all.filter((l) => l.kind === 'line')).toMatchObject([{ line: lineOf.get(11)! - 1 }]);
    const summary = parseLogLines(res.stderr).find((l) => l.msg === 'run --once finished')!;
    expect(summary).toMatchObject({ exported: 39, deadLetteredBatches: 1 });
  });
});
