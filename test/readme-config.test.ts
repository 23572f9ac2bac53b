/**
 * The minimal configuration in the README is a working one: `validate` (the built CLI) accepts
 * it, with the environment variable it names set, and refuses it, naming the variable, without.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, expect } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');

function minimalConfig(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf('## A minimal configuration');
  expect(at, 'README has "## A minimal configuration"').toBeGreaterThan(-1);
  const m = /```yaml\n([^]*?)```/.exec(readme.slice(at));
  expect(m, 'a yaml block under it').not.toBeNull();
  return m![1]!;
}

describe('README: a minimal configuration', () => {
  it('passes validate, and names the missing variable when it is not set', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'readme-config-'));
    try {
      const file = path.join(dir, 'config.yaml');
      writeFileSync(file, minimalConfig());
      const env = { ...process.env };
      delete env.OTLP_TOKEN;
      const ok = spawnSync(process.execPath, [CLI, 'validate', '--config', file], { encoding: 'utf8', env: { ...env, OTLP_TOKEN: 'token-for-the-test' } });
      expect(ok.status, ok.stderr + ok.stdout).toBe(0);
      expect(ok.stdout).toContain('1 source(s), 1 destination(s)');
      const missing = spawnSync(process.execPath, [CLI, 'validate', '--config', file], { encoding: 'utf8', env });
      expect(missing.status).toBe(2);
      expect(missing.stderr).toContain('environment variable OTLP_TOKEN is not set');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
