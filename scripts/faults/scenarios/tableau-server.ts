/**
 * `tableau-server`: the `server-node` writers (four process folders, processes appending
 * `<process>-cepp-canonical-events_*.log` with half-written lines, rotating by rename and by
 * copy-and-truncate) read by `type: tableau-server` instead of `directory`, the files in all
 * three line forms (vizqlserver `event`-wrapped, backgrounder in Tableau's native form, the
 * others flat) and other logs beside them in the folders. The daemon is killed with -9 once in
 * the middle and started again while the writers go on. Every record must arrive, duplicates
 * only from the batches in flight at the kill, the same `log.record.uid` on every re-send,
 * nothing dead-lettered, nothing of the other logs read, and every record with its node and
 * process folder on the resource (`service.name` tableau-server, `host.name`,
 * `tableau.server.process`).
 */
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { judge, readDeadLetters, resultOf, sleep, waitFor, type Scenario } from '../lib/harness.js';
import { ProcessLog } from './server-node.js';

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const HOST = 'tableau-node-2';
const FOLDERS = ['backgrounder', 'dataserver', 'vizportal', 'vizqlserver'] as const;
const FORM: Record<string, 'flat' | 'event' | 'native'> = { backgrounder: 'native', dataserver: 'flat', vizportal: 'flat', vizqlserver: 'event' };
const TYPES = ['hist_access_view', 'login_authentication', 'vizql_http_request', 'add_delete_user_to_group'];

export const tableauServer: Scenario = {
  name: 'tableau-server',
  title: 'type: tableau-server on a node: four folders, flat/event/native lines, half lines, rotation both ways, kill -9 once',
  async run(ctx, { short }) {
    const BATCH = 100;
    const IN_FLIGHT = 4;
    const PER_FOLDER = short ? 1 : 2;
    const TICKS = short ? 150 : 500;
    const PER_TICK = 4;
    const ROTATE_EVERY = short ? 40 : 60;
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    receiver.setDelay(40);
    const work = ctx.dir('work');
    const logs = join(work, 'data', 'tabsvc', 'logs');
    const state = join(work, 'state');
    const procs: Array<{ log: ProcessLog; folder: string }> = [];
    for (const folder of FOLDERS) {
      mkdirSync(join(logs, folder), { recursive: true });
      for (let i = 0; i < PER_FOLDER; i++) procs.push({ log: new ProcessLog(join(logs, folder), `${folder}_${i}`), folder });
      // the process's other logs: JSON lines too, never read
      writeFileSync(join(logs, folder, `${folder}_0.log`), `${JSON.stringify({ eventTime: '2026-11-29T10:00:00Z', eventType: 'hist_access_view', testSeq: -1 })}\n`);
    }
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: IN_FLIGHT },
      tenants: [{ id: 'node', sources: [{ type: 'tableau-server', logsDir: logs, hostName: HOST, pollInterval: '200ms' }], destinations: [{ type: 'otlp', endpoint: receiver.url }] }],
    });

    let seq = 0;
    const valid: number[] = [];
    const folderOf = new Map<number, string>();
    const line = (folder: string): string => {
      const s = seq++;
      valid.push(s);
      folderOf.set(s, folder);
      const rec = { eventTime: `2026-11-29T10:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.${String(s).padStart(6, '0')}Z`, eventType: TYPES[s % TYPES.length], siteLuid: SITE, actorUserLuid: `user-${s % 13}`, testSeq: s };
      const form = FORM[folder]!;
      const value = form === 'flat' ? rec : form === 'event' ? { traceUuid: `t-${s}`, ts: rec.eventTime, event: rec } : { ts: rec.eventTime, pid: 4000 + (s % 7), tid: 'a1', sev: 'info', req: `r-${s}`, sess: 'S', site: 'Default', user: 'u', k: 'cepp', v: rec };
      return `${JSON.stringify(value)}\n`;
    };

    let d = ctx.start(['run', '--config', config]);
    const rotations = { rename: 0, copytruncate: 0 };
    let killed = false;
    const extra: string[] = [];
    for (let t = 0; t < TICKS; t++) {
      for (const p of procs) p.log.write(Array.from({ length: PER_TICK }, () => line(p.folder)), Math.random() < 0.5);
      if (t > 0 && t % ROTATE_EVERY === 0) for (const p of procs) rotations[p.log.rotate() as 'rename' | 'copytruncate']++;
      if (!killed && t === Math.floor(TICKS / 2)) {
        await waitFor(() => receiver.records().length > BATCH * 2 || !d.alive, 30_000);
        if (!d.alive) extra.push('the daemon exited before the kill');
        d.kill('SIGKILL');
        await d.exited;
        killed = true;
        d = ctx.start(['run', '--config', config]);
      }
      await sleep(20);
    }
    for (const p of procs) p.log.finish();
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
    let wrongResource = 0;
    for (const r of records) {
      const s = Number(r.attributes['tableau.test_seq']);
      uids.set(s, (uids.get(s) ?? new Set()).add(r.attributes['log.record.uid']));
      const res = r.resource;
      if (res['service.name'] !== 'tableau-server' || res['host.name'] !== HOST || res['tableau.server.process'] !== folderOf.get(s)) wrongResource++;
    }
    const unstable = [...uids.values()].filter((u) => u.size !== 1).length;
    if (unstable > 0) extra.push(`${unstable} records re-sent with a different log.record.uid`);
    if (wrongResource > 0) extra.push(`${wrongResource} records without their node and process folder on the resource`);
    const bound = (IN_FLIGHT + 2) * BATCH;
    const j = judge(records, readDeadLetters(state, 'node'), { valid, dupBound: bound, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [
      `${procs.length} processes in ${FOLDERS.length} folders (event, native and flat lines)`,
      `${rotations.rename} rotations by rename, ${rotations.copytruncate} by copytruncate`,
      '1 kill -9',
      `duplicate bound ${bound} (in-flight ${IN_FLIGHT} + 2) × batch ${BATCH}`,
    ]);
  },
};
