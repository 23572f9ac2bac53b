/**
 * Synchronous file calls on the main thread, where they are safe: on a local filesystem, for the
 * directory source's `stat`s (of files, and of folders known to be on their parent's device),
 * `readdir`s and file reads, and for a checkpoint save's calls other than its `fsync`s
 * (checkpoint-store.ts).
 *
 * Each asynchronous call (`fs/promises`) is a handoff to libuv's pool and back: on this project's
 * machines 40-60 µs of CPU between the two threads' wake-ups, where the synchronous call takes
 * 2-7 µs (docs/performance.md). An Activity Log is mostly small objects (one per site, hour and
 * event type), each of which took five such calls to read and one more at every listing: on a
 * backlog of small objects, more CPU than the mapping and encoding of their records. A big
 * object's reads (256 KiB each) are made the same way: some 1 000 handoffs for the bench's plain
 * corpus of 255 MB.
 *
 * A synchronous call blocks the event loop for as long as it takes, so it is made only:
 * - on a filesystem known to be local (`statfs` type: ext2/3/4, xfs, btrfs, tmpfs, overlay, ...),
 *   found out once per device with an asynchronous `statfs`; until then, and for a network or
 *   FUSE filesystem (NFS, SMB, a mounted bucket) whose call may take a round trip or hang, the
 *   calls stay asynchronous;
 * - for as long as the device stays fast: one call slower than SLOW_CALL_MS (a disk under
 *   pressure) sends that device's calls back to the pool for the rest of the process's life;
 * - in slices: once synchronous work has held the loop for SLICE_MS without the loop turning,
 *   `breathe()` lets it turn (timers, HTTP responses, the health endpoint) before the next call.
 */
import { statfs } from 'node:fs/promises';
import type { Logger } from './logger.js';

/** `statfs` f_type values of local filesystems (linux/magic.h). */
const LOCAL_FILESYSTEMS = new Set<number>([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0x794c7630, // overlayfs (a container's own filesystem)
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
  0x3153464a, // jfs
  0xca451a4e, // bcachefs
]);

/** A synchronous call slower than this sends its device's calls back to libuv's pool. */
export const SLOW_CALL_MS = 50;
/** Synchronous work the event loop is held for at most before it is let to turn. */
export const SLICE_MS = 5;

export type FilesystemProbe = (path: string) => Promise<number>;

export class LocalSyncCalls {
  /**
   * Per device: whether its calls may be synchronous, the probe finding it out, or (a number)
   * when a probe that failed (the path removed meanwhile, say) may be tried again.
   */
  private readonly devices = new Map<number, boolean | Promise<void> | number>();
  /** When the current slice of synchronous work began (-1: none since the loop last turned). */
  private sliceStart = -1;
  /** Synchronous calls made (for tests and the bench). */
  calls = 0;

  constructor(
    /** false: every call asynchronous. */
    private readonly enabled = process.platform === 'linux',
    private readonly probe: FilesystemProbe = async (path) => Number((await statfs(path)).type),
    /** After a probe failed, how long before the device is probed again. */
    private readonly retryMs = 60_000,
  ) {}

  /**
   * Whether calls on device `dev` may be synchronous now. A device not seen before is found out
   * (with an asynchronous `statfs` of `path`, a file or folder on it) for later calls: not yet.
   */
  allows(dev: number, path: string): boolean {
    if (!this.enabled) return false;
    const known = this.devices.get(dev);
    if (typeof known === 'boolean') return known;
    if (known === undefined || (typeof known === 'number' && Date.now() >= known)) {
      this.devices.set(
        dev,
        this.probe(path).then(
          (type) => {
            if (this.devices.get(dev) !== false) this.devices.set(dev, LOCAL_FILESYSTEMS.has(type));
          },
          () => {
            if (this.devices.get(dev) !== false) this.devices.set(dev, Date.now() + this.retryMs);
          },
        ),
      );
    }
    return false;
  }

  /** Waits until device `dev` is found out, if it is being (for tests: the next call then knows). */
  async settled(dev: number): Promise<void> {
    const known = this.devices.get(dev);
    if (known instanceof Promise) await known;
  }

  /** Makes the synchronous call `call` on device `dev`; a slow one turns the device asynchronous (logged once). */
  run<T>(dev: number, call: () => T, log?: Logger): T {
    const started = performance.now();
    if (this.sliceStart < 0) {
      this.sliceStart = started;
      setImmediate(() => (this.sliceStart = -1)); // the loop turned: a new slice
    }
    this.calls++;
    try {
      return call();
    } finally {
      const took = performance.now() - started;
      if (took > SLOW_CALL_MS && this.devices.get(dev) === true) {
        this.devices.set(dev, false);
        log?.warn({ device: dev, ms: Math.round(took) }, 'a synchronous file call was slow: this filesystem is read through the thread pool from now on');
      }
    }
  }

  /** `run`, once the event loop was let to turn if synchronous work has held it for a slice. */
  async call<T>(dev: number, call: () => T, log?: Logger): Promise<T> {
    await this.breathe();
    return this.run(dev, call, log);
  }

  /** Lets the event loop turn once synchronous work has held it for SLICE_MS. */
  async breathe(): Promise<void> {
    await this.turnDue();
  }

  /**
   * The loop's turn, when synchronous work has held it for SLICE_MS (await it); otherwise
   * undefined, and no promise made: a listing's thousands of `stat`s need not each be awaited.
   */
  turnDue(): Promise<void> | undefined {
    if (this.sliceStart >= 0 && performance.now() - this.sliceStart >= SLICE_MS) return new Promise<void>((resolve) => setImmediate(resolve));
    return undefined;
  }
}

/** The process's: devices are facts of the machine, shared by every source. */
export const localSyncCalls = new LocalSyncCalls();
