/**
 * Hardening checks (issue 16), each on the real CLI; every check fails without its fix:
 *
 * - security-overrides: `hash: [client.address]` hashes every address field of a record
 *   (`ipAddress`, `sourceIp`, `initiatingUserIpAddress`, whichever takes client.address and
 *   wherever the others land), the body too; a file destination's output is created 0600;
 * - security-logs: a tenant id that is also a header value (`X-Scope-OrgID: acme-prod`) stays
 *   readable in the logs while the Authorization token is scrubbed; the pretty log format shows
 *   control characters from an object name escaped; `insecureSkipVerify: true` and a token over
 *   plain http to a host name that is not this machine (`collector.example`, never contacted:
 *   that tenant has nothing to send and no probes run) are warned about once at start; a config
 *   error quotes `${FAULTS_TCM_PAT}` as written, never the PAT;
 * - security-readyz: with `server.readyDetailFrom: [127.0.0.1/32]`, a caller from 127.0.0.1
 *   gets /readyz's detail, a caller from 127.0.0.2 (still loopback: no traffic leaves lo) only
 *   the status;
 * - security-object-limits: a small gzip object of millions of newlines and one that
 *   decompresses past maxObjectBytes are cut at the limit: the rest of each is one dead letter
 *   with the reason, the records after the cut never arrive, a second run reads nothing again.
 */
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createGzip } from 'node:zlib';
import { createHmac, randomBytes } from 'node:crypto';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, seqCounts, waitFor, type Scenario, type ScenarioResult } from '../lib/harness.js';

const SITE = 'b3a1c7e0-5555-4a2b-9c3d-000000000005';
const siteKey = (type: string, name: string): string => `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=03/eventType=${type}/${name}`;

function writeObject(root: string, key: string, data: string | Buffer): void {
  const full = join(root, ...key.split('/'));
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, data);
}

function skip(notes: string): ScenarioResult {
  return { eventsIn: 0, delivered: 0, duplicates: 0, deadLettered: 0, peakRssMb: 0, outcome: 'skip', notes };
}

