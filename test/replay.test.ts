/**
 * `replay` through the built CLI (dist/cli.js) against real OTLP/HTTP receivers that decode
 * protobuf on their own: dead letters written by the real daemon (a rejected batch, bad lines)
 * and letters written by hand in the exact format the daemon writes (a line a connector bug kept
 * from being mapped, old letters without `uidPrefix`, a batch letter with `records`).
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { killMidRun, runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { sourceInfoOf } from '../src/pipeline/dead-letter-store.js';
import { parseObjectKey } from '../src/decoding/object-key.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const TOKEN = 'Bearer replay-test-token-7f3a9c21';

let receivers: OtlpReceiver[] = [];
let work: string;

beforeEach(() => {
  work = tempDir('tao-replay-');
});
afterEach(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  receivers = [];
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  receivers.push(r);
  return r;
}

function writeConfig(name: string, logs: string, state: string, destinations: unknown[], extra: string[] = []): string {
  const file = join(work, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(state)} }`,
      'server: { enabled: false }',
      'pipeline: { batchSize: 20, maxInFlightBatches: 1, retryFor: 3s, workers: 1 }',
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(logs)} } ]`,
      `    destinations: ${JSON.stringify(destinations)}`,
      ...extra,
    ].join('\n'),
  );
  return file;
}

const uidOf = (r: ReceivedLogRecord): string => r.attributes['log.record.uid'] as string;
const withoutUid = (attrs: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(attrs).filter(([k]) => k !== 'log.record.uid'));
const seqOf = (r: ReceivedLogRecord): number => Number(r.attributes['tableau.test_seq']);
/** The uid prefix versions before file identities gave a directory object (sha256 of `directory\n<key>`, 24 hex digits): what replay derives for letters without one. */
const prefixOf = (key: string): string => createHash('sha256').update(`directory\n${key}`).digest('hex').slice(0, 24);

function deadLetterDir(state: string): string {
  return join(state, 'acme', 'dead-letter');
}

function letters(state: string): Array<Record<string, unknown>> {
  const dir = deadLetterDir(state);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^\d{4}-\d{2}-\d{2}\.ndjson$/.test(f))
    .sort()
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    );
}

function record(seq: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ eventTime: `2026-11-29T01:02:03.${String(100000000 + seq)}Z`, actorUserLuid: 'user-1', siteLuid: SITE, testSeq: seq, ...extra });
}

function putObject(root: string, key: string, lines: string[]): void {
  const full = join(root, ...key.split('/'));
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, lines.join('\n') + '\n');
}

