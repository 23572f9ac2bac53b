/**
 * One process per tenant state folder: a second daemon or `run --once` on the same state exits 2
 * naming the holder (pid, lock file) and sends nothing; the lock goes away on SIGTERM and at the
 * end of `run --once`; a lock a `kill -9` left behind is taken over with a warning.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { existsSync, readFileSync, writeFileSync, mkdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { TenantStateLock, StateLockedError, processIdentity } from '../src/daemon/tenant-state-lock.js';
import { createLogger } from '../src/daemon/logger.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli, startCli, type CliProcess } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, parseLogLines, type DaemonProcess } from './support/daemon-process.js';

let receiver: OtlpReceiver | undefined;
const running: CliProcess[] = [];
const sleepers: ChildProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  for (const c of sleepers.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await receiver?.close();
});

function setup(url: string): { work: string; config: string; lock: string; records: number } {
  const work = tempDir();
  const tree = writeFixtureTree(join(work, 'logs'), 4, 50);
  const config = join(work, 'config.yaml');
  writeFileSync(
    config,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      'pipeline: { batchSize: 50, maxInFlightBatches: 2 }',
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(url)} } ]`,
    ].join('\n'),
  );
  return { work, config, lock: join(work, 'state', 'acme', 'daemon.lock'), records: tree.records.length };
}

function track<T extends CliProcess>(p: T): T {
  running.push(p);
  return p;
}

/** Records that arrived more than once (a record is its tenant and its `log.record.uid`). */
const duplicates = (r: OtlpReceiver): number => r.records().length - new Set(r.records().map((x) => `${String(x.resource['tableau_activity_otel.tenant'])} ${String(x.attributes['log.record.uid'])}`)).size;

