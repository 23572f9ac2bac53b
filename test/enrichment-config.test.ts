/**
 * A tenant's `enrichment:` block (src/daemon/enrichment-config.ts, through the config loader of
 * src/daemon/config.ts): defaults, the TCM connection it uses, and errors that name the file,
 * the line and the path.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/daemon/config.js';
import { enrichmentTcm } from '../src/daemon/enrichment-config.js';

const FILE = '/etc/tao/config.yaml';

function configText(enrichment: string, sources = '      - { type: directory, path: ./logs }'): string {
  return [
    'tenants:',
    '  - id: acme',
    '    sources:',
    sources,
    '    destinations:',
    '      - { type: otlp, endpoint: "http://127.0.0.1:4318" }',
    '    enrichment:',
    ...enrichment.split('\n').map((l) => `      ${l}`),
    '',
  ].join('\n');
}

const TCM_SOURCE = '      - { type: tcm, name: tcm-main, tenantId: t-1, patEnv: TCM_PAT }';
const TWO_TCM = `${TCM_SOURCE}\n      - { type: tcm, name: tcm-sites, tenantId: t-1, patEnv: TCM_PAT, scope: sites }`;

function errorOf(text: string): string {
  try {
    parseConfig(FILE, text, {});
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the config was accepted');
}

describe('enrichment config', () => {
  it('defaults: 4h refresh, 30s file checks, 30s initial wait, all fields; the only tcm source is the connection', () => {
    const { config } = parseConfig(FILE, configText('users: tcm\nsites: { file: ./lookup/sites.csv }', TCM_SOURCE), {});
    const e = config.tenants[0]!.enrichment!;
    expect(e.users).toEqual({ from: 'tcm' });
    expect(e.sites).toEqual({ from: 'file', file: './lookup/sites.csv', format: 'csv' });
    expect(e.refreshInterval).toBe(4 * 3_600_000);
    expect(e.fileCheckInterval).toBe(30_000);
    expect(e.initialWait).toBe(30_000);
    expect(e.fields).toBeUndefined();
    expect(enrichmentTcm(e, config.tenants[0]!.sources)).toEqual({ kind: 'source', sourceId: 'tcm-main', tenantId: 't-1' });
  });

  it('an own TCM connection, and a tcm source named among several', () => {
    const own = parseConfig(FILE, configText('users: tcm\ntcm: { tenantId: t-9, patFile: ./pat.txt }\nrefreshInterval: 2h'), {}).config.tenants[0]!;
    expect(enrichmentTcm(own.enrichment!, own.sources)).toEqual({ kind: 'own', url: 'https://cloudmanager.tableau.com', tenantId: 't-9', patFile: './pat.txt', maxRequestsPerSecond: 2, maxResponseBytes: 4 * 1024 * 1024 });
    const named = parseConfig(FILE, configText('users: tcm\ntcm: { source: tcm-sites }', TWO_TCM), {}).config.tenants[0]!;
    expect(enrichmentTcm(named.enrichment!, named.sources)).toEqual({ kind: 'source', sourceId: 'tcm-sites', tenantId: 't-1' });
  });

  it('refuses what cannot work, naming file, line and path', () => {
    expect(errorOf(configText('users: tcm'))).toMatch(/^\/etc\/tao\/config\.yaml:\d+:\d+: tenants\.0\.enrichment: users or sites is tcm but the tenant has no tcm source/);
    expect(errorOf(configText('users: tcm', TWO_TCM))).toContain('tenants.0.enrichment: the tenant has 2 tcm sources (tcm-main, tcm-sites): name one with tcm: { source: <id> }');
    expect(errorOf(configText('users: tcm\ntcm: { source: tcm-other }', TCM_SOURCE))).toMatch(/config\.yaml:9:\d+: tenants\.0\.enrichment\.tcm: tcm\.source 'tcm-other' is not a tcm source of this tenant \(its tcm sources: tcm-main\)/);
    expect(errorOf(configText('users: tcm\ntcm: { source: tcm-main, tenantId: t-2 }', TCM_SOURCE))).toContain('tenants.0.enrichment.tcm.tenantId: tcm.source shares that source\'s connection: tenantId cannot be given with it');
    expect(errorOf(configText('users: tcm\ntcm: { tenantId: t-2 }'))).toContain('tenants.0.enrichment.tcm.patEnv: give exactly one of patEnv');
    expect(errorOf(configText('sites: { file: ./sites.txt }'))).toMatch(/config\.yaml:8:\d+: tenants\.0\.enrichment\.sites\.format: cannot tell the format of \.\/sites\.txt from its name/);
    expect(errorOf(configText('sites: { file: ./sites.txt, format: xml }'))).toContain('tenants.0.enrichment.sites.format: Invalid option: expected one of "csv"|"ndjson"');
    expect(errorOf(configText('users: { path: ./u.csv }'))).toContain("tenants.0.enrichment.users: unknown key 'path' (a lookup file is { file, format? })");
    expect(errorOf(configText('users: tsm'))).toContain('tenants.0.enrichment.users: expected tcm or { file: <path> }, got "tsm"');
    expect(errorOf(configText('refreshInterval: 1h'))).toContain('tenants.0.enrichment.users: enrichment needs users, sites or both');
    expect(errorOf(configText('users: { file: u.csv }\nfields: [siteName]'))).toContain('tenants.0.enrichment.fields: users are loaded but fields names none of name, email, fullName, siteRole');
    expect(errorOf(configText('users: { file: u.csv }\nfields: [name, displayName]'))).toContain('tenants.0.enrichment.fields.1: Invalid option');
    expect(errorOf(configText('users: { file: u.csv }\nrefreshInterval: 10ms'))).toContain('tenants.0.enrichment.refreshInterval: from 1s to 7d');
    // a timer of more than 24.8 days would fire at once: refused
    expect(errorOf(configText('users: { file: u.csv }\nrefreshInterval: 30d'))).toContain('tenants.0.enrichment.refreshInterval: from 1s to 7d');
    expect(errorOf(configText('users: { file: u.csv }\ninitialWait: 2h'))).toContain('tenants.0.enrichment.initialWait: at most 1h');
    expect(errorOf(configText('users: { file: u.csv }\ntcm: { tenantId: t, patEnv: P }'))).toContain('tenants.0.enrichment.tcm: tcm applies when users or sites is tcm');
    expect(errorOf(configText('users: { file: u.csv }\nrefresh: 1h'))).toContain("tenants.0.enrichment: unknown key 'refresh'");
  });
});