export const securityOverrides: Scenario = {
  name: 'security-overrides',
  title: 'hash: [client.address] hashes every field that maps to it; file output is 0600',
  async run(ctx, { short }) {
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const n = short ? 200 : 2000;
    const valid: number[] = [];
    const ips = new Set<string>();
    const lines: string[] = [];
    for (let i = 0; i < n; i++) {
      const seq = 600_000 + i;
      valid.push(seq);
      const ip = (k: number): string => `198.51.${k}.${i % 250}`;
      ips.add(ip(1)).add(ip(2));
      // both fields map to client.address: the first present takes it, the other falls back
      const rec: Record<string, unknown> = i % 2 === 0 ? { sourceIp: ip(1), ipAddress: ip(2) } : { ipAddress: ip(1), sourceIp: ip(2) };
      lines.push(JSON.stringify({ eventTime: `2026-11-29T03:00:${String(i % 60).padStart(2, '0')}Z`, siteLuid: SITE, actorUserLuid: 'u-1', ...rec, testSeq: seq }));
    }
    writeObject(logs, siteKey('login_authentication', 'ips.txt'), lines.join('\n') + '\n');
    const hashKey = randomBytes(24).toString('hex');
    writeFileSync(join(work, 'overrides.yaml'), 'attributes:\n  hash: [client.address]\nhashKey: ${FAULTS_HASH_KEY}\n');
    const out = join(work, 'out', 'records.jsonl');
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [{ id: 'pii', mappings: join(work, 'overrides.yaml'), sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', endpoint: receiver.url }, { type: 'file', path: out }] }],
    });
    const r = await ctx.run(['run', '--once', '--config', config], { FAULTS_HASH_KEY: hashKey });
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const hmac = (v: string): string => createHmac('sha256', hashKey).update(v).digest('hex');
    let clear = 0;
    let hashedPairs = 0;
    for (const rec of receiver.records()) {
      const values = [...Object.values(rec.attributes).map(String), String(rec.body)].join('\n');
      if ([...ips].some((ip) => values.includes(ip))) clear++;
      const i = Number(rec.attributes['tableau.test_seq']) - 600_000;
      const both = [`198.51.1.${i % 250}`, `198.51.2.${i % 250}`].map(hmac);
      if (both.every((h) => Object.values(rec.attributes).includes(h))) hashedPairs++;
    }
    if (clear > 0) extra.push(`${clear} records carry an IP address in clear`);
    if (hashedPairs !== receiver.records().length) extra.push(`${receiver.records().length - hashedPairs} records lack the hash of one of their two addresses`);
    let mode = 'absent';
    if (existsSync(out)) {
      mode = (statSync(out).mode & 0o777).toString(8);
      if ((statSync(out).mode & 0o077) !== 0) extra.push(`the file destination created its output with mode ${mode} (others can read the records)`);
      if ([...ips].some((ip) => readFileSync(out, 'utf8').includes(ip))) extra.push('an IP address in clear in the file output');
    } else extra.push('the file destination wrote nothing');
    const j = judge(receiver.records(), readDeadLetters(state, 'pii'), { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [`${n} records with two address fields each: ${hashedPairs} with both hashed, ${clear} with one in clear`, `file output mode ${mode}`]);
  },
};

export const securityLogs: Scenario = {
  name: 'security-logs',
  title: 'logs: tenant ids stay readable, tokens do not; control characters escaped; start-up warnings; config errors quote ${VAR}',
  async run(ctx, { short }) {
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const extra: string[] = [];
    const notes: string[] = [];
    const token = `SEEDED-TOKEN-${randomBytes(9).toString('hex')}`;
    const pat = `SEEDED-PAT-${randomBytes(9).toString('hex')}`;
    const logs = join(work, 'logs');
    const tree = writeFixtureTree(logs, 2, short ? 100 : 1000, 700_000);
    // an object whose name carries terminal control sequences (retitle, clear screen), with a bad line
    const evilName = 'evil-\x1b]0;PWNED\x07-\x1b[2J-\x9b31m.txt';
    writeObject(logs, siteKey('login_authentication', evilName), 'not json\n');
    const empty = ctx.dir('empty');
    // a name that is not this machine; never looked up or contacted (see the tenant below)
    const host = 'collector.example';
    const state = join(work, 'state');
    const tenants: unknown[] = [
      { id: 'acme-prod', sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', endpoint: receiver.url, headers: { 'X-Scope-OrgID': 'acme-prod', authorization: 'Bearer ${FAULTS_TOKEN}' } }] },
      // nothing to send (an empty directory, no probes without the endpoints): only the start-up warnings
      {
        id: 'weak-settings',
        sources: [{ type: 'directory', path: empty }],
        destinations: [
          { type: 'otlp', name: 'unverified', endpoint: 'https://127.0.0.1:9/', insecureSkipVerify: true },
          { type: 'otlp', name: 'plain-http', endpoint: `http://${host}:9/`, headers: { authorization: 'Bearer ${FAULTS_TOKEN}' } },
        ],
      },
    ];
    const config = ctx.writeConfig(work, { stateDir: state, tenants });
    const env = { FAULTS_TOKEN: token };
    const r = await ctx.run(['run', '--once', '--config', config], env);
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const output = r.stdout + r.stderr;
    // 1. only credential headers are secrets
    const tenantLines = logLines(output, /./).filter((l) => 'tenant' in l);
    const acme = tenantLines.filter((l) => l.tenant === 'acme-prod').length;
    const redacted = tenantLines.filter((l) => String(l.tenant).includes('[redacted]')).length;
    if (redacted > 0 || acme === 0) extra.push(`the tenant id was redacted in ${redacted} of ${tenantLines.length} log lines (a header value that is not a credential)`);
    if (output.includes(token)) extra.push('the Authorization token appears in the logs');
    if (!receiver.requests.some((q) => q.headers['x-scope-orgid'] === 'acme-prod' && q.headers.authorization === `Bearer ${token}`)) extra.push('the headers were not sent (nothing proven)');
    notes.push(`tenant id readable in ${acme} log lines, token in none`);
    // 2. start-up warnings, once each
    const unverified = logLines(output, /insecureSkipVerify/).filter((l) => l.destination === 'unverified').length;
    if (unverified !== 1) extra.push(`${unverified} warnings for insecureSkipVerify: true (want 1)`);
    const plain = logLines(output, /plain http/).filter((l) => l.destination === 'plain-http').length;
    if (plain !== 1) extra.push(`${plain} warnings for a token over plain http to ${host} (want 1)`);
    const loopbackWarned = logLines(output, /plain http/).filter((l) => l.tenant === 'acme-prod').length;
    if (loopbackWarned > 0) extra.push('a warning for plain http to the loopback receiver');
    // the weak tenant must never have tried to reach its destinations (no lookup, no connection)
    const tried = logLines(output, /./).filter((l) => l.tenant === 'weak-settings' && l.level !== 'warn' && /error|fail|retry|ENOTFOUND|EAI_AGAIN|ECONNREFUSED/i.test(JSON.stringify(l))).length;
    if (tried > 0) extra.push(`${tried} log lines show the weak-settings tenant trying to reach its destinations`);
    notes.push(`start-up warnings: ${unverified} for insecureSkipVerify, ${plain} for a token over http to ${host}, ${loopbackWarned} for 127.0.0.1`);

    // 3. the pretty format escapes control characters from the data
    const prettyReceiver = await startOtlpReceiver();
    ctx.defer(() => prettyReceiver.close());
    const pretty = await ctx.run(['run', '--once', '--config', ctx.writeConfig(ctx.dir('pretty'), { tenants: [{ id: 'acme-prod', sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', endpoint: prettyReceiver.url }] }] })], { LOG_FORMAT: 'pretty' });
    if (pretty.code !== 0) extra.push(`the pretty-format run exited ${pretty.code}`);
    const prettyOut = pretty.stderr;
    const shown = prettyOut.split('\n').filter((l) => l.includes('evil-'));
    // eslint-disable-next-line no-control-regex
    const raw = (prettyOut.match(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g) ?? []).length;
    if (raw > 0) extra.push(`${raw} raw control characters in the pretty log output`);
    if (shown.length === 0) extra.push('the object with control characters in its name was never logged (nothing proven)');
    else if (!shown.some((l) => l.includes('\\u001b]0;PWNED\\u0007'))) extra.push(`the object name is not shown escaped: ${JSON.stringify(shown[0]!.slice(0, 160))}`);
    notes.push(`pretty logs: ${shown.length} lines name the object, ${raw} raw control characters`);

    // 4. a config error quotes the value as written, not the secret in it
    const badDir = ctx.dir('bad-config');
    const bad = ctx.writeConfig(badDir, { tenants: [{ id: 'tcm', sources: [{ type: 'tcm', tenantId: 'tenant-1', url: 'http://127.0.0.1:9', patEnv: 'FAULTS_TCM_PAT', since: '${FAULTS_TCM_PAT}' }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }] });
    const exits: string[] = [];
    for (const args of [['validate', '--config', bad], ['run', '--once', '--config', bad]]) {
      const v = await ctx.run(args, { FAULTS_TCM_PAT: pat });
      exits.push(`${args[0]} exit ${v.code}`);
      const text = v.stdout + v.stderr;
      if (v.code !== 2) extra.push(`${args[0]} of a config with since: \${FAULTS_TCM_PAT} exited ${v.code} (want 2)`);
      if (text.includes(pat)) extra.push(`${args[0]} printed the PAT in its error`);
      if (!text.includes('${FAULTS_TCM_PAT}')) extra.push(`${args[0]}'s error does not quote the value as written: ${JSON.stringify(text.slice(0, 200))}`);
    }
    notes.push(`since: "\${FAULTS_TCM_PAT}": ${exits.join(', ')}`);
    const valid = tree.records.map((x) => x.record.testSeq as number);
    const j = judge(receiver.records(), readDeadLetters(state, 'acme-prod'), { valid, bad: [{ label: 'control characters', object: evilName, line: 1, reason: /JSON/ }], dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length + 1, ctx.peakRssMb, extra, notes);
  },
};

function getFrom(url: string, localAddress?: string): Promise<{ status: number; body: string }> {
  return new Promise((res) => {
    http
      .get(url, localAddress ? { localAddress } : {}, (r) => {
        let body = '';
        r.setEncoding('utf8').on('data', (d: string) => (body += d));
        r.on('end', () => res({ status: r.statusCode ?? 0, body }));
      })
      .on('error', (e) => res({ status: 0, body: `(error ${e.message})` }));
  });
}

export const securityReadyz: Scenario = {
  name: 'security-readyz',
  title: '/readyz detail only for callers in server.readyDetailFrom (127.0.0.1/32; 127.0.0.2 gets the status)',
  async run(ctx, { short }) {
    if (!ctx.features.server) return skip('this build has no HTTP endpoints');
    // a caller outside readyDetailFrom, still on loopback (Linux routes all of 127/8 to lo)
    const outsider = '127.0.0.2';
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs-readyz-secret-name');
    const tree = writeFixtureTree(logs, 2, short ? 100 : 500, 900_000);
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, { stateDir: state, server: { address: '127.0.0.1:0', readyDetailFrom: ['127.0.0.1/32'] }, tenants: [{ id: 'tenant-readyz-acme', sources: [{ type: 'directory', path: logs, pollInterval: '1s' }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }] });
    const d = ctx.start(['run', '--config', config]);
    const valid = tree.records.map((x) => x.record.testSeq as number);
    await waitFor(() => seqCounts(receiver.records()).size >= valid.length || !d.alive, 60_000, 100);
    const serving = logLines(d.output(), /serving \/healthz/)[0];
    const extra: string[] = [];
    const notes: string[] = [];
    if (!serving) extra.push('no "serving /healthz" log line');
    else {
      const port = String(serving.address).split(':').at(-1);
      await waitFor(async () => (await getFrom(`http://127.0.0.1:${port}/readyz`)).status === 200, 30_000, 200);
      const local = await getFrom(`http://127.0.0.1:${port}/readyz`);
      const remote = await getFrom(`http://127.0.0.1:${port}/readyz`, outsider);
      if (!local.body.includes('tenant-readyz-acme') || !local.body.includes('logs-readyz-secret-name')) extra.push(`the caller from 127.0.0.1 got no detail: ${local.body.slice(0, 120)}`);
      if (remote.status !== local.status) extra.push(`status ${remote.status} for ${outsider}, ${local.status} for 127.0.0.1`);
      if (remote.body.includes('tenant-readyz-acme') || remote.body.includes('logs-readyz-secret-name') || remote.body.includes(new URL(receiver.url).host)) extra.push(`a caller from ${outsider} got the detail (tenant ids, source names, destinations)`);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(remote.body) as Record<string, unknown>;
      } catch {
        /* not JSON: reported below */
      }
      if (Object.keys(parsed).join() !== 'status') extra.push(`a caller from ${outsider} got more than the status: keys ${Object.keys(parsed).join(', ')}`);
      if (parsed.status !== 'ready') extra.push(`a caller from ${outsider} got no status: ${remote.body.slice(0, 120)}`);
      notes.push(`127.0.0.1: ${local.status}, ${local.body.length} bytes of detail; ${outsider}: ${remote.status} ${remote.body.replace(/\s+/g, '')}`);
    }
    const r = await ctx.stop(d);
    if (r.code !== 0) extra.push(`daemon exited ${r.code} after SIGTERM`);
    const j = judge(receiver.records(), readDeadLetters(state, 'tenant-readyz-acme'), { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, notes);
  },
};

/** gzip of `head`, then `bytes` of `fill`, then `tail`, streamed (the input is never held whole). */
async function gzipStream(head: string, fill: number, bytes: number, tail: string): Promise<Buffer> {
  const gz = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gz.on('data', (b: Buffer) => out.push(b));
  const done = new Promise<void>((r) => gz.on('end', () => r()));
  const write = (b: Buffer): Promise<void> => new Promise((r) => (gz.write(b) ? r() : gz.once('drain', () => r())));
  await write(Buffer.from(head));
  const block = Buffer.alloc(1 << 20, fill);
  for (let left = bytes; left > 0; left -= block.length) await write(left >= block.length ? block : block.subarray(0, left));
  await write(Buffer.from(tail));
  gz.end();
  await done;
  return Buffer.concat(out);
}

export const securityObjectLimits: Scenario = {
  name: 'security-object-limits',
  title: 'a decompression bomb is cut at maxObjectLines / maxObjectBytes, the rest dead-lettered',
  async run(ctx, { short }) {
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const tree = writeFixtureTree(logs, 3, short ? 200 : 1000, 0);
    const line = (seq: number): string => JSON.stringify({ eventTime: '2026-11-29T03:00:00Z', siteLuid: SITE, actorUserLuid: 'u-1', testSeq: seq });
    const maxObjectLines = 1_000_000;
    const maxObjectBytes = 32 << 20;
    // 1. newlines: 256 MiB (64 MiB short) in a few hundred kB of gzip
    const newlines = (short ? 64 : 256) << 20;
    const linesBomb = await gzipStream(`${line(5_000_000)}\n${line(5_000_001)}\n`, 0x0a, newlines, `${line(5_000_002)}\n`);
    writeObject(logs, siteKey('login_authentication', 'newlines-bomb.txt'), linesBomb);
    // 2. one long line of spaces, past maxObjectBytes
    const bytesBomb = await gzipStream(`${line(5_100_000)}\n${line(5_100_001)}\n`, 0x20, 2 * maxObjectBytes, `\n${line(5_100_002)}\n`);
    writeObject(logs, siteKey('login_authentication', 'bytes-bomb.txt'), bytesBomb);
    const valid = [...tree.records.map((x) => x.record.testSeq as number), 5_000_000, 5_000_001, 5_100_000, 5_100_001];
    const badSeqs = [5_000_002, 5_100_002];
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, { stateDir: state, pipeline: { maxObjectLines, maxObjectBytes }, tenants: [{ id: 'bombs', sources: [{ type: 'directory', path: logs }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }] });
    const started = Date.now();
    const r1 = await ctx.run(['run', '--once', '--config', config], {}, 180_000);
    const seconds = (Date.now() - started) / 1000;
    const extra: string[] = [];
    if (r1.code !== 0 || r1.timedOut) extra.push(`first run exited ${r1.code}${r1.timedOut ? ' (timed out)' : ''}`);
    const afterFirst = receiver.records().length;
    const lettersFirst = readDeadLetters(state, 'bombs').length;
    // the checkpoint moved past both objects: a second run reads nothing again
    const r2 = await ctx.run(['run', '--once', '--config', config], {}, 180_000);
    if (r2.code !== 0) extra.push(`second run exited ${r2.code}`);
    if (receiver.records().length !== afterFirst) extra.push(`the second run delivered ${receiver.records().length - afterFirst} records again`);
    const letters = readDeadLetters(state, 'bombs');
    if (letters.length !== lettersFirst) extra.push(`the second run dead-lettered ${letters.length - lettersFirst} lines again`);
    const j = judge(
      receiver.records(),
      letters,
      {
        valid,
        badSeqs,
        bad: [
          { label: 'newlines bomb', object: 'newlines-bomb.txt', line: maxObjectLines + 1, reason: /maxObjectLines/ },
          { label: 'bytes bomb', object: 'bytes-bomb.txt', line: 3, reason: /maxObjectBytes/ },
        ],
        dupBound: 0,
        rssLimitMb: 400,
      },
      ctx.peakRssMb,
    );
    return resultOf(j, valid.length + badSeqs.length, ctx.peakRssMb, extra, [
      `newlines bomb: ${Math.round(linesBomb.length / 1024)} kB gzip, ${newlines >> 20} MiB of newlines, cut at line ${maxObjectLines + 1}`,
      `bytes bomb: ${Math.round(bytesBomb.length / 1024)} kB gzip, cut at ${maxObjectBytes >> 20} MiB`,
      `first run ${seconds.toFixed(1)} s; second run: ${receiver.records().length - afterFirst} records and ${letters.length - lettersFirst} dead letters again`,
    ]);
  },
};
