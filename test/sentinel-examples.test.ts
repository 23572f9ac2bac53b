/**
 * examples/sentinel/ stays true to what the destination sends: the data collection rule's stream
 * declares every column a row can carry (with the type the row's JSON value has), the table has
 * every column the rule's transformation writes, the stream name is the destination's default,
 * the KQL queries filter and group on columns of the table, and the rows of the example activity
 * log (sent through the CLI) carry the attributes and outcomes the queries look for.
 */
import { describe, it, expect } from 'vitest';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { REPO_ROOT, runCli } from './support/cli-process.js';
import { startIngestionServer } from './support/logs-ingestion-server.js';
import { tempDir } from './support/activity-fixtures.js';
import { sentinelRow } from '../src/export/sentinel/encoder.js';
import { sentinelDestinationConfigSchema } from '../src/export/sentinel/config.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const DIR = join(REPO_ROOT, 'examples', 'sentinel');
const DCR = 'dcr-0123456789abcdef0123456789abcdef';
const TOKEN = 'pre-issued-TOKEN-for-the-examples-test';
type Column = { name: string; type: string };
const template = JSON.parse(readFileSync(join(DIR, 'dcr.json'), 'utf8')) as {
  variables: { streamName: string; tableName: string; streamColumns: Column[]; tableColumns: Column[] };
  resources: Array<{ type: string; kind?: string; properties: Record<string, unknown> }>;
  outputs: Record<string, unknown>;
};
const table = JSON.parse(readFileSync(join(DIR, 'TableauActivity_CL.table.json'), 'utf8')) as { properties: { schema: { name: string; columns: Column[] } } };

/** A record with every column filled. */
const FULL: MappedLogRecord = {
  timeUnixNano: 1795928827123456789n,
  observedTimeUnixNano: 1795928828000000000n,
  severityNumber: 13,
  severityText: 'WARN',
  eventName: 'tableau.login_authentication',
  eventType: 'login_authentication',
  body: 'signed in',
  attributes: { 'user.id': 'u', 'user.name': 'n', 'user.email': 'e', 'client.address': '10.0.0.1', 'user_agent.original': 'ua', 'log.record.uid': 'id', 'tableau.status': 'failure', 'tableau.site_luid': 's' },
  resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau.tenant.id': 't', 'tableau_activity_otel.tenant': 'acme', 'tableau.site_luid': 's' } },
};

function kqlType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'real';
  if (typeof v === 'boolean') return 'boolean';
  return 'dynamic';
}

