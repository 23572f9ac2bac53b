/**
 * `type: tableau-server` end to end: the built CLI in daemon mode follows a generated Tableau
 * Server logs tree (the four process folders, other logs beside the Activity Log files, a folder
 * that is not read) while a writer in the test appends flat, `event`-wrapped and native lines,
 * leaves a line half-written and finishes it later, rotates by rename and by copy-and-truncate,
 * and the daemon is killed with -9 mid-file. What the OTLP receiver decodes is compared with what
 * was written: every record once (duplicates only from the batches in flight at the kill), the
 * same `log.record.uid` for the same record, the node and process folder on the resource.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { runCli, startCli, type CliProcess } from './support/cli-process.js';
import { waitFor } from './support/daemon-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { TableauServerSource } from '../src/sources/tableau-server/tableau-server-source.js';
import { tableauServerSourceConfigSchema } from '../src/sources/tableau-server/config.js';
import type { SourceCheckpoint } from '../src/sources/source-checkpoint.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const TENANT = 'node';
const FOLDERS = ['backgrounder', 'dataserver', 'vizportal', 'vizqlserver'] as const;
const TYPES = ['hist_access_view', 'login_authentication', 'vizql_http_request', 'add_delete_user_to_group'];
type Form = 'flat' | 'event' | 'native';

let receiver: OtlpReceiver | undefined;
const daemons: CliProcess[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
    await d.exited;
  }
  await receiver?.close();
  receiver = undefined;
});

/** Numbered records in a line form. */
class Writer {
  private seq = 0;
  readonly written: number[] = [];
  /** seq → the folder it was written in */
  readonly folderOf = new Map<number, string>();
  line(folder: string, form: Form): string {
    const s = this.seq++;
    this.written.push(s);
    this.folderOf.set(s, folder);
    const rec = { eventTime: `2026-11-29T10:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.123456Z`, eventType: TYPES[s % TYPES.length], siteLuid: SITE, actorUserLuid: `user-${s % 7}`, testSeq: s, note: 'x'.repeat(80) };
    const value = form === 'flat' ? rec : form === 'event' ? { traceUuid: `trace-${s}`, ts: '2026-11-29T10:00:00.000', event: rec } : { ts: '2026-11-29T10:00:00.000', pid: 100 + s, tid: 'a1', sev: 'info', req: `r${s}`, sess: 'S', site: 'Default', user: 'u', k: 'cepp', v: rec };
    return `${JSON.stringify(value)}\n`;
  }
  lines(folder: string, form: Form, n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += this.line(folder, form);
    return out;
  }
}

const seqOf = (r: ReceivedLogRecord): number => Number(r.attributes['tableau.test_seq']);
const seqs = (r: OtlpReceiver): number[] => r.records().map(seqOf);

/** Every written record arrived (waits for it); returns how many arrived more than once. */
async function allArrived(r: OtlpReceiver, w: Writer, timeoutMs = 90_000): Promise<number> {
  await waitFor(`${w.written.length} records`, () => new Set(seqs(r)).size >= w.written.length, timeoutMs);
  const counts = new Map<number, number>();
  for (const s of seqs(r)) counts.set(s, (counts.get(s) ?? 0) + 1);
  expect([...counts.keys()].sort((a, b) => a - b)).toEqual(w.written);
  return [...counts.values()].reduce((n, c) => n + c - 1, 0);
}

/** The same record always has the same uid, two records never share one; and each has its node and folder on the resource. */
function checkRecords(r: OtlpReceiver, w: Writer, host: string): void {
  const bySeq = new Map<number, Set<unknown>>();
  const seqOfUid = new Map<unknown, Set<number>>();
  const wrong: string[] = [];
  for (const x of r.records()) {
    const s = seqOf(x);
    const uid = x.attributes['log.record.uid'];
    bySeq.set(s, (bySeq.get(s) ?? new Set()).add(uid));
    seqOfUid.set(uid, (seqOfUid.get(uid) ?? new Set()).add(s));
    const res = x.resource;
    if (res['service.name'] !== 'tableau-server' || res['host.name'] !== host || res['tableau.server.process'] !== w.folderOf.get(s)) wrong.push(`${s}: ${JSON.stringify(res)}`);
  }
  expect([...bySeq.entries()].filter(([, u]) => u.size !== 1)).toEqual([]);
  expect([...seqOfUid.entries()].filter(([, s]) => s.size !== 1)).toEqual([]);
  expect(wrong.slice(0, 5)).toEqual([]);
}

