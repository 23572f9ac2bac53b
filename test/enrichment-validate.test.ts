/**
 * `validate` reads the enrichment lookup files as the daemon does: a bad line fails it naming
 * the file and the line; a good file is counted; a file not there yet is named (the daemon waits
 * for it) without failing. Through the real CLI.
 */
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';

function config(dir: string, users: string, sites: string): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(dir)} } ]`,
      '    destinations: [ { type: otlp, endpoint: "http://127.0.0.1:1" } ]',
      `    enrichment: { users: { file: ${users} }, sites: { file: ${sites} } }`,
    ].join('\n'),
  );
  return file;
}

describe('validate and lookup files', () => {
  it('counts good lookup files, names a missing one without failing, and fails on a bad line naming file and line', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'users.csv'), 'id,name,email\n585b0c3e-5d0e-4f0e-9a1c-2d54e7c0a1b2,ada,ada@acme.example\n');
    writeFileSync(join(dir, 'sites.ndjson'), '{"id":"46a64a61-5e8c-4e4a-b2e0-76740ab0d02b","name":"Finance"}\n');
    const ok = await runCli(['validate', '--config', config(dir, './users.csv', './sites.ndjson')]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('2 lookup file(s)');

    const waiting = await runCli(['validate', '--config', config(dir, './users.csv', './later-sites.ndjson')]);
    expect(waiting.code, waiting.stderr).toBe(0);
    expect(waiting.stdout).toContain('1 lookup file(s)');
    expect(waiting.stdout).toContain(join(dir, 'later-sites.ndjson'));

    writeFileSync(join(dir, 'bad-sites.ndjson'), '{"id":"46a64a61-5e8c-4e4a-b2e0-76740ab0d02b","name":"Finance"}\n{"id": "x", "name": \n');
    const bad = await runCli(['validate', '--config', config(dir, './users.csv', './bad-sites.ndjson')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(`${join(dir, 'bad-sites.ndjson')}:2:`);
  });
});
