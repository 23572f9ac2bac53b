/**
 * The reload plan (src/daemon/reload-plan.ts): a tenant counts as changed when what it runs
 * changes. Its overrides count by their validated content, the very content the encode workers
 * are handed, read once: an edit that changes what applies restarts the tenant and rebuilds the
 * pool; one that changes nothing that applies (a comment) leaves both as they are.
 */
import { describe, it, expect } from 'vitest';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/daemon/config.js';
import { planChanges, preparePlan, type Plan } from '../src/daemon/reload-plan.js';
import { bundledMappingsDir } from '../src/mapping/catalog.js';

describe('reload plan: overrides', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tao-reload-plan-'));
  mkdirSync(join(dir, 'in'));
  const configFile = join(dir, 'config.yaml');
  writeFileSync(
    configFile,
    `state: { dir: "${join(dir, 'state')}" }\ntenants:\n  - id: t\n    mappings: ./overrides.yaml\n    sources:\n      - { type: directory, path: "${join(dir, 'in')}" }\n    destinations:\n      - { type: file, path: "${join(dir, 'out.ndjson')}" }\n`,
  );
  const overrides = (text: string): Plan => {
    writeFileSync(join(dir, 'overrides.yaml'), text);
    return preparePlan(loadConfig(configFile, {}), { once: true, env: {} });
  };
  const running = (p: Plan) => new Map([['t', { plan: p.tenants.get('t')! }]]);

  it('hands the workers the content it validated, and compares plans by it', () => {
    const first = overrides('eventTypes: { drop: [vizql_http_request] }\n');
    expect(first.tenants.get('t')!.overrides!.file.eventTypes?.drop).toEqual(['vizql_http_request']);

    const comment = overrides('# the same overrides\neventTypes: { drop: [vizql_http_request] }\n');
    expect(planChanges(comment, running(first))).toMatchObject({ changed: [], unchanged: ['t'] });
    expect(comment.poolKey).toBe(first.poolKey);

    const edited = overrides('eventTypes: { drop: [vizql_http_request, hist_delete_user] }\n');
    expect(planChanges(edited, running(first))).toMatchObject({ changed: ['t'], unchanged: [] });
    expect(edited.poolKey).not.toBe(first.poolKey);
    expect(edited.tenants.get('t')!.overrides!.file.eventTypes?.drop).toEqual(['vizql_http_request', 'hist_delete_user']);
  });
});

describe('reload plan: the mapping files', () => {
  it('an edited mapping file restarts the tenants and rebuilds the pool; a file beside them that the catalog does not read changes nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-reload-plan-'));
    const mappings = join(dir, 'mappings');
    cpSync(bundledMappingsDir(), mappings, { recursive: true });
    mkdirSync(join(dir, 'in'));
    const configFile = join(dir, 'config.yaml');
    writeFileSync(
      configFile,
      `mappingsDir: ./mappings\nstate: { dir: "${join(dir, 'state')}" }\ntenants:\n  - id: t\n    sources:\n      - { type: directory, path: "${join(dir, 'in')}" }\n    destinations:\n      - { type: file, path: "${join(dir, 'out.ndjson')}" }\n`,
    );
    const plan = (): Plan => preparePlan(loadConfig(configFile, {}), { once: true, env: {} });
    const running = (p: Plan) => new Map([['t', { plan: p.tenants.get('t')! }]]);
    const first = plan();

    writeFileSync(join(mappings, 'NOTES.md'), 'not a mapping file\n');
    const notes = plan();
    expect(planChanges(notes, running(first))).toMatchObject({ changed: [], unchanged: ['t'] });
    expect(notes.poolKey).toBe(first.poolKey);

    const login = join(mappings, 'site', 'login_authentication.yaml');
    writeFileSync(login, readFileSync(login, 'utf8').replace(/^body: .*$/m, "body: 'edited {user}'"));
    const edited = plan();
    expect(edited.catalog.eventTypes.get('login_authentication')!.body).toBe('edited {user}');
    expect(planChanges(edited, running(first))).toMatchObject({ changed: ['t'], unchanged: [] });
    expect(edited.poolKey).not.toBe(first.poolKey);
  });
});
