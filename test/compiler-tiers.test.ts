/**
 * V8's compilers as the daemon sets them (src/core/compiler-tiers.ts), seen from outside through
 * V8's own traces of a real `run --once` of 8 000 records:
 *
 * - `--trace-opt` prints every optimizing compile with its mode (TurboFan; on Node 24 Maglev's as
 *   well): without node flags the encode worker's compiles are synchronous (the flag set at run
 *   time reaches the isolates created after it) while the main thread's stay concurrent; with the
 *   flag on the command line (the image's ENTRYPOINT) every compile is; an operator's
 *   `--concurrent-recompilation` is left alone.
 * - `--trace-baseline-batch-compilation` prints every function queued for Sparkplug: only Node's
 *   own start-up, before the CLI runs, unless the operator gives `--sparkplug`.
 */
import { describe, it, expect } from 'vitest';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { startOtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { REPO_ROOT } from './support/cli-process.js';

const CLI = join(REPO_ROOT, 'dist', 'cli.js');

/** The stdout of a `run --once` of 8 000 records with these node flags (every record delivered). */
async function runOnce(nodeFlags: string[]): Promise<string> {
  const receiver = await startOtlpReceiver();
  try {
    const work = tempDir('tao-opt-');
    const tree = writeFixtureTree(join(work, 'logs'), 4, 2000);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], 'batchSize: 500');
    const { stdout } = await promisify(execFile)(process.execPath, [...nodeFlags, CLI, 'run', '--once', '--config', config], {
      cwd: REPO_ROOT,
      timeout: 120_000,
      maxBuffer: 256 << 20,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(receiver.records().length).toBe(tree.records.length);
    return stdout;
  } finally {
    await receiver.close();
  }
}

/** The modes of the optimizing compiles of a run. */
async function compileModes(nodeFlags: string[]): Promise<{ synchronous: number; concurrent: number }> {
  const stdout = await runOnce([...nodeFlags, '--trace-opt']);
  // e.g. "[compiling method 0x… <JSFunction f (sfi = 0x…)> (target TURBOFAN), mode: ConcurrencyMode::kSynchronous]"
  // (two threads' traces can interleave mid-line; V8 prints the mode in one piece, and only for a compile)
  const modes = [...stdout.matchAll(/, mode: ConcurrencyMode::(kSynchronous|kConcurrent)\b/g)].map((m) => m[1]);
  return {
    synchronous: modes.filter((m) => m === 'kSynchronous').length,
    concurrent: modes.filter((m) => m === 'kConcurrent').length,
  };
}

/** How many functions a run queued for the baseline compiler. */
async function baselineCompiles(nodeFlags: string[]): Promise<number> {
  const stdout = await runOnce([...nodeFlags, '--trace-baseline-batch-compilation']);
  // e.g. "[Baseline batch compilation] Enqueued SFI requireBuiltin with estimated size 532 (current budget: 532/4096)"
  return [...stdout.matchAll(/\[Baseline batch compilation\] Enqueued SFI /g)].length;
}

describe("V8's compilers", () => {
  it('by default the encode worker compiles on its own thread, the main thread in the background', async () => {
    const modes = await compileModes([]);
    expect(modes.synchronous).toBeGreaterThan(0);
    expect(modes.concurrent).toBeGreaterThan(0);
  }, 150_000);

  it('with the flag on the command line, as the image runs it, every thread compiles on its own', async () => {
    const modes = await compileModes(['--no-concurrent-recompilation']);
    expect(modes.synchronous).toBeGreaterThan(0);
    expect(modes.concurrent).toBe(0);
  }, 150_000);

  it("leaves an operator's --concurrent-recompilation alone", async () => {
    const modes = await compileModes(['--concurrent-recompilation']);
    expect(modes.concurrent).toBeGreaterThan(0);
    expect(modes.synchronous).toBe(0);
  }, 150_000);

  it("queues nothing for the baseline compiler once the CLI runs, unless the operator's --sparkplug asks", async () => {
    const byDefault = await baselineCompiles([]);
    const asked = await baselineCompiles(['--sparkplug']);
    // (Node's own start-up, before the CLI's first line, queues a few dozen; a run with it, some 1 500)
    expect(asked).toBeGreaterThan(500);
    expect(byDefault).toBeLessThan(asked / 5);
  }, 150_000);

  it('the image runs node with the flag', () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "--no-concurrent-recompilation", "\/app\/dist\/cli\.js"\]$/m);
  });
});
