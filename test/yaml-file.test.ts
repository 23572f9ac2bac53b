/** YAML syntax errors name the line and column where the problem is, through the config loader and the real CLI. */
import { describe, it, expect } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { parseConfig } from '../src/daemon/config.js';
import { FileError } from '../src/core/yaml-file.js';

function problemsOf(text: string): string[] {
  try {
    parseConfig('c.yaml', text, { URL: 'http://127.0.0.1:4318' });
  } catch (err) {
    expect(err).toBeInstanceOf(FileError);
    return (err as FileError).problems;
  }
  throw new Error('no error');
}

describe('YAML syntax errors', () => {
  it('an unquoted ${VAR} inside a flow map is reported at its own line and column, with what to do', () => {
    const text = ['tenants:', '  - id: acme', '    sources: [ { type: directory, path: ./x } ]', '    destinations: [ { type: otlp, endpoint: ${URL} } ]', ''].join('\n');
    const problems = problemsOf(text);
    // line 4, column of the `$` (the parser's follow-up errors about the same variable are not repeated)
    expect(problems[0]).toBe('4:45: ${URL} inside [ ] or { } must be quoted: "${URL}" (Unexpected flow-map-start at node end)');
    expect(problems.filter((p) => p.includes('${URL}'))).toHaveLength(1);
    for (const p of problems) expect(p).toMatch(/^4:\d+: /);
    // quoted, the same line is fine
    const quoted = parseConfig('c.yaml', text.replace('${URL}', '"${URL}"'), { URL: 'http://127.0.0.1:4318' });
    expect(quoted.config.tenants[0]!.destinations[0]).toMatchObject({ type: 'otlp', endpoint: 'http://127.0.0.1:4318' });
  });

  it('other syntax errors name their line and column too', () => {
    expect(problemsOf('tenants:\n  - id: acme\n    sources: [ { type: directory, path: ./x }\n    destinations: []\n')[0]).toMatch(/^4:\d+: /);
    expect(problemsOf('tenants:\n  - id: acme\n   sources: []\n')[0]).toMatch(/^3:\d+: /);
    expect(problemsOf('tenants:\n  - id: a\n    id: b\n')[0]).toMatch(/^3:5: Map keys must be unique/);
  });

  it('the CLI prints file:line:col of an unquoted ${VAR}', async () => {
    const dir = tempDir();
    const file = join(dir, 'config.yaml');
    writeFileSync(file, ['tenants:', '  - id: acme', '    sources:', '      - { type: directory, path: ${LOG_DIR} }', '    destinations: [ { type: file, path: "-" } ]', ''].join('\n'));
    const res = await runCli(['validate', '--config', file], { env: { LOG_DIR: dir } });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`${file}:4:34: \${LOG_DIR} inside [ ] or { } must be quoted: "\${LOG_DIR}"`);
    expect(res.stderr).not.toContain(`${file}:1:1:`);
    // the parser's errors about every token after it are counted, not listed
    expect(res.stderr.trim().split('\n')).toHaveLength(4);
    expect(res.stderr).toMatch(/:5:\d+: and \d+ more syntax error\(s\) from here on/);
  });
});
