/**
 * The directory source on files that are still being written: the daemon (the built CLI, in
 * daemon mode) polls a folder while a writer in the test appends whole and half-written lines,
 * rotates by rename and by copy-and-truncate, replaces a file, and while files are reached by
 * symlinks; a kill -9 mid-file resumes by byte offset. What the OTLP receiver decodes is
 * compared with what was written: every record exactly once, the same record always with the
 * same `log.record.uid`, no dead letters.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { startCli, type CliProcess } from './support/cli-process.js';
import { parseLogLines, waitFor } from './support/daemon-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { readCheckpointState } from '../src/pipeline/checkpoint-file.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const TENANT = 'node';

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

/** Numbered records, one JSON line each (about 300 bytes, padded with `pad`). */
class Writer {
  private seq = 0;
  readonly written: number[] = [];
  line(pad = 120): string {
    const s = this.seq++;
    this.written.push(s);
    const rec = { eventTime: `2026-11-29T10:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.123456Z`, eventType: 'hist_access_view', siteLuid: SITE, actorUserLuid: `user-${s % 7}`, testSeq: s, note: 'x'.repeat(pad) };
    return `${JSON.stringify(rec)}\n`;
  }
  lines(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += this.line();
    return out;
  }
}

function seqs(r: OtlpReceiver): number[] {
  return r.records().map((x) => Number(x.attributes['tableau.test_seq']));
}

/** Every written record arrived (waits for it), and reports how many arrived more than once. */
async function allArrived(r: OtlpReceiver, w: Writer, timeoutMs = 60_000): Promise<{ duplicates: number }> {
  await waitFor(`${w.written.length} records`, () => new Set(seqs(r)).size >= w.written.length, timeoutMs);
  const counts = new Map<number, number>();
  for (const s of seqs(r)) counts.set(s, (counts.get(s) ?? 0) + 1);
  expect([...counts.keys()].sort((a, b) => a - b)).toEqual(w.written);
  return { duplicates: [...counts.values()].reduce((n, c) => n + c - 1, 0) };
}

/** The same record always carries the same uid, and two records never share one. */
function uidsStable(r: OtlpReceiver): void {
  const bySeq = new Map<number, Set<unknown>>();
  const seqOfUid = new Map<unknown, Set<number>>();
  for (const x of r.records()) {
    const s = Number(x.attributes['tableau.test_seq']);
    const uid = x.attributes['log.record.uid'];
    bySeq.set(s, (bySeq.get(s) ?? new Set()).add(uid));
    seqOfUid.set(uid, (seqOfUid.get(uid) ?? new Set()).add(s));
  }
  expect([...bySeq.entries()].filter(([, u]) => u.size !== 1)).toEqual([]);
  expect([...seqOfUid.entries()].filter(([, s]) => s.size !== 1)).toEqual([]);
}

function deadLetters(state: string): string[] {
  const dir = join(state, TENANT, 'dead-letter');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.trim() !== ''));
}

function setup(opts: { batchSize?: number; finishAfter?: string } = {}): { work: string; logs: string; state: string; config: string } {
  const work = tempDir('tao-tail-');
  const logs = join(work, 'logs');
  const state = join(work, 'state');
  mkdirSync(logs, { recursive: true });
  const config = join(work, 'config.yaml');
  writeFileSync(
    config,
    [
      `state: { dir: ${JSON.stringify(state)} }`,
      `pipeline: { batchSize: ${opts.batchSize ?? 50} }`,
      'tenants:',
      `  - id: ${TENANT}`,
      `    sources: [ { type: directory, path: ${JSON.stringify(logs)}, pollInterval: 100ms, finishAfter: ${opts.finishAfter ?? '1h'} } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver!.url)} } ]`,
    ].join('\n'),
  );
  return { work, logs, state, config };
}

function daemon(config: string): CliProcess {
  const d = startCli(['run', '--config', config]);
  daemons.push(d);
  return d;
}

const logLines = (d: CliProcess, msg: RegExp): Array<Record<string, unknown>> => parseLogLines(d.stderr()).filter((l) => msg.test(String(l.msg ?? '')));

