/**
 * One process per tenant state folder: `<state>/<tenant>/daemon.lock`, created with O_EXCL and
 * holding the holder's pid, host and start time. Two daemons (or a daemon and a `run --once`) on
 * one state directory would both read every object and both move the same checkpoint: every
 * record would be sent twice.
 *
 * - A lock whose pid no longer runs on this host (a `kill -9`, a crash, a container restarted
 *   with the same pid) is stale: the next start takes it over with a warning. So is one whose pid
 *   runs but is another process: on Linux the lock also holds the holder's identity (the boot's id
 *   and the process's start time from `/proc`), since pids wrap (at 32 768 by default) and a reboot
 *   starts them again, so a crashed daemon's pid may belong to anything by the time it restarts.
 *   A holder that has exited but was not reaped yet (a zombie) is stale as well.
 * - A lock held by a running process, or by another host (a shared volume: its pid cannot be
 *   checked from here), is refused with a {@link StateLockedError} that names the holder and the file.
 * - Released when the daemon stops (SIGTERM, the end of `run --once`) and, as a last resort, at
 *   process exit (`process.exit`, an uncaught error), but only while the file is still ours.
 *
 * (proper-lockfile was measured and not chosen: it does not record who holds a lock, and a lock a
 * `kill -9` left behind is refused until its mtime is `stale` old, 10 s by default.)
 */
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Logger } from './logger.js';
import { readTextIfExists } from '../core/read-text-if-exists.js';

export const LOCK_FILE_NAME = 'daemon.lock';

/** What a lock file holds. */
export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  /** Unique per acquisition: a release removes only its own file. */
  token: string;
  /** Linux: `<boot id>/<start time in clock ticks>` of the holder (see {@link processIdentity}); absent elsewhere. */
  process?: string;
}

export class StateLockedError extends Error {
  constructor(
    readonly file: string,
    readonly holder: Partial<LockHolder> | undefined,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'StateLockedError';
  }
}

/** Held locks of this process, released at exit if nobody released them before. */
const held = new Set<TenantStateLock>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const l of [...held]) l.release();
  });
}

/** A lock file that cannot be parsed is left alone this long (it may be being written). */
const UNREADABLE_LOCK_GRACE_MS = 10_000;

function ageMs(file: string): number {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return Infinity;
  }
}

/** A takeover in progress older than this was cut short (its process died): it is ignored. */
const TAKEOVER_STALE_MS = 30_000;

export class TenantStateLock {
  private released = false;

  private constructor(
    readonly file: string,
    readonly holder: LockHolder,
  ) {}

  /** Take the lock of this tenant state folder (created if missing). Throws StateLockedError when another process holds it. */
  static acquire(dir: string, log?: Logger): TenantStateLock {
    mkdirSync(dir, { recursive: true });
    const file = join(dir, LOCK_FILE_NAME);
    const me: LockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), token: randomUUID() };
    const identity = processIdentity(process.pid);
    if (identity !== undefined) me.process = identity;
    for (let attempt = 0; attempt < 5; attempt++) {
      if (tryCreate(file, me)) return TenantStateLock.keep(file, me);
      const text = readTextIfExists(file);
      if (text === undefined) continue; // gone meanwhile: try again
      const holder = parseHolder(text);
      if (!holder && ageMs(file) < UNREADABLE_LOCK_GRACE_MS) {
        // (only where hard links are missing can a lock be seen half written: give its writer time)
        throw new StateLockedError(file, undefined, `a lock file that is not (yet) readable: another process may be starting; if none is, remove ${file}`);
      }
      const why = staleReason(holder);
      if (why === undefined) {
        const h = holder!;
        const where = h.host === me.host ? '' : ` on host ${h.host}`;
        throw new StateLockedError(
          file,
          h,
          `the tenant state is in use by process ${h.pid}${where} (since ${h.startedAt}); two processes on one state directory would send every record twice. Stop that process, or give this one another state.dir${h.host === me.host ? '' : `; if that process is gone, remove ${file}`}`,
        );
      }
      if (takeOver(file, text, me)) {
        log?.warn({ file, stale: holder ?? text.slice(0, 200), reason: why }, 'took over a stale lock of the tenant state (its process is gone)');
        return TenantStateLock.keep(file, me);
      }
    }
    throw new StateLockedError(file, undefined, 'cannot take the lock of the tenant state: another process keeps taking it');
  }

  private static keep(file: string, me: LockHolder): TenantStateLock {
    const lock = new TenantStateLock(file, me);
    held.add(lock);
    installExitHook();
    return lock;
  }

  /** Remove the lock file, if it is still this acquisition's. */
  release(): void {
    if (this.released) return;
    this.released = true;
    held.delete(this);
    const text = readTextIfExists(this.file);
    if (text === undefined || parseHolder(text)?.token !== this.holder.token) return;
    try {
      unlinkSync(this.file);
    } catch {
      /* already gone */
    }
  }

  get isHeld(): boolean {
    return !this.released;
  }
}

