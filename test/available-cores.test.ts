/** The cores the daemon sizes its encode workers by: the affinity mask, capped by a cgroup CPU quota (a container's CPU limit). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { availableCores, cgroupCpuQuota } from '../src/core/available-cores.js';
import { defaultEncodeWorkers } from '../src/pipeline/encode-worker-prewarm.js';

const dirs: string[] = [];
function cgroupTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tao-cgroup-'));
  dirs.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('available cores', () => {
  it('cgroup v2: a quota on the container (its cgroup is "/" inside it) caps the affinity mask', () => {
    const cgroupRoot = cgroupTree({ 'cpu.max': '100000 100000\n' });
    expect(cgroupCpuQuota({ cgroupRoot, procSelfCgroup: '0::/\n' })).toBe(1);
    expect(availableCores({ parallelism: 16, cgroupRoot, procSelfCgroup: '0::/\n' })).toBe(1);
  });

  it('cgroup v2: a fractional quota rounds up, "max" is no quota, the smallest quota on the way to the root wins', () => {
    const cgroupRoot = cgroupTree({
      'cpu.max': 'max 100000\n',
      'kubepods/cpu.max': '400000 100000\n',
      'kubepods/pod1/cpu.max': '150000 100000\n',
      'kubepods/pod1/ctr/cpu.max': 'max 100000\n',
    });
    const procSelfCgroup = '0::/kubepods/pod1/ctr\n';
    expect(cgroupCpuQuota({ cgroupRoot, procSelfCgroup })).toBe(1.5);
    expect(availableCores({ parallelism: 16, cgroupRoot, procSelfCgroup })).toBe(2);
    // a quota above the affinity mask does not add cores
    expect(availableCores({ parallelism: 2, cgroupRoot, procSelfCgroup: '0::/kubepods\n' })).toBe(2);
  });

  it('cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us of the cpu controller; -1 is no quota', () => {
    const cgroupRoot = cgroupTree({
      'cpu,cpuacct/docker/abc/cpu.cfs_quota_us': '250000\n',
      'cpu,cpuacct/docker/abc/cpu.cfs_period_us': '100000\n',
      'cpu,cpuacct/cpu.cfs_quota_us': '-1\n',
      'cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    });
    const procSelfCgroup = '12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n';
    expect(cgroupCpuQuota({ cgroupRoot, procSelfCgroup })).toBe(2.5);
    expect(availableCores({ parallelism: 8, cgroupRoot, procSelfCgroup })).toBe(3);
    expect(cgroupCpuQuota({ cgroupRoot, procSelfCgroup: '4:cpu,cpuacct:/\n' })).toBeUndefined();
  });

  it('nothing readable is no quota: the affinity mask alone', () => {
    const cgroupRoot = cgroupTree({});
    expect(cgroupCpuQuota({ cgroupRoot, procSelfCgroup: '0::/somewhere\n' })).toBeUndefined();
    expect(availableCores({ parallelism: 6, cgroupRoot, procSelfCgroup: '' })).toBe(6);
    expect(availableCores({ parallelism: 6, cgroupRoot, procSelfCgroup: '0::/somewhere\n' })).toBe(6);
  });

  it('encode workers: one core is left to the main thread, at least one worker, at most four', () => {
    expect(defaultEncodeWorkers(1)).toBe(1);
    expect(defaultEncodeWorkers(2)).toBe(1);
    expect(defaultEncodeWorkers(3)).toBe(2);
    expect(defaultEncodeWorkers(32)).toBe(4);
  });
});