describe('replay of a batch a destination rejected', () => {
  it('sends it again with the same log.record.uid, to the destination that rejected it only, once', async () => {
    const main = await receiver();
    const backup = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    const tree = writeFixtureTree(logs, 3, 20);
    const config = writeConfig('config', logs, state, [
      { type: 'otlp', name: 'main', endpoint: main.url, headers: { authorization: TOKEN } },
      { type: 'otlp', name: 'backup', endpoint: backup.url },
    ]);
    // the destination refuses the second object's records for their content: the run splits its
    // batch down to single records, every one refused, so all 20 go into one batch letter
    const secondObject = (r: ReceivedLogRecord): boolean => seqOf(r) >= 20 && seqOf(r) < 40;
    main.rejectRecords(secondObject, 400, 'invalid request');
    const run = await runCli(['run', '--once', '--config', config]);
    expect(run.code, run.stderr).toBe(0);
    expect(backup.records().length).toBe(60);
    expect(main.records().length).toBe(40);
    const rejected = main.requests.find((r) => r.status === 400)!;
    expect(rejected.records.length).toBe(20);
    const firstUid = new Map(rejected.records.map((r) => [seqOf(r), uidOf(r)]));
    const batchLetters = letters(state).filter((l) => l.kind === 'batch');
    expect(batchLetters.length).toBe(1);
    expect(batchLetters[0]!.destination).toBe('main');

    // --destination backup: the letter belongs to main (backup has its records): nothing is sent
    const mainRequests = main.requests.length;
    const backupRequests = backup.requests.length;
    const other = await runCli(['replay', '--config', config, '--destination', 'backup']);
    expect(other.code, other.stdout + other.stderr).toBe(0);
    expect(other.stdout).toMatch(/0 dead letters selected/);
    expect(main.requests.length).toBe(mainRequests);
    expect(backup.requests.length).toBe(backupRequests);

    // a dry run says what would go where, and sends nothing
    const dry = await runCli(['replay', '--config', config, '--dry-run']);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/dry run/);
    expect(dry.stdout).toMatch(/batch\s+HTTP 400\s+main\s+20\s+0\s+20\s+0\s+0/);
    expect(main.requests.length).toBe(mainRequests);
    expect(backup.requests.length).toBe(backupRequests);

    // rejected again: reported with the reason (no credential in it), exit 1, nothing recorded
    main.rejectRecords(secondObject, 400, `still invalid, you sent ${TOKEN}`);
    const again = await runCli(['replay', '--config', config]);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/rejected again \(HTTP 400\)/);
    expect(again.stdout).toMatch(/\d{4}-\d{2}-\d{2}\.ndjson:1 \(20 records\) → main/);
    expect(again.stdout).toMatch(/still invalid, you sent \[redacted\]/);
    expect(again.stdout + again.stderr).not.toContain('replay-test-token-7f3a9c21');
    expect(main.records().length).toBe(40);
    expect(main.requests.length).toBeGreaterThan(mainRequests);
    expect(main.requests.slice(mainRequests).every((r) => r.status === 400)).toBe(true);
    main.rejectRecords(null);
    const beforeOk = main.requests.length;

    // the destination is fixed: every record arrives once, under the uid of the first attempt
    const ok = await runCli(['replay', '--config', config]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/batch\s+HTTP 400\s+main\s+20\s+0\s+20\s+0\s+0/);
    expect(main.records().length).toBe(60);
    expect(new Set(main.records().map(seqOf)).size).toBe(60);
    expect(backup.requests.length).toBe(backupRequests);
    const replayed = main.requests.at(-1)!;
    expect(replayed.status).toBe(200);
    expect(replayed.headers.authorization).toBe(TOKEN);
    for (const r of replayed.records) expect(uidOf(r)).toBe(firstUid.get(seqOf(r)));
    // and the same record as the other destination got from the run
    const fromBackup = new Map(backup.records().map((r) => [seqOf(r), r]));
    for (const r of replayed.records) {
      expect(r.attributes).toEqual(fromBackup.get(seqOf(r))!.attributes);
      expect(r.resource).toEqual(fromBackup.get(seqOf(r))!.resource);
      expect(r.timeUnixNano).toBe(fromBackup.get(seqOf(r))!.timeUnixNano);
    }
    expect(tree.records.length).toBe(60);

    // a second replay sends nothing
    const second = await runCli(['replay', '--config', config]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/1 of them replayed before/);
    expect(main.requests.length).toBe(beforeOk + 1);
    expect(readFileSync(join(deadLetterDir(state), 'replayed.ndjson'), 'utf8')).toMatch(/"destination":"main"/);
  }, 240_000);

  it('a batch letter with its records (at fault only) sends exactly those, under their uids, once', async () => {
    const main = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    mkdirSync(logs, { recursive: true });
    const config = writeConfig('config', logs, state, [{ type: 'otlp', name: 'main', endpoint: main.url }]);
    const key = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view/part-9.txt`;
    mkdirSync(deadLetterDir(state), { recursive: true });
    const letter = {
      time: '2026-11-30T09:00:00.000Z',
      kind: 'batch',
      destination: 'main',
      reason: 'HTTP 400: bad attribute',
      status: 400,
      objects: [{ object: key, firstLine: 1, lastLine: 3 }],
      lines: [record(1), record(2), record(3)],
      records: [
        { object: key, uidPrefix: 'feedfacefeedfacefeedface', line: 2, raw: record(2) },
        { object: key, uidPrefix: 'feedfacefeedfacefeedface', line: 3, raw: record(3) },
      ],
    };
    // the same batch rejected a second time after a crash re-read it: a second letter with the same records
    const copy = { ...letter, time: '2026-11-30T09:05:00.000Z' };
    writeFileSync(join(deadLetterDir(state), '2026-11-30.ndjson'), JSON.stringify(letter) + '\n' + JSON.stringify(copy) + '\n');
    const res = await runCli(['replay', '--config', config]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toMatch(/2 dead letters selected \(0 line, 2 batch\), 1 of them replayed before/);
    const got = main.records();
    expect(got.map(seqOf).sort()).toEqual([2, 3]);
    expect(got.map(uidOf).sort()).toEqual(['feedfacefeedfacefeedface:2', 'feedfacefeedfacefeedface:3']);
    expect(got[0]!.eventName).toBe('tableau.hist_access_view');

    // a record of what was sent torn by a crash while it was written: cut off, the rest still holds
    const replayedFile = join(deadLetterDir(state), 'replayed.ndjson');
    appendFileSync(replayedFile, '{"kind":"replayed","letter":"0123');
    const second = await runCli(['replay', '--config', config]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/2 of them replayed before/);
    expect(main.requests.length).toBe(1);
    const text = readFileSync(replayedFile, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text).not.toContain('"letter":"0123');
  }, 240_000);
});

describe('replay killed with kill -9', () => {
  it('what was acknowledged before the kill is not sent again; the rest is, once', async () => {
    const main = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    mkdirSync(logs, { recursive: true });
    const config = writeConfig('config', logs, state, [{ type: 'otlp', name: 'main', endpoint: main.url }]);
    mkdirSync(deadLetterDir(state), { recursive: true });
    const key = (n: number): string => `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=04/eventType=hist_access_view/part-${n}.txt`;
    const text: string[] = [];
    for (let n = 0; n < 6; n++) {
      const records = Array.from({ length: 10 }, (_, i) => ({ object: key(n), uidPrefix: prefixOf(key(n)), line: i + 1, raw: record(n * 10 + i) }));
      text.push(JSON.stringify({ time: `2026-11-30T09:0${n}:00.000Z`, kind: 'batch', destination: 'main', reason: 'HTTP 400', status: 400, objects: [{ object: key(n), firstLine: 1, lastLine: 10 }], lines: records.map((r) => r.raw), records }) + '\n');
    }
    writeFileSync(join(deadLetterDir(state), '2026-11-30.ndjson'), text.join(''));
    main.setDelay(1000);
    // batches of 20 records (two letters each): killed once two are acknowledged (the third takes a second)
    const killed = await killMidRun(['replay', '--config', config], { delivered: () => main.records().length, atLeast: 40, waitMs: 60_000, jitterMs: 200 });
    expect(killed).toBe(true);
    const beforeKill = main.records().length;
    expect(beforeKill).toBeGreaterThanOrEqual(40);
    expect(beforeKill).toBeLessThan(60);
    main.setDelay(0);
    const res = await runCli(['replay', '--config', config]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    const seqs = main.records().map(seqOf);
    expect(new Set(seqs).size).toBe(60);
    // at most the request in flight at the kill (acknowledged, not yet recorded) is sent twice
    expect(seqs.length - 60).toBeLessThanOrEqual(20);
    // the letters recorded before the kill are skipped: all that were acknowledged, but for the request in flight
    const before = Number(/(\d+) of them replayed before/.exec(res.stdout)?.[1]);
    expect(before).toBeGreaterThanOrEqual((beforeKill - 20) / 10);
    expect(before).toBeLessThanOrEqual(beforeKill / 10);
    expect(seqs.length - beforeKill).toBe(60 - before * 10);
    for (const r of main.records()) expect(uidOf(r)).toBe(`${prefixOf(key(Math.floor(seqOf(r) / 10)))}:${(seqOf(r) % 10) + 1}`);
  }, 240_000);
});

describe('replay of line letters', () => {
  it('same uid and mapping as a run gives the line, filters by reason and time, and a line that fails again stays', async () => {
    const main = await receiver();
    const reference = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    const overrides = join(work, 'overrides.yaml');
    writeFileSync(overrides, 'static: { deployment.environment.name: replay-test }\n');
    const k1 = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=hist_access_view/bad.txt`;
    putObject(logs, k1, [record(100), '{"eventTime": "2026-11-29T01:02:03Z", "actorUser', record(101), record(102, { eventTime: 'yesterday' })]);
    const config = writeConfig('config', logs, state, [{ type: 'otlp', name: 'main', endpoint: main.url }], [`    mappings: ${JSON.stringify(overrides)}`]);
    const run = await runCli(['run', '--once', '--config', config]);
    expect(run.code, run.stderr).toBe(0);
    expect(main.records().map(seqOf).sort()).toEqual([100, 101]);
    // the daemon's line letters carry the object's uid prefix (the one its records went out with)
    const fromRun = letters(state);
    expect(fromRun.map((l) => l.line)).toEqual([2, 4]);
    const sentPrefix = uidOf(main.records()[0]!).split(':')[0];
    for (const l of fromRun) {
      expect(l).toMatchObject({ kind: 'line', object: k1, source: `directory:${logs}` });
      expect(l.uidPrefix).toBe(sentPrefix);
    }

    // what a run gives the lines of another object: the reference for the replayed records
    const refLogs = join(work, 'ref-logs');
    const k2 = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=02/eventType=login_authentication/fixed.txt`;
    const k2lines = [record(200, { status: 'success' }), record(201, { status: 'failure' })];
    putObject(refLogs, k2, k2lines);
    const refConfig = writeConfig('ref', refLogs, join(work, 'ref-state'), [{ type: 'otlp', endpoint: reference.url }], [`    mappings: ${JSON.stringify(overrides)}`]);
    const ref = await runCli(['run', '--once', '--config', refConfig]);
    expect(ref.code, ref.stderr).toBe(0);
    const want = new Map(reference.records().map((r) => [seqOf(r), r]));
    expect(want.get(200)!.resource['deployment.environment.name']).toBe('replay-test');

    // letters of k2 a connector bug kept from being mapped: one in today's format, one older without uidPrefix
    const handWritten = join(deadLetterDir(state), '2026-11-30.ndjson');
    appendFileSync(
      handWritten,
      [
        { time: '2026-11-30T10:00:00.000Z', kind: 'line', source: `directory:${logs}`, object: k2, line: 2, reason: 'cannot map this line (an error in the connector, please report it): TypeError: boom', raw: k2lines[1], uidPrefix: prefixOf(k2) },
        { time: '2026-11-30T11:00:00.000Z', kind: 'line', source: `directory:${logs}`, object: k2, line: 1, reason: 'cannot encode for otlp-protobuf: RangeError: offset', raw: k2lines[0] },
      ]
        .map((l) => JSON.stringify(l) + '\n')
        .join(''),
    );

    const requests = main.requests.length;
    const dry = await runCli(['replay', '--config', config, '--dry-run']);
    expect(dry.code).toBe(1); // two letters would fail again
    expect(dry.stdout).toMatch(/line\s+cannot map this line\s+main\s+1\s+0\s+1\s+0\s+0/);
    expect(dry.stdout).toMatch(/line\s+invalid JSON\s+main\s+1\s+0\s+0\s+0\s+1/);
    expect(dry.stdout).toMatch(/line\s+unparseable eventTime\s+main\s+1\s+0\s+0\s+0\s+1/);
    expect(main.requests.length).toBe(requests);

    // --reason: the connector bug only (substring); the uid and the record are what the run gives
    const byReason = await runCli(['replay', '--config', config, '--reason', 'error in the connector']);
    expect(byReason.code, byReason.stdout + byReason.stderr).toBe(0);
    expect(main.records().length).toBe(3);
    const r201 = main.records().find((r) => seqOf(r) === 201)!;
    // (the uid is the letter's: its prefix and line; the reference run's differs, its file is another)
    expect(uidOf(r201)).toBe(`${prefixOf(k2)}:2`);
    expect(withoutUid(r201.attributes)).toEqual(withoutUid(want.get(201)!.attributes));
    expect(r201.resource).toEqual(want.get(201)!.resource);
    expect(r201.severityNumber).toBe(want.get(201)!.severityNumber);

    // --since/--until: only the 11:00 letter (the old format: the uid prefix derived as the directory source does)
    const byTime = await runCli(['replay', '--config', config, '--since', '2026-11-30T10:30:00Z', '--until', '2026-11-30T12:00:00Z']);
    expect(byTime.code, byTime.stdout + byTime.stderr).toBe(0);
    expect(byTime.stdout).toMatch(/1 dead letters selected \(1 line, 0 batch\)/);
    expect(main.records().length).toBe(4);
    const r200 = main.records().find((r) => seqOf(r) === 200)!;
    // (versions that wrote letters without uidPrefix derived a directory file's prefix from its key)
    expect(uidOf(r200)).toBe(`${prefixOf(k2)}:1`);
    expect(withoutUid(r200.attributes)).toEqual(withoutUid(want.get(200)!.attributes));

    // everything: the replayed ones are not sent again; the bad lines fail again and stay
    const all = await runCli(['replay', '--config', config]);
    expect(all.code).toBe(1);
    expect(all.stdout).toMatch(/2 of them replayed before/);
    expect(all.stdout).toMatch(new RegExp(`\\d{4}-\\d{2}-\\d{2}\\.ndjson:1 \\(${k1.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2\\): fails again: invalid JSON`));
    expect(all.stdout).toMatch(/:4\): fails again: unparseable eventTime "yesterday"/);
    expect(main.records().length).toBe(4);
    const again = await runCli(['replay', '--config', config, '--reason', '/unparseable|invalid json/i']);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/2 dead letters selected/);
    expect(main.records().map(seqOf).sort()).toEqual([100, 101, 200, 201]);
  }, 240_000);

  it("a letter keeps what the source knew of its object (Tableau's tenant id, resource attributes): the replayed record carries it", async () => {
    const main = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    mkdirSync(logs, { recursive: true });
    const config = writeConfig('config', logs, state, [{ type: 'otlp', name: 'main', endpoint: main.url }]);
    const key = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=03/eventType=hist_access_view/node.txt`;
    // what the pipeline writes: only the facts beyond the key's own segments
    const info = sourceInfoOf(key, { ...parseObjectKey(key), tenantId: 'tableau-tenant-7', resource: { 'host.name': 'ts-node-1' } });
    expect(info).toEqual({ tenantId: 'tableau-tenant-7', resource: { 'host.name': 'ts-node-1' } });
    expect(sourceInfoOf(key, parseObjectKey(key))).toBeUndefined();
    mkdirSync(deadLetterDir(state), { recursive: true });
    appendFileSync(
      join(deadLetterDir(state), '2026-11-30.ndjson'),
      JSON.stringify({ time: '2026-11-30T10:00:00.000Z', kind: 'line', source: 'tcm:x', object: key, line: 1, reason: 'cannot map this line (an error in the connector, please report it): TypeError: boom', raw: record(300), uidPrefix: 'a'.repeat(24), info }) + '\n',
    );
    const res = await runCli(['replay', '--config', config]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(main.records()).toHaveLength(1);
    const r = main.records()[0]!;
    expect(r.resource['tableau.tenant.id']).toBe('tableau-tenant-7');
    expect(r.resource['host.name']).toBe('ts-node-1');
    expect(r.resource['tableau.site_luid']).toBe(SITE);
    expect(uidOf(r)).toBe(`${'a'.repeat(24)}:1`);
  });

  it('a line letter goes to every destination; one that rejects it gets it at the next replay, the other not again', async () => {
    const main = await receiver();
    const backup = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    mkdirSync(logs, { recursive: true });
    const config = writeConfig('config', logs, state, [
      { type: 'otlp', name: 'main', endpoint: main.url },
      { type: 'otlp', name: 'backup', endpoint: backup.url, protocol: 'http/json' },
    ]);
    const key = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=03/eventType=hist_access_view/one.txt`;
    mkdirSync(deadLetterDir(state), { recursive: true });
    writeFileSync(
      join(deadLetterDir(state), '2026-11-30.ndjson'),
      JSON.stringify({ time: '2026-11-30T10:00:00.000Z', kind: 'line', source: `directory:${logs}`, object: key, line: 5, reason: 'cannot map this line (an error in the connector, please report it): TypeError: boom', raw: record(500), uidPrefix: prefixOf(key) }) + '\n',
    );
    backup.respondNext({ status: 400, body: 'no' });
    const first = await runCli(['replay', '--config', config]);
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/→ backup: rejected again \(HTTP 400\)/);
    expect(main.records().map(uidOf)).toEqual([`${prefixOf(key)}:5`]);
    expect(backup.records().length).toBe(0);
    const second = await runCli(['replay', '--config', config]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(backup.records().map(uidOf)).toEqual([`${prefixOf(key)}:5`]);
    expect(backup.requests.at(-1)!.contentType).toMatch(/json/);
    expect(main.requests.length).toBe(1);
  }, 240_000);

  it('refuses what it cannot send under the same uid, naming the letter, and bad arguments', async () => {
    const main = await receiver();
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    mkdirSync(logs, { recursive: true });
    const config = writeConfig('config', logs, state, [{ type: 'otlp', name: 'main', endpoint: main.url }]);
    const file = join(deadLetterDir(state), '2026-11-30.ndjson');
    mkdirSync(deadLetterDir(state), { recursive: true });
    writeFileSync(
      file,
      [
        { time: '2026-11-30T10:00:00.000Z', kind: 'line', source: 's', object: 'a.txt', line: 7, reason: 'object unreadable after line 6: unexpected end of file', raw: '', uidPrefix: 'abc' },
        // an old batch letter whose lines cannot be matched to line numbers (a blank line was left out)
        { time: '2026-11-30T10:00:01.000Z', kind: 'batch', destination: 'main', reason: 'HTTP 400', objects: [{ object: 'b.txt', firstLine: 1, lastLine: 3 }], lines: [record(1), record(3)] },
        { time: '2026-11-30T10:00:02.000Z', kind: 'batch', destination: 'gone', reason: 'HTTP 400', objects: [{ object: 'c.txt', firstLine: 1, lastLine: 1 }], lines: [record(4)] },
      ]
        .map((l) => JSON.stringify(l) + '\n')
        .join(''),
    );
    const res = await runCli(['replay', '--config', config]);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain(`${file}:1 (a.txt:7): the rest of the object could not be read`);
    expect(res.stdout).toContain(`${file}:2 (2 records): written before batch letters carried their records`);
    expect(res.stdout).toContain(`${file}:3: rejected by destination 'gone', which is not in the tenant's configuration any more`);
    expect(main.requests.length).toBe(0);

    // the letter of a destination that is gone goes where --destination says; while it is down, nothing is recorded
    main.setStatus(503);
    const down = await runCli(['replay', '--config', config, '--destination', 'main', '--reason', 'HTTP 400', '--since', '2026-11-30T10:00:02Z', '--retry-for', '1s']);
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/:3 \(c\.txt:1\) → main: not sent: destination unreachable/);
    expect(main.records().length).toBe(0);
    main.setStatus(null);
    const rerouted = await runCli(['replay', '--config', config, '--destination', 'main', '--reason', 'HTTP 400', '--since', '2026-11-30T10:00:02Z']);
    expect(rerouted.code, rerouted.stdout + rerouted.stderr).toBe(0);
    expect(main.records().map(seqOf)).toEqual([4]);
    expect(uidOf(main.records()[0]!)).toBe(`${prefixOf('c.txt')}:1`);

    for (const [args, message] of [
      [['--tenant', 'nobody'], /--tenant: no tenant 'nobody'/],
      [['--destination', 'nowhere'], /--destination: tenant acme has no destination 'nowhere' \(its destinations: main\)/],
      [['--since', 'last tuesday'], /--since: not a time: last tuesday/],
      [['--reason', '/(/'], /--reason: not a regular expression/],
    ] as const) {
      const bad = await runCli(['replay', '--config', config, ...args]);
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(message);
    }
    expect(main.records().length).toBe(1);
  }, 240_000);
});
