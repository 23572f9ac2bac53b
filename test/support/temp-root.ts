/**
 * vitest globalSetup: every temporary file of a test run goes under one directory of its own
 * (TMPDIR, which os.tmpdir() reads and the test files and the daemons they start inherit), and
 * that directory is removed when the run ends. Before, each run left some hundreds of directories
 * in /tmp (fixture trees, state directories, test certificates with their private keys).
 * TAO_KEEP_TEST_TMP=1 keeps it, for looking at what a failed test left.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'tao-run-'));
  process.env.TMPDIR = root;
  return () => {
    if (process.env.TAO_KEEP_TEST_TMP === '1') {
      process.stderr.write(`test files kept in ${root}\n`);
      return;
    }
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
}