describe('tenant state lock', () => {
  it('a second run on the state of a running daemon exits 2 naming the holder; SIGTERM releases the lock', async () => {
    receiver = await startOtlpReceiver();
    const s = setup(receiver.url);
    const first: DaemonProcess = track(await startDaemon(['--config', s.config]));
    await receiver.waitForRecords(s.records, 20_000);
    const holder = JSON.parse(readFileSync(s.lock, 'utf8')) as { pid: number; host: string; startedAt: string };
    expect(holder.pid).toBe(first.child.pid);
    expect(typeof holder.host).toBe('string');
    expect(Number.isNaN(Date.parse(holder.startedAt))).toBe(false);

    // a second daemon and a run --once on the same state: both refused before they read anything
    const second = await runCli(['run', '--config', s.config, '--listen', '127.0.0.1:0']);
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr).toContain(s.lock);
    expect(second.stderr).toContain(`process ${first.child.pid}`);
    const once = await runCli(['run', '--once', '--config', s.config]);
    expect(once.code, once.stderr).toBe(2);
    expect(once.stderr).toContain(`process ${first.child.pid}`);

    // the first goes on: new data arrives once
    writeFixtureTree(join(s.work, 'logs'), 2, 50, 10_000, 'later');
    await receiver.waitForRecords(s.records + 100, 20_000);
    expect(first.child.exitCode).toBe(null);
    expect(duplicates(receiver)).toBe(0);
    expect(readFileSync(s.lock, 'utf8')).toContain(`"pid":${first.child.pid}`);

    first.child.kill('SIGTERM');
    const r = await first.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(s.lock)).toBe(false);
    // and the state is free again
    const after = await runCli(['run', '--once', '--config', s.config]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stderr).not.toMatch(/stale lock/);
    expect(existsSync(s.lock)).toBe(false);
    expect(duplicates(receiver)).toBe(0);
  }, 90_000);

  it('run --once holds the lock while it runs: a daemon started meanwhile exits 2', async () => {
    receiver = await startOtlpReceiver();
    // the destination answers 503 until the second process has been turned away: the run --once
    // holds the lock (retrying) however slowly the second one starts on a busy machine
    receiver.setStatus(503);
    const s = setup(receiver.url);
    const once = track(startCli(['run', '--once', '--config', s.config]));
    await waitFor('the lock of the run --once', () => existsSync(s.lock) || undefined, 20_000);
    const daemon = await runCli(['run', '--config', s.config, '--listen', '127.0.0.1:0']);
    receiver.setStatus(null);
    expect(daemon.code, daemon.stderr).toBe(2);
    expect(daemon.stderr).toContain(`process ${once.child.pid}`);
    expect(daemon.stderr).toContain(s.lock);
    const r = await once.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(s.lock)).toBe(false);
    expect(new Set(receiver.records().map((x) => x.attributes['tableau.test_seq'])).size).toBe(s.records);
    expect(duplicates(receiver)).toBe(0);
  }, 90_000);

  it('kill -9 leaves a stale lock: the next start takes it over with a warning', async () => {
    receiver = await startOtlpReceiver();
    const s = setup(receiver.url);
    const first = track(await startDaemon(['--config', s.config]));
    await receiver.waitForRecords(s.records, 20_000);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(readFileSync(s.lock, 'utf8')).toContain(`"pid":${first.child.pid}`);

    writeFixtureTree(join(s.work, 'logs'), 1, 50, 10_000, 'later');
    const next = await runCli(['run', '--once', '--config', s.config]);
    expect(next.code, next.stderr).toBe(0);
    const warning = parseLogLines(next.stderr).find((l) => l.msg === 'took over a stale lock of the tenant state (its process is gone)');
    expect(warning, next.stderr).toBeDefined();
    expect(warning!.file).toBe(s.lock);
    expect(String(warning!.reason)).toContain(`process ${first.child.pid} is not running`);
    expect(existsSync(s.lock)).toBe(false);
    await receiver.waitForRecords(s.records + 50, 20_000);
  }, 90_000);

  it('a reload that adds a tenant whose state another process holds fails; the running tenants go on', async () => {
    receiver = await startOtlpReceiver();
    const s = setup(receiver.url);
    const holder = track(await startDaemon(['--config', s.config]));
    await receiver.waitForRecords(s.records, 20_000);
    // a second daemon on the same state directory, first with another tenant only
    const otherLogs = join(s.work, 'other-logs');
    const otherTree = writeFixtureTree(otherLogs, 1, 30, 50_000);
    const tenant = (id: string, dir: string): string[] => [
      `  - id: ${id}`,
      `    sources: [ { type: directory, path: ${JSON.stringify(dir)}, pollInterval: 200ms } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver!.url)} } ]`,
    ];
    const config2 = join(s.work, 'config2.yaml');
    const head = [`state: { dir: ${JSON.stringify(join(s.work, 'state'))} }`, 'tenants:'];
    writeFileSync(config2, [...head, ...tenant('other', otherLogs)].join('\n'));
    const second = track(await startDaemon(['--config', config2]));
    await receiver.waitForRecords(s.records + otherTree.records.length, 20_000);
    writeFileSync(config2, [...head, ...tenant('other', otherLogs), ...tenant('acme', join(s.work, 'logs'))].join('\n'));
    second.child.kill('SIGHUP');
    const failed = await second.waitForLog((l) => l.msg === 'configuration reload failed; the previous configuration keeps running');
    expect(String(failed.err)).toContain(s.lock);
    expect(String(failed.err)).toContain(`process ${holder.child.pid}`);
    // both keep running their own tenant; nothing was read twice
    writeFixtureTree(otherLogs, 1, 30, 60_000, 'later');
    await receiver.waitForRecords(s.records + 2 * otherTree.records.length, 20_000);
    expect(duplicates(receiver)).toBe(0);
    expect(readFileSync(s.lock, 'utf8')).toContain(`"pid":${holder.child.pid}`);
    expect(readFileSync(join(s.work, 'state', 'other', 'daemon.lock'), 'utf8')).toContain(`"pid":${second.child.pid}`);
  }, 90_000);

  it('a lock of another host is not taken over (its pid cannot be checked from here): exit 2 with the way out', async () => {
    receiver = await startOtlpReceiver();
    const s = setup(receiver.url);
    mkdirSync(join(s.work, 'state', 'acme'), { recursive: true });
    const other = { pid: 4242, host: 'some-other-host.example', startedAt: '2026-11-30T01:02:03.000Z', token: 'x' };
    writeFileSync(s.lock, JSON.stringify(other));
    const r = await runCli(['run', '--once', '--config', s.config]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('process 4242 on host some-other-host.example');
    expect(r.stderr).toContain(`remove ${s.lock}`);
    expect(receiver.records()).toHaveLength(0);
    // the file is left as it was
    expect(JSON.parse(readFileSync(s.lock, 'utf8'))).toEqual(other);
  }, 60_000);

  it('several processes starting at once on a stale lock: exactly one takes it over, the others exit 2', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(1500); // the winner holds the lock while the others try
    const s = setup(receiver.url);
    mkdirSync(join(s.work, 'state', 'acme'), { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', '']).pid!; // a pid that no longer runs
    writeFileSync(s.lock, JSON.stringify({ pid: gone, host: hostname(), startedAt: '2026-11-30T00:00:00.000Z', token: 'stale' }));
    const procs = Array.from({ length: 4 }, () => track(startCli(['run', '--once', '--config', s.config])));
    const results = await Promise.all(procs.map((p) => p.exited));
    const codes = results.map((r) => r.code).sort();
    expect(codes, results.map((r) => r.stderr).join('\n')).toEqual([0, 2, 2, 2]);
    const winner = results.find((r) => r.code === 0)!;
    expect(parseLogLines(winner.stderr).some((l) => l.msg === 'took over a stale lock of the tenant state (its process is gone)')).toBe(true);
    expect(existsSync(s.lock)).toBe(false);
    expect(duplicates(receiver)).toBe(0);
    expect(new Set(receiver.records().map((x) => x.attributes['tableau.test_seq'])).size).toBe(s.records);
  }, 90_000);

  it('a lock with this very pid that this process did not take (a container restarted as pid 1) is stale; one it holds is not', () => {
    const dir = join(tempDir(), 'acme');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'daemon.lock'), JSON.stringify({ pid: process.pid, host: hostname(), startedAt: '2026-11-30T00:00:00.000Z', token: 'previous-life' }));
    const lock = TenantStateLock.acquire(dir);
    expect(JSON.parse(readFileSync(join(dir, 'daemon.lock'), 'utf8')).token).toBe(lock.holder.token);
    expect(() => TenantStateLock.acquire(dir)).toThrow(StateLockedError);
    lock.release();
    expect(existsSync(join(dir, 'daemon.lock'))).toBe(false);
    const again = TenantStateLock.acquire(dir);
    again.release();
  });

  it('a takeover in progress elsewhere (its guard file) is not raced; a guard left by a crash is cleared after 30 s', () => {
    const dir = join(tempDir(), 'acme');
    mkdirSync(dir, { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    const stale = JSON.stringify({ pid: gone, host: hostname(), startedAt: '2026-11-30T00:00:00.000Z', token: 'stale' });
    writeFileSync(join(dir, 'daemon.lock'), stale);
    const guard = join(dir, 'daemon.lock.takeover');
    writeFileSync(guard, '');
    expect(() => TenantStateLock.acquire(dir)).toThrow(/another process keeps taking it/);
    expect(readFileSync(join(dir, 'daemon.lock'), 'utf8')).toBe(stale);
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(guard, old, old);
    const lock = TenantStateLock.acquire(dir);
    expect(JSON.parse(readFileSync(join(dir, 'daemon.lock'), 'utf8')).pid).toBe(process.pid);
    expect(existsSync(guard)).toBe(false);
    lock.release();
  });

  describe.runIf(processIdentity(process.pid) !== undefined)('a pid that runs but is another process (Linux: the holder identified by boot and start time)', () => {
    /** A live process that is not a daemon: its pid stands for a crashed holder's pid taken by someone else. */
    async function otherProcess(): Promise<number> {
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      sleepers.push(child);
      await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
      return child.pid!;
    }
    function lockAt(holder: Record<string, unknown>): { dir: string; file: string } {
      const dir = join(tempDir(), 'acme');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 'daemon.lock');
      writeFileSync(file, JSON.stringify({ host: hostname(), startedAt: '2026-11-30T00:00:00.000Z', token: 'crashed', ...holder }));
      return { dir, file };
    }
    function acquireLogged(dir: string): { lock: TenantStateLock; lines: Array<Record<string, unknown>> } {
      const lines: Array<Record<string, unknown>> = [];
      const log = createLogger('info', { format: 'json', out: { print: (t) => lines.push(JSON.parse(t) as Record<string, unknown>) } });
      return { lock: TenantStateLock.acquire(dir, log), lines };
    }

    it('its identity is stable for one process and differs between two; a pid that does not run has none', async () => {
      const pid = await otherProcess();
      expect(processIdentity(process.pid)).toBe(processIdentity(process.pid));
      expect(processIdentity(process.pid)).toMatch(/^[0-9a-f-]{36}\/\d+$/);
      const other = processIdentity(pid);
      expect(other).toBeDefined();
      expect(other).not.toBe(processIdentity(process.pid));
      expect(other!.split('/')[0]).toBe(processIdentity(process.pid)!.split('/')[0]);
      const gone = spawnSync(process.execPath, ['-e', '']).pid!;
      expect(processIdentity(gone)).toBeUndefined();
    });

    it('a lock this process takes records its identity', () => {
      const dir = join(tempDir(), 'acme');
      const lock = TenantStateLock.acquire(dir);
      expect(JSON.parse(readFileSync(join(dir, 'daemon.lock'), 'utf8')).process).toBe(processIdentity(process.pid));
      lock.release();
    });

    it('a live pid whose start time is not the holder\'s (the pid reused after a crash) is stale: taken over with a warning', async () => {
      const pid = await otherProcess();
      const [boot, start] = processIdentity(pid)!.split('/');
      const { dir, file } = lockAt({ pid, process: `${boot}/${Number(start) - 1}` });
      const { lock, lines } = acquireLogged(dir);
      expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(lock.holder.token);
      const warning = lines.find((l) => l.msg === 'took over a stale lock of the tenant state (its process is gone)');
      expect(warning?.reason).toBe(`process ${pid} is gone; the pid is another process's now`);
      lock.release();
    });

    it('a live pid recorded before the host restarted (another boot id) is stale', async () => {
      const pid = await otherProcess();
      const start = processIdentity(pid)!.split('/')[1];
      const { dir } = lockAt({ pid, process: `00000000-0000-0000-0000-000000000000/${start}` });
      const { lock, lines } = acquireLogged(dir);
      expect(lines.find((l) => l.msg?.toString().startsWith('took over a stale lock'))?.reason).toBe(`process ${pid} ran under another boot (the host restarted, or another machine of the same name on a shared volume); the pid is another process's now`);
      lock.release();
    });

    it('a holder that has exited but was not reaped (a zombie: kill(pid, 0) still answers) is stale', async () => {
      // The child exits once its parent has become `sleep 60` (which never reaps it): not before,
      // or the shell may reap it first (a child that exited at once did so under load, and never
      // became a zombie), and not after its parent is gone. In the subshell, $$ is the parent's pid.
      const parent = spawn('sh', ['-c', '(while [ -e /proc/$$ ] && [ "$(cat /proc/$$/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 60'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      sleepers.push(parent);
      const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))));
      const state = (): string | undefined => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
        } catch {
          return undefined;
        }
      };
      await waitFor('the child to be a zombie', () => state() === 'Z' || undefined, 10_000, 20);
      expect(() => process.kill(pid, 0)).not.toThrow(); // what a pid check alone sees: a live process
      const { dir, file } = lockAt({ pid, process: processIdentity(pid) });
      const { lock, lines } = acquireLogged(dir);
      expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(lock.holder.token);
      expect(lines.find((l) => l.msg?.toString().startsWith('took over a stale lock'))?.reason).toBe(`process ${pid} has exited (its parent has not reaped it yet)`);
      lock.release();
    });

    it('the holder itself still running (its identity matches) is refused, and so is a live pid in a lock without an identity', async () => {
      const pid = await otherProcess();
      const same = lockAt({ pid, process: processIdentity(pid) });
      expect(() => TenantStateLock.acquire(same.dir)).toThrow(new RegExp(`in use by process ${pid} `));
      expect(JSON.parse(readFileSync(same.file, 'utf8')).token).toBe('crashed');
      const older = lockAt({ pid }); // written by a build before the identity, or not on Linux
      expect(() => TenantStateLock.acquire(older.dir)).toThrow(StateLockedError);
      expect(JSON.parse(readFileSync(older.file, 'utf8')).token).toBe('crashed');
    });
  });
});
