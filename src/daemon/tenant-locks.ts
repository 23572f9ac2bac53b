/** The lock of every tenant state folder this process uses (a second process on the same state stops before it starts anything). */
import { join } from 'node:path';
import type { Logger } from './logger.js';
import { TenantStateLock } from './tenant-state-lock.js';

export class TenantLocks {
  /** By folder. */
  private readonly locks = new Map<string, TenantStateLock>();

  constructor(private readonly log: Logger) {}

  /** Lock these tenants' folders; returns the locks taken now (on an error, those are released again). Throws StateLockedError naming the holder. */
  lock(stateDir: string, ids: string[]): TenantStateLock[] {
    const taken: TenantStateLock[] = [];
    try {
      for (const id of ids) {
        const dir = join(stateDir, id);
        if (this.locks.get(dir)?.isHeld) continue;
        const lock = TenantStateLock.acquire(dir, this.log.child({ tenant: id }));
        this.locks.set(dir, lock);
        taken.push(lock);
      }
    } catch (err) {
      this.release(taken);
      throw err;
    }
    return taken;
  }

  release(locks: Iterable<TenantStateLock>): void {
    for (const lock of [...locks]) {
      lock.release();
      for (const [dir, l] of this.locks) if (l === lock) this.locks.delete(dir);
    }
  }

  /** Release the locks of the folders not in `keep` (after a reload stopped the tenants that used them; none kept: every lock). */
  releaseAllBut(stateDir: string | undefined, keep: Iterable<string>): void {
    const kept = new Set(stateDir === undefined ? [] : [...keep].map((id) => join(stateDir, id)));
    this.release([...this.locks].filter(([dir]) => !kept.has(dir)).map(([, l]) => l));
  }
}