function deadLetters(state: string): Array<Record<string, unknown>> {
  const dir = join(state, TENANT, 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) =>
    readFileSync(join(dir, f), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

function setup(opts: { batchSize?: number; inFlight?: number; host: string }): { logs: string; state: string; config: string } {
  const work = tempDir('tao-server-');
  const logs = join(work, 'tabsvc', 'logs');
  const state = join(work, 'state');
  for (const f of FOLDERS) mkdirSync(join(logs, f), { recursive: true });
  const config = join(work, 'config.yaml');
  writeFileSync(
    config,
    [
      `state: { dir: ${JSON.stringify(state)} }`,
      `pipeline: { batchSize: ${opts.batchSize ?? 50}, maxInFlightBatches: ${opts.inFlight ?? 2} }`,
      'tenants:',
      `  - id: ${TENANT}`,
      `    sources: [ { type: tableau-server, logsDir: ${JSON.stringify(logs)}, hostName: ${opts.host}, pollInterval: 100ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver!.url)} } ]`,
    ].join('\n'),
  );
  return { logs, state, config };
}

function daemon(config: string): CliProcess {
  const d = startCli(['run', '--config', config]);
  daemons.push(d);
  return d;
}

const activity = (logs: string, folder: string, name = 'current'): string => join(logs, folder, `${folder}_0-cepp-canonical-events_${name}.log`);

describe('tableau-server source', () => {
  it('a node’s logs tree: the four folders, flat, event and native files, only the Activity Log files read, node and folder on the resource', async () => {
    receiver = await startOtlpReceiver();
    const host = 'node-a.example.internal';
    const { logs, state, config } = setup({ host });
    const w = new Writer();
    const forms: Record<string, Form> = { backgrounder: 'native', dataserver: 'flat', vizportal: 'flat', vizqlserver: 'event' };
    for (const f of FOLDERS) writeFileSync(activity(logs, f), w.lines(f, forms[f]!, 20));
    // beside them: the process's other logs (JSON lines too) and a folder that is not read
    const ignored = new Writer();
    writeFileSync(join(logs, 'vizqlserver', 'vizqlserver_0.log'), ignored.lines('vizqlserver', 'flat', 5));
    writeFileSync(join(logs, 'vizqlserver', 'nativeapi_vizqlserver_0.txt'), ignored.lines('vizqlserver', 'flat', 5));
    mkdirSync(join(logs, 'tabadmincontroller'));
    writeFileSync(join(logs, 'tabadmincontroller', 'tabadmincontroller_0-cepp-canonical-events_1.log'), ignored.lines('tabadmincontroller', 'flat', 5));
    // the wrapped file gets a line of neither form: dead-lettered, the rest delivered
    appendFileSync(activity(logs, 'backgrounder'), `${JSON.stringify({ ts: 'x', pid: 1, msg: 'no record here' })}\n`);
    const d = daemon(config);
    expect(await allArrived(receiver, w)).toBe(0);
    checkRecords(receiver, w, host);
    const byFolder = (f: string): ReceivedLogRecord | undefined => receiver!.records().find((r) => w.folderOf.get(seqOf(r)) === f);
    expect(byFolder('vizqlserver')!.attributes).toMatchObject({ 'tableau.server.trace_uuid': expect.stringMatching(/^trace-/), 'tableau.server.ts': '2026-11-29T10:00:00.000' });
    expect(byFolder('backgrounder')!.attributes).toMatchObject({ 'tableau.server.sev': 'info', 'tableau.server.k': 'cepp' });
    expect(Object.keys(byFolder('dataserver')!.attributes).filter((k) => k.startsWith('tableau.server.'))).toEqual([]);
    // the event type is the record's own: the key has no eventType= segment
    expect(new Set(receiver.records().map((r) => r.eventName))).toEqual(new Set(TYPES.map((t) => `tableau.${t}`)));
    const dl = await waitFor('the dead letter', () => deadLetters(state).length > 0 && deadLetters(state), 30_000);
    expect(dl.map((x) => [x.object, x.line])).toEqual([['backgrounder/backgrounder_0-cepp-canonical-events_current.log', 21]]);
    expect(String(dl[0]!.reason)).toMatch(/no member "v": not of the native form/);
    // a line added later is followed
    appendFileSync(activity(logs, 'vizportal'), w.lines('vizportal', 'flat', 3));
    expect(await allArrived(receiver, w)).toBe(0);
    expect(d.child.exitCode).toBeNull();
  }, 120_000);

  it('while it runs: a half-written line finished later, rotation by rename and by copytruncate, kill -9 mid-file; every record once but the batches in flight', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(50); // answers take a while: the kill cuts requests in flight
    const host = 'node-b';
    const BATCH = 20;
    const IN_FLIGHT = 2;
    const { logs, state, config } = setup({ host, batchSize: BATCH, inFlight: IN_FLIGHT });
    const w = new Writer();
    const forms: Record<string, Form> = { backgrounder: 'flat', dataserver: 'native', vizportal: 'flat', vizqlserver: 'event' };
    for (const f of FOLDERS) writeFileSync(activity(logs, f), w.lines(f, forms[f]!, 30));
    let d = daemon(config);
    await allArrived(receiver, w);

    // half a line in vizqlserver: not read until its newline comes
    const half = w.line('vizqlserver', 'event');
    const halfSeq = w.written.pop()!;
    appendFileSync(activity(logs, 'vizqlserver'), w.lines('vizqlserver', 'event', 5) + half.slice(0, 50));
    await allArrived(receiver, w);
    expect(seqs(receiver)).not.toContain(halfSeq);

    // rotation by rename in backgrounder (the writer finishes the half line it left in the old file), copytruncate in dataserver
    const bTail = w.line('backgrounder', 'flat');
    appendFileSync(activity(logs, 'backgrounder'), w.lines('backgrounder', 'flat', 10) + bTail.slice(0, 30));
    renameSync(activity(logs, 'backgrounder'), activity(logs, 'backgrounder', '2026_11_29_0001'));
    appendFileSync(activity(logs, 'backgrounder', '2026_11_29_0001'), bTail.slice(30));
    writeFileSync(activity(logs, 'backgrounder'), w.lines('backgrounder', 'flat', 10));
    appendFileSync(activity(logs, 'dataserver'), w.lines('dataserver', 'native', 10));
    copyFileSync(activity(logs, 'dataserver'), activity(logs, 'dataserver', '2026_11_29_0001'));
    truncateSync(activity(logs, 'dataserver'), 0);
    appendFileSync(activity(logs, 'dataserver'), w.lines('dataserver', 'native', 10));
    // the half line is finished
    appendFileSync(activity(logs, 'vizqlserver'), half.slice(50));
    w.written.push(halfSeq);
    w.written.sort((a, b) => a - b);
    await allArrived(receiver, w);

    // a big write in every folder, kill -9 once part of it is delivered, start again while the writer goes on
    const before = receiver.records().length;
    for (const f of FOLDERS) appendFileSync(activity(logs, f), w.lines(f, forms[f]!, 250));
    await waitFor('part of the big write delivered', () => receiver!.records().length > before + 3 * BATCH, 60_000, 5);
    d.child.kill('SIGKILL');
    await d.exited;
    expect(new Set(seqs(receiver)).size).toBeLessThan(w.written.length); // killed mid-file
    for (const f of FOLDERS) appendFileSync(activity(logs, f), w.lines(f, forms[f]!, 20));
    d = daemon(config);
    const duplicates = await allArrived(receiver, w);
    expect(duplicates).toBeLessThanOrEqual((IN_FLIGHT + 2) * BATCH);
    checkRecords(receiver, w, host);
    expect(deadLetters(state)).toEqual([]);
    expect(d.child.exitCode).toBeNull();
  }, 180_000);
});

describe('tableau-server source: what it tells the pipeline about each file', () => {
  const signal = new AbortController().signal;
  const sourceOf = (logs: string, hostName: string): TableauServerSource =>
    new TableauServerSource(tableauServerSourceConfigSchema.parse({ type: 'tableau-server', logsDir: logs, hostName }), { baseDir: logs, env: {} });

  it('node, folder and line form per file; a first line not finished yet waits; record ids stable across restarts, distinct between nodes', async () => {
    const logs = tempDir('tao-server-info-');
    for (const f of ['backgrounder', 'vizqlserver']) mkdirSync(join(logs, f)); // (dataserver, vizportal: not on this node)
    const w = new Writer();
    writeFileSync(activity(logs, 'backgrounder'), w.lines('backgrounder', 'native', 2));
    writeFileSync(activity(logs, 'vizqlserver'), w.lines('vizqlserver', 'event', 2));
    writeFileSync(activity(logs, 'vizqlserver', 'flat'), w.lines('vizqlserver', 'flat', 2));
    // a first line longer than the fingerprint (1 KiB), its newline not written yet
    const long = w.line('vizqlserver', 'native').replace('"ts":', `"pad":"${'p'.repeat(2000)}","ts":`);
    writeFileSync(activity(logs, 'vizqlserver', 'long'), long.slice(0, 1500));
    writeFileSync(join(logs, 'vizqlserver', 'vizqlserver_0.log'), w.lines('vizqlserver', 'flat', 1)); // not an Activity Log file
    const infos = async (source: TableauServerSource, checkpoint: SourceCheckpoint = { objects: {} }) =>
      new Map((await source.pending(checkpoint, signal)).map((o) => [o.key, { info: o.info, identity: o.identity }]));
    const a = await infos(sourceOf(logs, 'node-a'));
    const resource = (process: string, host = 'node-a') => ({ 'service.name': 'tableau-server', 'host.name': host, 'tableau.server.process': process });
    expect([...a.entries()].map(([k, v]) => [k, v.info])).toEqual([
      ['backgrounder/backgrounder_0-cepp-canonical-events_current.log', { resource: resource('backgrounder'), lineForm: 'native' }],
      ['vizqlserver/vizqlserver_0-cepp-canonical-events_current.log', { resource: resource('vizqlserver'), lineForm: 'event' }],
      ['vizqlserver/vizqlserver_0-cepp-canonical-events_flat.log', { resource: resource('vizqlserver'), lineForm: 'flat' }],
    ]);
    appendFileSync(activity(logs, 'vizqlserver', 'long'), long.slice(1500));
    const again = await infos(sourceOf(logs, 'node-a'));
    expect(again.get('vizqlserver/vizqlserver_0-cepp-canonical-events_long.log')?.info).toEqual({ resource: resource('vizqlserver'), lineForm: 'native' });
    for (const [k, v] of a) expect(again.get(k)!.identity, k).toBe(v.identity); // a restart: the same ids
    // lineFormat set: every file in that form, whatever its first line
    const forced = new TableauServerSource(tableauServerSourceConfigSchema.parse({ type: 'tableau-server', logsDir: logs, hostName: 'node-a', lineFormat: 'event' }), { baseDir: logs, env: {} });
    expect(new Set([...(await infos(forced)).values()].map((v) => v.info?.lineForm))).toEqual(new Set(['event']));
    const b = await infos(sourceOf(logs, 'node-b'));
    for (const [k, v] of a) {
      expect(b.get(k)!.identity, k).not.toBe(v.identity);
      expect(b.get(k)!.info?.resource?.['host.name']).toBe('node-b');
    }
  });
});

describe('tableau-server source: replay', () => {
  it('a wrapped file’s records a destination rejected are replayed as they would have been sent: unwrapped, wrapper attributes, node and folder', async () => {
    receiver = await startOtlpReceiver();
    const backup = await startOtlpReceiver();
    try {
      const host = 'node-r';
      const { logs, state, config } = setup({ host, batchSize: 10 });
      // a second destination that accepts everything: what the replay must match
      writeFileSync(config, readFileSync(config, 'utf8').replace('destinations: [ {', `destinations: [ { type: otlp, name: backup, endpoint: ${JSON.stringify(backup.url)} }, { name: main, `));
      const w = new Writer();
      writeFileSync(activity(logs, 'vizqlserver'), w.lines('vizqlserver', 'event', 10));
      writeFileSync(activity(logs, 'backgrounder'), w.lines('backgrounder', 'native', 10));
      const refused = (r: ReceivedLogRecord): boolean => seqOf(r) % 4 === 1;
      receiver.rejectRecords(refused, 400, 'invalid request');
      const run = await runCli(['run', '--once', '--config', config]);
      expect(run.code, run.stderr).toBe(0);
      expect(backup.records().length).toBe(20);
      expect(receiver.records().length).toBe(15);
      receiver.rejectRecords(null);
      const replay = await runCli(['replay', '--config', config]);
      expect(replay.code, replay.stdout + replay.stderr).toBe(0);
      expect(new Set(seqs(receiver))).toEqual(new Set(w.written));
      const sent = new Map(backup.records().map((r) => [seqOf(r), r]));
      const replayed = receiver.records().filter(refused);
      expect(replayed.length).toBe(5);
      for (const r of replayed) {
        expect(r.attributes).toEqual(sent.get(seqOf(r))!.attributes);
        expect(r.resource).toEqual(sent.get(seqOf(r))!.resource);
        expect(r.resource['tableau.server.process']).toBe(w.folderOf.get(seqOf(r)));
      }
      expect(replayed.some((r) => typeof r.attributes['tableau.server.trace_uuid'] === 'string')).toBe(true);
      expect(replayed.some((r) => r.attributes['tableau.server.k'] === 'cepp')).toBe(true);
    } finally {
      await backup.close();
    }
  }, 120_000);
});
