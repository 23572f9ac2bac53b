/**
 * The cores this process may actually use: `os.availableParallelism()` (the CPUs of its affinity
 * mask), capped by a CPU quota of its cgroup: Kubernetes' CPU limit of a container, `docker run
 * --cpus`, systemd's CPUQuota. Node 20 does not look at the quota, so a pod limited to one CPU on
 * a 16-core node would start as many encode workers as on the whole node, and each one costs a
 * heap of its own. cgroup v2 (`cpu.max`: "QUOTA PERIOD" or "max PERIOD", on the process's own
 * cgroup and every parent up to the root, the smallest wins) and v1 (`cpu.cfs_quota_us` /
 * `cpu.cfs_period_us`) are read; a fractional quota is rounded up (1.5 CPUs: 2 cores to share).
 * Anything unreadable counts as no quota.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

export interface CoreSources {
  /** `os.availableParallelism()` by default. */
  parallelism?: number;
  /** Where the cgroup file systems are mounted (default /sys/fs/cgroup). */
  cgroupRoot?: string;
  /** The text of /proc/self/cgroup (read by default). */
  procSelfCgroup?: string;
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** CPUs a quota allows ("150000 100000" → 1.5), or undefined for no quota / unreadable. */
function quotaOf(quota: number, period: number): number | undefined {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return undefined;
  return quota / period;
}

/** The smallest CPU quota on the way from the process's cgroup up to the root, if any. */
export function cgroupCpuQuota(sources: CoreSources = {}): number | undefined {
  const root = sources.cgroupRoot ?? '/sys/fs/cgroup';
  const self = sources.procSelfCgroup ?? read('/proc/self/cgroup') ?? '';
  let best: number | undefined;
  const consider = (q: number | undefined): void => {
    if (q !== undefined && (best === undefined || q < best)) best = q;
  };
  for (const line of self.split('\n')) {
    // "hierarchy-ID:controllers:path": v2 is "0::/path"; v1 lists its controllers ("4:cpu,cpuacct:/path")
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const controllers = m[2]!;
    const cgroupPath = m[3]!;
    const v2 = m[1] === '0' && controllers === '';
    if (!v2 && !controllers.split(',').includes('cpu')) continue;
    // the process's own cgroup, then each parent (in a container its path is often just "/")
    const parts = cgroupPath.split('/').filter(Boolean);
    for (let n = parts.length; n >= 0; n--) {
      const rel = parts.slice(0, n).join('/');
      if (v2) {
        const text = read(join(root, rel, 'cpu.max'));
        const [q, p] = (text ?? '').trim().split(/\s+/);
        if (q && q !== 'max') consider(quotaOf(Number(q), Number(p)));
      } else {
        for (const mount of [join(root, controllers), join(root, 'cpu'), join(root, 'cpu,cpuacct')]) {
          const q = read(join(mount, rel, 'cpu.cfs_quota_us'));
          const p = read(join(mount, rel, 'cpu.cfs_period_us'));
          if (q !== undefined && p !== undefined) {
            consider(quotaOf(Number(q.trim()), Number(p.trim())));
            break;
          }
        }
      }
    }
  }
  return best;
}

/** Cores available to this process: the affinity mask's CPUs, at most the cgroup quota (rounded up), at least 1. */
export function availableCores(sources: CoreSources = {}): number {
  const parallelism = sources.parallelism ?? availableParallelism();
  const quota = cgroupCpuQuota(sources);
  const cores = quota === undefined ? parallelism : Math.min(parallelism, Math.ceil(quota - 1e-9));
  return Math.max(1, cores);
}