describe('directory source: files being written', () => {
  it('a half-written last line is left for later and arrives once, when its newline does', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const file = join(logs, 'vizqlserver_0-cepp-canonical-events_2026_11_29.log');
    writeFileSync(file, w.lines(10));
    const d = daemon(config);
    for (let round = 0; round < 5; round++) {
      const whole = w.lines(3);
      const half = w.line();
      const cut = 20 + round * 30;
      // three whole lines and the first part of a fourth, in one write: once the three arrive,
      // the daemon has read past them and seen the half line
      appendFileSync(file, whole + half.slice(0, cut));
      const expected = w.written.length - 1;
      await waitFor('the whole lines', () => new Set(seqs(receiver!)).size >= expected, 30_000);
      expect(seqs(receiver!)).not.toContain(w.written.at(-1));
      appendFileSync(file, half.slice(cut));
    }
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
    expect(d.child.exitCode).toBeNull();
  }, 90_000);

  it('finishAfter: a quiet file with a newer one beside it is finished (its last line read without a newline); the newest waits', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup({ finishAfter: '1m' });
    const w = new Writer();
    const rotated = join(logs, 'vizqlserver_0-cepp-canonical-events_2026_11_29_09.log');
    const active = join(logs, 'vizqlserver_0-cepp-canonical-events_2026_11_29_10.log');
    writeFileSync(rotated, w.lines(5) + w.line().trimEnd());
    const lastOfRotated = w.written.at(-1)!;
    writeFileSync(active, w.lines(4));
    const held = w.line();
    appendFileSync(active, held.trimEnd()); // complete JSON, but no newline: the writer may add more
    const heldSeq = w.written.pop()!;
    const minutesAgo = (m: number): number => (Date.now() - m * 60_000) / 1000;
    utimesSync(rotated, minutesAgo(10), minutesAgo(10));
    utimesSync(active, minutesAgo(5), minutesAgo(5));
    daemon(config);
    // both files are read in the same poll: the rotated one to its end, the newest up to its last newline
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(seqs(receiver)).toContain(lastOfRotated);
    expect(seqs(receiver)).not.toContain(heldSeq);
    // the writer finishes the line: it arrives once
    appendFileSync(active, '\n');
    w.written.push(heldSeq);
    expect((await allArrived(receiver, w)).duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
  }, 60_000);

  it('a finished file (an hour partition) read to the size listed: lines appended later arrive once, at the next poll', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const folder = join(logs, `siteLuid=${SITE}`, 'y=2026', 'm=11', 'd=29', 'h=10', 'eventType=hist_access_view');
    mkdirSync(folder, { recursive: true });
    const file = join(folder, 'activity-log-1.txt');
    writeFileSync(file, w.lines(20));
    daemon(config);
    expect((await allArrived(receiver, w)).duplicates).toBe(0);
    for (let round = 0; round < 3; round++) {
      appendFileSync(file, w.lines(7));
      expect((await allArrived(receiver, w)).duplicates).toBe(0);
    }
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
  }, 60_000);

  it('rotation by rename: the renamed file is followed to its end, the new one read from its start; nothing twice', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const active = join(logs, 'backgrounder_0-cepp-canonical-events.log');
    writeFileSync(active, w.lines(20));
    const d = daemon(config);
    for (let r = 1; r <= 3; r++) {
      await waitFor('what was written so far', () => new Set(seqs(receiver!)).size >= w.written.length, 30_000);
      // more lines (one half-written) the daemon has not read yet, then rotate: x.log → x.log.N
      const tail = w.line();
      appendFileSync(active, w.lines(15) + tail.slice(0, 40));
      renameSync(active, `${active}.${r}`);
      appendFileSync(`${active}.${r}`, tail.slice(40)); // the writer still had it open
      writeFileSync(active, w.lines(10));
    }
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
    expect(logLines(d, /file renamed \(rotated\)/).length).toBeGreaterThanOrEqual(1);
    // the next rotation compresses `.1` into `.2.gz`: recognised by its decompressed first bytes, not read again
    const before = seqs(receiver).length;
    writeFileSync(`${active}.2.gz`, gzipSync(readFileSync(`${active}.1`)));
    rmSync(`${active}.1`);
    await waitFor('the compressed copy noticed', () => logLines(d, /copy of a file read before/).length >= 1, 30_000);
    // and a new line in the active file: once it is here, the poll that saw the .gz is over
    appendFileSync(active, w.lines(1));
    await allArrived(receiver, w);
    expect(seqs(receiver).length).toBe(before + 1);
  }, 90_000);

  it('copytruncate: the copy is read on from the offset, the truncated file again from its start (with a warning)', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const active = join(logs, 'vizportal_0-cepp-canonical-events.log');
    writeFileSync(active, w.lines(30));
    const d = daemon(config);
    for (let r = 1; r <= 3; r++) {
      await waitFor('what was written so far', () => new Set(seqs(receiver!)).size >= w.written.length, 30_000);
      appendFileSync(active, w.lines(12)); // not read yet (or read: either way once)
      copyFileSync(active, `${active}.${r}`);
      truncateSync(active, 0);
      appendFileSync(active, w.lines(r === 2 ? 2 : 40)); // new content shorter or longer than what was read
    }
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
    const warnings = logLines(d, /reading it again from the start/);
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.every((l) => l.level === 'warn')).toBe(true);
  }, 90_000);

  it('a file replaced under its name (a new file renamed over it) is read from its start', async () => {
    receiver = await startOtlpReceiver();
    const { work, logs, state, config } = setup();
    const w = new Writer();
    const file = join(logs, 'dataserver_0-cepp-canonical-events.log');
    writeFileSync(file, w.lines(25));
    const d = daemon(config);
    await waitFor('the first file', () => new Set(seqs(receiver!)).size >= 25, 30_000);
    const next = join(work, 'next.log');
    writeFileSync(next, w.lines(8)); // fewer lines than were read from the old one
    renameSync(next, file);
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
    expect(logLines(d, /reading (it again|the new one) from the start/).length).toBe(1);
  }, 60_000);

  it('truncated and written again from the same first line: the new content is read, with uids of its own', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const file = join(logs, 'vizqlserver_3-cepp-canonical-events.log');
    const header = w.line(); // the same first line in both contents
    writeFileSync(file, header + w.lines(10));
    const d = daemon(config);
    await allArrived(receiver, w);
    truncateSync(file, 0);
    appendFileSync(file, header + w.lines(3)); // shorter than what was read
    await allArrived(receiver, w);
    const headerSeq = w.written[0]!;
    const headerCopies = receiver.records().filter((r) => Number(r.attributes['tableau.test_seq']) === headerSeq);
    expect(headerCopies).toHaveLength(2);
    expect(new Set(headerCopies.map((r) => r.attributes['log.record.uid'])).size).toBe(2);
    expect(seqs(receiver)).toHaveLength(w.written.length + 1);
    expect(deadLetters(state)).toEqual([]);
    expect(logLines(d, /reading it again from the start/)).toHaveLength(1);
  }, 60_000);

  it('symlinks: a linked file is read like the file, a linked folder too, a link back up the tree is no loop', async () => {
    receiver = await startOtlpReceiver();
    const { work, logs, state, config } = setup();
    const w = new Writer();
    // a Kubernetes-style volume: `..data` → `..2026_11_29`, and the visible file a symlink into it
    const mounted = join(logs, 'mounted');
    mkdirSync(join(mounted, '..2026_11_29_10_00'), { recursive: true });
    writeFileSync(join(mounted, '..2026_11_29_10_00', 'vizqlserver_1-cepp-canonical-events.log'), w.lines(7));
    symlinkSync('..2026_11_29_10_00', join(mounted, '..data'));
    symlinkSync(join('..data', 'vizqlserver_1-cepp-canonical-events.log'), join(mounted, 'vizqlserver_1-cepp-canonical-events.log'));
    // a folder outside the root, linked in; and a link from inside it back to the root
    const outside = join(work, 'elsewhere');
    mkdirSync(outside);
    writeFileSync(join(outside, 'backgrounder_1-cepp-canonical-events.log'), w.lines(9));
    symlinkSync(outside, join(logs, 'linked'));
    symlinkSync(logs, join(outside, 'loop'));
    // a file linked from outside
    writeFileSync(join(work, 'single.log'), w.lines(4));
    symlinkSync(join(work, 'single.log'), join(logs, 'single.log'));
    const d = daemon(config);
    await allArrived(receiver, w);
    // the linked file grows: read on from the offset
    appendFileSync(join(mounted, '..2026_11_29_10_00', 'vizqlserver_1-cepp-canonical-events.log'), w.lines(3));
    appendFileSync(join(work, 'single.log'), w.lines(2));
    const { duplicates } = await allArrived(receiver, w);
    expect(duplicates).toBe(0);
    expect(deadLetters(state)).toEqual([]);
    // the checkpoint names the files by the paths they were listed under (written just after the destination answered)
    const keysNow = (): string[] => {
      const cp = readCheckpointState(join(state, TENANT)) as { sources: Record<string, { objects: Record<string, unknown> }> };
      return Object.keys(Object.values(cp.sources)[0]!.objects).sort();
    };
    const expectedKeys = ['linked/backgrounder_1-cepp-canonical-events.log', 'mounted/vizqlserver_1-cepp-canonical-events.log', 'single.log'];
    await waitFor('the checkpoint of all three', () => keysNow().length >= 3, 30_000);
    expect(keysNow()).toEqual(expectedKeys);
    expect(d.child.exitCode).toBeNull();
  }, 60_000);

  it('kill -9 mid-file: the restart resumes at the byte offset acknowledged; duplicates only from batches in flight', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(40);
    const BATCH = 50;
    const { logs, state, config } = setup({ batchSize: BATCH });
    const w = new Writer();
    const file = join(logs, 'vizqlserver_2-cepp-canonical-events.log');
    writeFileSync(file, w.lines(2000));
    const first = daemon(config);
    await waitFor('a few batches', () => seqs(receiver!).length >= 5 * BATCH, 30_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const cp = readCheckpointState(join(state, TENANT)) as { sources: Record<string, { objects: Record<string, { line: number; offset?: number; done?: boolean }> }> };
    const entry = Object.values(cp.sources)[0]!.objects['vizqlserver_2-cepp-canonical-events.log']!;
    expect(entry.done).not.toBe(true);
    expect(entry.line).toBeGreaterThan(0);
    // the offset is where line `line` ends
    const bytes = readFileSync(file);
    let end = 0;
    for (let i = 0; i < entry.line; i++) end = bytes.indexOf(0x0a, end) + 1;
    expect(entry.offset).toBe(end);
    const before = seqs(receiver).length;
    // the writer goes on while the daemon is down, a half line at the end
    const half = w.line();
    appendFileSync(file, w.lines(100) + half.slice(0, 50));
    daemon(config);
    await waitFor('the rest', () => new Set(seqs(receiver!)).size >= w.written.length - 1, 60_000);
    appendFileSync(file, half.slice(50));
    const { duplicates } = await allArrived(receiver, w);
    // in flight when killed: at most maxInFlightBatches (8) + 2 batches
    expect(duplicates).toBeLessThanOrEqual(10 * BATCH);
    // the restart sent the lines after the acknowledged one, each once (plus what the killed
    // process still had on the wire, which the receiver may have finished decoding after its exit)
    const resent = seqs(receiver).length - before;
    expect(resent).toBeGreaterThanOrEqual(w.written.length - entry.line);
    expect(resent).toBeLessThanOrEqual(w.written.length - entry.line + 8 * BATCH);
    expect(deadLetters(state)).toEqual([]);
    uidsStable(receiver);
  }, 120_000);

  it('a checkpoint from before byte offsets: resumed by line count once, then by offset', async () => {
    receiver = await startOtlpReceiver();
    const { logs, state, config } = setup();
    const w = new Writer();
    const file = join(logs, 'vizportal_1-cepp-canonical-events.log');
    writeFileSync(file, w.lines(30));
    // the entry an earlier version wrote: 20 lines acknowledged, not finished
    mkdirSync(join(state, TENANT), { recursive: true });
    writeFileSync(join(state, TENANT, 'checkpoints.json'), JSON.stringify({ version: 1, savedAt: '', sources: { [`directory:${logs}`]: { objects: { 'vizportal_1-cepp-canonical-events.log': { line: 20 } } } } }));
    const sent = w.written.splice(0, 20);
    daemon(config);
    await allArrived(receiver, w);
    expect(seqs(receiver).some((s) => sent.includes(s))).toBe(false);
    appendFileSync(file, w.lines(5));
    expect((await allArrived(receiver, w)).duplicates).toBe(0);
    // (the checkpoint is written just after the destination answered)
    const entryNow = (): { line: number; offset?: number; file?: unknown } => {
      const cp = readCheckpointState(join(state, TENANT)) as { sources: Record<string, { objects: Record<string, { line: number; offset?: number; file?: unknown }> }> };
      return Object.values(cp.sources)[0]!.objects['vizportal_1-cepp-canonical-events.log']!;
    };
    const entry = await waitFor('the checkpoint of line 35', () => (entryNow().line === 35 ? entryNow() : undefined), 30_000);
    expect(entry).toMatchObject({ line: 35, offset: readFileSync(file).length });
    expect(entry.file).toBeDefined();
  }, 60_000);
});
