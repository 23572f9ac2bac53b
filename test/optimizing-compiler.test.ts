/**
 * V8's optimizing compiles on the thread whose code they optimize (src/core/optimizing-compiler.ts),
 * seen from outside through V8's own trace (`--trace-opt` prints every TurboFan compile with its
 * mode; on Node 24 Maglev's as well) of a real `run --once`: without node flags the encode worker's compiles are synchronous
 * (the flag set at run time reaches the isolates created after it) while the main thread's stay
 * concurrent; with the flag on the command line (the image's ENTRYPOINT) every compile is; and an
 * operator's `--concurrent-recompilation` is left alone.
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

/** The modes of the TurboFan compiles of a `run --once` of 8 000 records, and the records written. */
async function compileModes(nodeFlags: string[]): Promise<{ synchronous: number; concurrent: number }> {
  const receiver = await startOtlpReceiver();
  try {
    const work = tempDir('tao-opt-');
    const tree = writeFixtureTree(join(work, 'logs'), 4, 2000);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], 'batchSize: 500');
    const { stdout } = await promisify(execFile)(process.execPath, [...nodeFlags, '--trace-opt', CLI, 'run', '--once', '--config', config], {
      cwd: REPO_ROOT,
      timeout: 120_000,
      maxBuffer: 256 << 20,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(receiver.records().length).toBe(tree.records.length);
    // e.g. "[compiling method 0x… <JSFunction f (sfi = 0x…)> (target TURBOFAN), mode: ConcurrencyMode::kSynchronous]"
    // (two threads' traces can interleave mid-line; V8 prints the mode in one piece, and only for a compile)
    const modes = [...stdout.matchAll(/, mode: ConcurrencyMode::(kSynchronous|kConcurrent)\b/g)].map((m) => m[1]);
    return {
      synchronous: modes.filter((m) => m === 'kSynchronous').length,
      concurrent: modes.filter((m) => m === 'kConcurrent').length,
    };
  } finally {
    await receiver.close();
  }
}

describe('optimizing compiles on their own thread', () => {
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

  it('the image runs node with the flag', () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "--no-concurrent-recompilation", "\/app\/dist\/cli\.js"\]$/m);
  });
});