describe('examples/sentinel', () => {
  it('the stream declares every column of a row, with its JSON type (the times as strings the rule converts)', () => {
    const row = sentinelRow(FULL);
    const stream = new Map(template.variables.streamColumns.map((c) => [c.name, c.type]));
    expect([...stream.keys()].sort()).toEqual(Object.keys(row).sort());
    for (const [k, v] of Object.entries(row)) expect(stream.get(k), k).toBe(kqlType(v));
  });

  it('the table has the columns the transformation writes; the names are not reserved', () => {
    const tableCols = table.properties.schema.columns;
    expect(template.variables.tableColumns).toEqual(tableCols.map(({ name, type }) => ({ name, type })));
    expect(table.properties.schema.name).toBe('TableauActivity_CL');
    expect(template.variables.tableName).toBe('TableauActivity_CL');
    const names = tableCols.map((c) => c.name);
    for (const s of template.variables.streamColumns) expect(names).toContain(s.name);
    expect(tableCols.find((c) => c.name === 'TimeGenerated')?.type).toBe('datetime');
    expect(tableCols.find((c) => c.name === 'EventTime')?.type).toBe('string');
    // names the Logs Ingestion API reserves (Microsoft's overview page)
    for (const reserved of ['Type', 'TenantId', 'resource', 'resourceid', 'resourcename', 'resourcetype', 'subscriptionid', 'tenanted']) {
      expect(names.map((n) => n.toLowerCase())).not.toContain(reserved.toLowerCase());
    }
    for (const n of names) expect(n).toMatch(/^[A-Za-z][A-Za-z0-9_-]{0,44}$/);
  });

  it('the rule is of kind Direct, sends its stream to the table, and outputs what the destination needs', () => {
    const dcr = template.resources.find((r) => r.type === 'Microsoft.Insights/dataCollectionRules')!;
    expect(dcr.kind).toBe('Direct');
    expect(template.variables.streamName).toBe(sentinelDestinationConfigSchema.shape.stream.parse(undefined));
    const flows = dcr.properties.dataFlows as Array<{ streams: string[]; outputStream: string; transformKql: string }>;
    expect(flows).toHaveLength(1);
    expect(flows[0]!.transformKql).toMatch(/extend EventTime = TimeGenerated/);
    expect(Object.keys(template.outputs).sort()).toEqual(['dcrImmutableId', 'endpoint', 'stream']);
    expect(template.resources.some((r) => r.type === 'Microsoft.Authorization/roleAssignments')).toBe(true);
  });

  it('the KQL queries filter and group on columns of the table', () => {
    const columns = new Set(table.properties.schema.columns.map((c) => c.name));
    for (const file of ['failed-sign-ins-by-user.kql', 'mass-downloads.kql']) {
      const text = readFileSync(join(DIR, file), 'utf8').replace(/^\/\/.*$/gm, '');
      expect(text).toMatch(/^\s*(let [^\n]+\n\s*)?TableauActivity_CL\b/);
      // before summarize: the table's columns (after it, the ones summarize made)
      for (const m of text.split(/\|\s*summarize/)[0]!.matchAll(/\|\s*where\s+([A-Z][A-Za-z]+)\b/g)) expect(columns, `${file}: ${m[1]}`).toContain(m[1]);
      for (const m of text.matchAll(/^\s+by\s+([A-Za-z, =()0-9]+)$/gm)) {
        for (const part of m[1]!.replace(/\([^)]*\)/g, '').split(',')) {
          const name = part.trim().split(/\s*=\s*/)[0]!;
          if (!part.includes('=')) expect(columns, `${file}: by ${name}`).toContain(name);
        }
      }
    }
  });

  it('on the example activity log sent through the CLI, the rows carry what the queries filter and group on', async () => {
    const ingestion = await startIngestionServer({ dcrImmutableId: DCR, stream: 'Custom-TableauActivity_CL', validToken: (t) => t === TOKEN });
    try {
      const work = tempDir('tao-sentinel-examples-');
      writeFileSync(join(work, 'config.yaml'), [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(REPO_ROOT, 'examples', 'activity-log'))} } ]`,
        `    destinations: [ { type: sentinel, endpoint: ${JSON.stringify(ingestion.url)}, dcrImmutableId: ${DCR}, credential: { type: access-token, accessTokenEnv: TAO_TEST_TOKEN } } ]`,
      ].join('\n'));
      const res = await runCli(['run', '--once', '--config', join(work, 'config.yaml')], { env: { TAO_TEST_TOKEN: TOKEN } });
      expect(res.code, res.stderr).toBe(0);
      const rows = ingestion.rows;
      expect(rows).toHaveLength(410); // examples/activity-log/README.md
      const attr = (r: Record<string, unknown>, k: string): unknown => (r.Attributes as Record<string, unknown>)[k];
      // failed-sign-ins-by-user.kql
      const failedSignIns = rows.filter((r) => attr(r, 'tableau.event.category') === 'authentication' && r.Outcome === 'failure');
      expect(failedSignIns.length).toBeGreaterThan(0);
      for (const r of failedSignIns) expect(typeof r.UserId === 'string' || typeof r.UserEmail === 'string').toBe(true);
      // mass-downloads.kql
      const downloads = rows.filter((r) => attr(r, 'tableau.event.action') === 'download');
      expect(downloads.length).toBeGreaterThan(0);
      for (const r of downloads) {
        expect(typeof attr(r, 'tableau.target.id')).toBe('string');
        expect(typeof attr(r, 'tableau.target.name')).toBe('string');
        expect(typeof r.UserId).toBe('string');
        expect(typeof r.SiteLuid).toBe('string');
      }
      expect(downloads.some((r) => typeof attr(r, 'tableau.size') === 'number')).toBe(true);
      // every row has the columns the queries group by, of the declared type
      for (const r of rows) expect(r).toMatchObject({ TimeGenerated: expect.stringMatching(/\.\d{9}Z$/), ConnectorTenant: 'acme', EventType: expect.any(String) });
    } finally {
      await ingestion.close();
    }
  });
});