/**
 * Create the lock file with its whole content at once: written to a temporary file first, then
 * hard-linked to the lock's name (which fails when that exists), so no other process ever reads
 * a lock file half written.
 */
function tryCreate(file: string, me: LockHolder): boolean {
  const tmp = `${file}.${me.pid}.${me.token}.tmp`;
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // a filesystem without hard links (some network and desktop volume mounts): O_EXCL alone
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') return createExclusive(file, me);
      throw err;
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      /* gone */
    }
  }
}

function createExclusive(file: string, me: LockHolder): boolean {
  const fd = openSync(file, 'wx', 0o644);
  try {
    writeSync(fd, `${JSON.stringify(me)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return true;
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const j = JSON.parse(text) as Partial<LockHolder>;
    if (typeof j.pid === 'number' && Number.isInteger(j.pid) && j.pid > 0 && typeof j.host === 'string' && typeof j.token === 'string') {
      const holder: LockHolder = { pid: j.pid, host: j.host, startedAt: String(j.startedAt ?? ''), token: j.token };
      if (typeof j.process === 'string') holder.process = j.process;
      return holder;
    }
  } catch {
    /* not JSON */
  }
  return undefined;
}

/** Why a lock is stale, or undefined when its holder may still be running. */
function staleReason(holder: LockHolder | undefined): string | undefined {
  // lock files are created whole (tryCreate): one that is still not a lock after a while is debris
  if (!holder) return 'the file is not a lock of this program';
  if (holder.host !== hostname()) return undefined;
  // this process holds no lock it did not take itself: a file with our pid is a previous life's
  // (a container restarted after kill -9 runs as pid 1 again)
  if (holder.pid === process.pid) return [...held].some((l) => l.holder.token === holder.token) ? undefined : `process ${holder.pid} is this process, started again`;
  if (!isRunning(holder.pid)) return `process ${holder.pid} is not running`;
  const now = procEntry(holder.pid);
  // a zombie answers kill(pid, 0) but holds nothing: it has exited, its parent has not reaped it
  if (now?.exited) return `process ${holder.pid} has exited (its parent has not reaped it yet)`;
  if (holder.process === undefined) return undefined; // a lock without the identity (not Linux): the pid is all there is
  if (now === undefined) return undefined; // cannot tell (no /proc here, or it just exited): assume it runs
  if (now.identity === holder.process) return undefined;
  const [bootThen] = holder.process.split('/');
  const [bootNow] = now.identity.split('/');
  return bootThen !== bootNow
    ? `process ${holder.pid} ran under another boot (the host restarted, or another machine of the same name on a shared volume); the pid is another process's now`
    : `process ${holder.pid} is gone; the pid is another process's now`;
}

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';
let bootId: string | null | undefined;

/** What `/proc` says of a pid: its identity (see {@link processIdentity}), and whether it has exited (a zombie). */
function procEntry(pid: number): { identity: string; exited: boolean } | undefined {
  if (bootId === undefined) {
    try {
      bootId = readFileSync(BOOT_ID_FILE, 'utf8').trim() || null;
    } catch {
      bootId = null;
    }
  }
  if (bootId === null) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so count from the last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const startTime = fields[19]; // field 22 of the line; fields[0] is field 3, the state
  if (startTime === undefined || !/^\d+$/.test(startTime)) return undefined;
  return { identity: `${bootId}/${startTime}`, exited: fields[0] === 'Z' || fields[0] === 'X' };
}

/**
 * Who a pid is, beyond the number: `<boot id>/<start time>`, the kernel's id of this boot and the
 * process's start time in clock ticks after it (field 22 of `/proc/<pid>/stat`). Two processes
 * with one pid never share both. Undefined where `/proc` cannot tell (not Linux, the process gone).
 */
export function processIdentity(pid: number): string | undefined {
  return procEntry(pid)?.identity;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Replace a stale lock. Two processes that both found it stale must not both win: the takeover
 * itself is guarded by an O_EXCL file, and the stale lock is replaced only if it is still the
 * one that was judged stale.
 */
function takeOver(file: string, staleText: string, me: LockHolder): boolean {
  const guard = `${file}.takeover`;
  let fd: number;
  try {
    fd = openSync(guard, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // another takeover in progress; one that died mid-way is cleared after a while
    try {
      if (Date.now() - statSync(guard).mtimeMs > TAKEOVER_STALE_MS) unlinkSync(guard);
    } catch {
      /* gone meanwhile */
    }
    return false;
  }
  closeSync(fd);
  try {
    if (readTextIfExists(file) !== staleText) return false; // someone else replaced it meanwhile
    // replaced in one step (rename over it), never removed first: a process starting meanwhile
    // finds a lock at every moment, so the one that took it over is the one that holds it
    const tmp = `${file}.${me.pid}.${me.token}.tmp`;
    const fd = openSync(tmp, 'wx', 0o644);
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    return true;
  } finally {
    try {
      unlinkSync(guard);
    } catch {
      /* gone */
    }
  }
}
