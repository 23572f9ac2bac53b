/** `validate` and `map` through the real CLI, and config errors that name file, line and path. */
import { describe, it, expect } from 'vitest';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { parseConfig } from '../src/daemon/config.js';

function configFile(dir: string, text: string): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('validate', () => {
  it('accepts the bundled quick-start and example configs', async () => {
    for (const file of ['examples/quickstart.yaml', 'examples/otlp-collector.yaml']) {
      const res = await runCli(['validate', '--config', file]);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(/ok \(1 tenant\(s\), 1 source\(s\), 1 destination\(s\), 0 overrides file\(s\), 0 lookup file\(s\); 270 event types/);
    }
  });

  it('names the file, line, column and path of an unknown key and of a wrong type', async () => {
    const dir = tempDir();
    const file = configFile(
      dir,
      ['tenants:', '  - id: acme', '    sources:', '      - type: directory', '        path: ./x', '        pollIntervall: 5s', '    destinations:', '      - type: otlp', '        protocol: grpc'].join('\n'),
    );
    const res = await runCli(['validate', '--config', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`${file}:4:9: tenants.0.sources.0: unknown key 'pollIntervall'`);
    expect(res.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:9:19: tenants\\.0\\.destinations\\.0\\.protocol: `));
  });

  it('reports YAML syntax errors and unset ${VAR}s with their position', async () => {
    const dir = tempDir();
    const bad = configFile(dir, 'tenants:\n  - id: [unclosed\n');
    const res = await runCli(['validate', '--config', bad]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/config\.yaml:\d+:\d+: /);

    const text = ['tenants:', '  - id: acme', '    sources: [ { type: directory, path: "${LOG_DIR}" } ]', '    destinations: [ { type: otlp, headers: { authorization: "Bearer ${NO_SUCH_TOKEN_VAR}" } } ]'].join('\n');
    expect(() => parseConfig('c.yaml', text, { LOG_DIR: '/data' })).toThrow(/c\.yaml:4:\d+: tenants\.0\.destinations\.0\.headers\.authorization: environment variable NO_SUCH_TOKEN_VAR is not set/);
    const ok = parseConfig('c.yaml', text, { LOG_DIR: '/data', NO_SUCH_TOKEN_VAR: 'a: b # not yaml' });
    const t = ok.config.tenants[0]!;
    expect(t.sources[0]).toMatchObject({ type: 'directory', path: '/data' });
    expect(t.destinations[0]).toMatchObject({ headers: { authorization: 'Bearer a: b # not yaml' } });
  });

  it('rejects duplicate tenant ids and ids that would escape the state directory', () => {
    const base = (id: string) => `tenants:\n  - id: "${id}"\n    sources: [ { type: directory, path: x } ]\n    destinations: [ { type: file, path: "-" } ]\n`;
    expect(() => parseConfig('c.yaml', base('../etc'))).toThrow(/tenants\.0\.id/);
    expect(() => parseConfig('c.yaml', base('a/b'))).toThrow(/tenants\.0\.id/);
    const twice = base('a') + '  - id: a\n    sources: [ { type: directory, path: y } ]\n    destinations: [ { type: file, path: "-" } ]\n';
    expect(() => parseConfig('c.yaml', twice)).toThrow(/duplicate tenant id 'a'/);
  });
});

describe('map', () => {
  it('prints OTLP JSON for each record and reports bad lines as FILE:LINE', async () => {
    const dir = join(tempDir(), 'pod=p', 'siteLuid=s-1', 'y=2026', 'm=11', 'd=30', 'h=10', 'eventType=hist_delete_workbook');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'f.txt');
    writeFileSync(file, [JSON.stringify({ eventTime: '2026-11-30T10:00:00.123456789Z', actorUserLuid: 'u-1', workbookLuid: 'wb-9', eventOutcome: 'internal_error' }), '{oops', ''].join('\n'));
    const res = await runCli(['map', file, '--tenant', 't1']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`${file}:2: invalid JSON`);
    const req = JSON.parse(res.stdout.trim());
    const rl = req.resourceLogs[0];
    const resource = Object.fromEntries(rl.resource.attributes.map((a: { key: string; value: { stringValue: string } }) => [a.key, a.value.stringValue]));
    expect(resource).toMatchObject({ 'service.name': 'tableau-cloud', 'tableau_activity_otel.tenant': 't1', 'tableau.site_luid': 's-1', 'tableau.pod': 'p' });
    const rec = rl.scopeLogs[0].logRecords[0];
    expect(rec.eventName).toBe('tableau.hist_delete_workbook');
    expect(rec.timeUnixNano).toBe('1796032800123456789'); // python: calendar.timegm((2026,11,30,10,0,0)) = 1796032800
    expect(rec.severityNumber).toBe(17);
    const attrs = Object.fromEntries(rec.attributes.map((a: { key: string; value: { stringValue: string } }) => [a.key, a.value.stringValue]));
    expect(attrs).toMatchObject({ 'user.id': 'u-1', 'tableau.workbook_luid': 'wb-9', 'error.type': 'internal_error' });
  });
});
