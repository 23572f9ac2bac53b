/**
 * `server-node`: a simulated Tableau Server node. Four folders (backgrounder, dataserver,
 * vizportal, vizqlserver), each with processes writing `<process>-cepp-canonical-events_*.log`
 * at a steady rate, often leaving a line half-written until the next write, and rotating their
 * file every so often, by rename (the writer finishes its half line through the file handle it
 * still has, then opens a new file) and by copy-and-truncate (logrotate's `copytruncate`). The
 * daemon runs in daemon mode throughout and is killed with -9 once in the middle, then started
 * again while the writers go on. Every record must arrive, duplicates only from the batches in
 * flight at the kill, the same `log.record.uid` on every re-send, and nothing dead-lettered
 * (a half-written line is never read as a record).
 */
import { join } from 'node:path';
import { closeSync, copyFileSync, ftruncateSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { judge, readDeadLetters, resultOf, sleep, waitFor, type Scenario } from '../lib/harness.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const FOLDERS = ['backgrounder', 'dataserver', 'vizportal', 'vizqlserver'];
const TYPES = ['hist_access_view', 'login_authentication', 'vizql_http_request', 'add_delete_user_to_group'];

/** One process's log (also the tableau-server scenario's): an open file it appends to, a half line now and then, rotation both ways. */
export class ProcessLog {
  private fd: number;
  private half = '';
  private rotations = 0;
  constructor(
    private readonly dir: string,
    private readonly process: string,
  ) {
    this.fd = openSync(this.active, 'a');
  }
  get active(): string {
    return join(this.dir, `${this.process}-cepp-canonical-events_current.log`);
  }
  /** Appends `lines` (the half line left last time finished first), and maybe leaves half of the last one for later. */
  write(lines: string[], leaveHalf: boolean): void {
    let text = this.half;
    this.half = '';
    if (leaveHalf && lines.length > 0) {
      const last = lines.pop()!;
      const cut = 1 + Math.floor(Math.random() * (last.length - 1));
      text += lines.join('') + last.slice(0, cut);
      this.half = last.slice(cut);
    } else text += lines.join('');
    if (text) writeSync(this.fd, text);
  }
  rotate(): string {
    this.rotations++;
    const stamp = `${this.process}-cepp-canonical-events_2026_11_29_${String(this.rotations).padStart(4, '0')}.log`;
    if (this.rotations % 2 === 1) {
      // by rename: the writer still holds the file and finishes its half line there
      renameSync(this.active, join(this.dir, stamp));
      if (this.half) writeSync(this.fd, this.half);
      this.half = '';
      closeSync(this.fd);
      this.fd = openSync(this.active, 'a');
      return 'rename';
    }
    // copytruncate: a half line at the copy would be torn by logrotate itself, so it is finished first
    if (this.half) writeSync(this.fd, this.half);
    this.half = '';
    copyFileSync(this.active, join(this.dir, stamp));
    ftruncateSync(this.fd, 0);
    return 'copytruncate';
  }
  finish(): void {
    if (this.half) writeSync(this.fd, this.half);
    this.half = '';
    closeSync(this.fd);
  }
}

export const serverNode: Scenario = {
  name: 'server-node',
  title: 'Tableau Server node: growing, half-written and rotated files (rename, copytruncate), kill -9 once',
  async run(ctx, { short }) {
    const BATCH = 100;
    const IN_FLIGHT = 4;
    const PER_FOLDER = short ? 1 : 2;
    const TICKS = short ? 150 : 500;
    const PER_TICK = 4; // lines per process per tick
    const ROTATE_EVERY = short ? 40 : 60; // ticks
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(40); // answers take a while: the kill cuts requests in flight (re-sent after the restart)
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const state = join(work, 'state');
    const procs: ProcessLog[] = [];
    for (const folder of FOLDERS) {
      mkdirSync(join(logs, folder), { recursive: true });
      for (let i = 0; i < PER_FOLDER; i++) procs.push(new ProcessLog(join(logs, folder), `${folder}_${i}`));
    }
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT },
      tenants: [{ id: 'node', sources: [{ type: 'directory', path: logs, pollInterval: '200ms' }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }],
    });

    let seq = 0;
    const valid: number[] = [];
    const line = (): string => {
      const s = seq++;
      valid.push(s);
      const type = TYPES[s % TYPES.length]!;
      return `${JSON.stringify({ eventTime: `2026-11-29T10:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.${String(s).padStart(6, '0')}Z`, eventType: type, siteLuid: SITE, actorUserLuid: `user-${s % 13}`, testSeq: s })}\n`;
    };

    let d = ctx.start(['run', '--config', config]);
    const rotations = { rename: 0, copytruncate: 0 };
    let killed = false;
    const extra: string[] = [];
    for (let t = 0; t < TICKS; t++) {
      for (const p of procs) {
        const lines = Array.from({ length: PER_TICK }, line);
        p.write(lines, Math.random() < 0.5);
      }
      if (t > 0 && t % ROTATE_EVERY === 0) for (const p of procs) rotations[p.rotate() as 'rename' | 'copytruncate']++;
      if (!killed && t === Math.floor(TICKS / 2)) {
        // once the daemon has delivered part of it, kill -9 and start again, the writers going on
        await waitFor(() => receiver.records().length > BATCH * 2 || !d.alive, 30_000);
        if (!d.alive) extra.push('the daemon exited before the kill');
        d.kill('SIGKILL');
        await d.exited;
        killed = true;
        d = ctx.start(['run', '--config', config]);
      }
      await sleep(20);
    }
    for (const p of procs) p.finish();
    const all = new Set(valid);
    const arrived = await waitFor(() => {
      const got = new Set(receiver.records().map((r) => Number(r.attributes['tableau.test_seq'])));
      for (const s of all) if (!got.has(s)) return false;
      return true;
    }, 120_000, 200);
    if (!arrived) extra.push('not every record arrived within 120 s of the last write');
    if (!d.alive) extra.push('the daemon exited on its own');
    await ctx.stop(d);

    const records = receiver.records();
    const uids = new Map<unknown, Set<unknown>>();
    for (const r of records) {
      const s = r.attributes['tableau.test_seq'];
      uids.set(s, (uids.get(s) ?? new Set()).add(r.attributes['log.record.uid']));
    }
    const unstable = [...uids.values()].filter((s) => s.size !== 1).length;
    if (unstable > 0) extra.push(`${unstable} records re-sent with a different log.record.uid`);
    const bound = (IN_FLIGHT + 2) * BATCH;
    const j = judge(records, readDeadLetters(state, 'node'), { valid, dupBound: bound, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [
      `${procs.length} processes in ${FOLDERS.length} folders`,
      `${rotations.rename} rotations by rename, ${rotations.copytruncate} by copytruncate`,
      '1 kill -9',
      `duplicate bound ${bound} (in-flight ${IN_FLIGHT} + 2) × batch ${BATCH}`,
    ]);
  },
};
