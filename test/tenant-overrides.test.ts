/**
 * Per-tenant overrides: unit behaviour through the mapper, validation errors that name the
 * file, and two tenants in one process where one tenant's overrides never touch the other's
 * records.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createHmac } from 'node:crypto';
import { loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { loadOverrides, checkOverridesAgainstCatalog } from '../src/mapping/tenant-overrides-file.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli, REPO_ROOT } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';

const catalog = loadCatalog();
const KEY = 'key';
const HASH_KEY = 'k'.repeat(32);

function overridesFile(text: string): string {
  const file = join(tempDir(), 'overrides.yaml');
  writeFileSync(file, text);
  return file;
}

function mapWith(overridesText: string, record: Record<string, unknown>, key: string, env: NodeJS.ProcessEnv = { PII_KEY: HASH_KEY }) {
  const overrides = loadOverrides(overridesFile(overridesText), env);
  const mapper = new RecordMapper(catalog, { tenantId: 't', overrides });
  return mapper.map(record, 1, { keyInfo: parseObjectKey(key), uidPrefix: KEY }, 0n);
}

const tenantKey = 'tenant=T/y=2026/m=11/d=24/h=23/eventType=personal_access_token_login/f.txt';
const tenantRecord = {
  eventId: 'e-1',
  eventTime: '2026-11-24T23:00:22.382942Z',
  eventOutcome: 'success',
  initiatingUserId: 'u-1',
  initiatingUserEmail: 'ann@acme.example',
  initiatingUserIpAddress: '198.51.100.77',
  tokenName: 'forwarder',
};
const hmac = (v: string) => createHmac('sha256', HASH_KEY).update(v).digest('hex');

describe('overrides through the mapper', () => {
  it('hashes, redacts, drops, renames and adds static attributes', () => {
    const r = mapWith(
      [
        'attributes:',
        '  hash: [user.email, client.address]',
        '  redact: [tableau.token_name]',
        '  drop: [tableau.event_outcome]',
        '  rename: { user.id: enduser.id }',
        'hashKey: ${PII_KEY}',
        'static: { deployment.environment.name: production, cost_center: CC-1 }',
      ].join('\n'),
      tenantRecord,
      tenantKey,
    );
    if (!r.ok) throw new Error(r.reason);
    const a = r.record.attributes;
    expect(a['user.email']).toBe(hmac('ann@acme.example'));
    expect(a['client.address']).toBe(hmac('198.51.100.77'));
    expect(a['tableau.token_name']).toBe('[redacted]');
    expect(a).not.toHaveProperty(['tableau.event_outcome']);
    expect(a['enduser.id']).toBe('u-1');
    expect(a).not.toHaveProperty(['user.id']);
    // static attributes belong to the resource, not to each record
    expect(r.record.resource.attributes['deployment.environment.name']).toBe('production');
    expect(r.record.resource.attributes['cost_center']).toBe('CC-1');
    expect(a).not.toHaveProperty(['deployment.environment.name']);
    // the body is rendered after the overrides: no clear-text personal data in it
    expect(r.record.body).not.toContain('ann@acme.example');
    expect(r.record.body).not.toContain('198.51.100.77');
    expect(JSON.stringify(r.record, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))).not.toContain('ann@acme.example');
  });

  it("a user target's name (tableau.target.name) follows the override of the field it was copied from", () => {
    const key = 'pod=p/siteLuid=S/y=2026/m=11/d=24/h=23/eventType=hist_delete_user/f.txt';
    const record = { eventTime: '2026-11-24T23:00:00Z', actorUserLuid: 'admin-1', userLuid: 'u-9', name: 'erin@acme.example', email: 'erin@acme.example' };
    const plain = mapWith('{}', record, key);
    if (!plain.ok) throw new Error(plain.reason);
    expect(plain.record.attributes['tableau.target.name']).toBe('erin@acme.example');
    expect(plain.record.attributes['tableau.target.user.id']).toBe('u-9');
    const hashed = mapWith(['attributes:', '  hash: [tableau.name, tableau.email]', 'hashKey: ${PII_KEY}'].join('\n'), record, key);
    if (!hashed.ok) throw new Error(hashed.reason);
    expect(hashed.record.attributes['tableau.target.name']).toBe(hmac('erin@acme.example'));
    expect(JSON.stringify(hashed.record.attributes)).not.toContain('erin@');
    expect(hashed.record.body).not.toContain('erin@');
    const dropped = mapWith(['attributes:', '  drop: [tableau.name, tableau.email]'].join('\n'), record, key);
    if (!dropped.ok) throw new Error(dropped.reason);
    expect(dropped.record.attributes).not.toHaveProperty(['tableau.target.name']);
  });

  it('an override on a semantic-convention name reaches every field that maps to it, including collision fallbacks', () => {
    // ipAddress takes client.address, sourceIp falls back to tableau.source_ip, and with
    // source_ip present too, to tableau.raw.sourceIp: none of the three may leave in clear
    const record = { ...tenantRecord, ipAddress: '203.0.113.1', sourceIp: '203.0.113.2', initiatingUserIpAddress: '203.0.113.3' };
    const r = mapWith(['attributes:', '  hash: [client.address]', 'hashKey: ${PII_KEY}'].join('\n'), record, tenantKey);
    if (!r.ok) throw new Error(r.reason);
    const values = Object.values(r.record.attributes).map(String);
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      expect(values).not.toContain(ip);
      expect(values).toContain(hmac(ip));
    }
    const withRaw = mapWith(['attributes:', '  redact: [client.address]'].join('\n'), { source_ip: 'taken', ...record }, tenantKey);
    if (!withRaw.ok) throw new Error(withRaw.reason);
    const a = withRaw.record.attributes;
    expect(a['tableau.source_ip']).toBe('taken');
    expect(a['tableau.raw.sourceIp']).toBe('[redacted]');
    expect(JSON.stringify(a)).not.toMatch(/203\.0\.113\./);
    expect(withRaw.record.body).not.toMatch(/203\.0\.113\./);
    // fields that do not map to client.address are left alone
    expect(a['user.email']).toBe('ann@acme.example');
  });

  it('an override on a Tableau field name applies to the attribute it is emitted as', () => {
    const r = mapWith(['attributes:', '  hash: [initiatingUserEmail]', '  drop: [initiatingUserIpAddress]', 'hashKey: ${PII_KEY}'].join('\n'), tenantRecord, tenantKey);
    if (!r.ok) throw new Error(r.reason);
    const a = r.record.attributes;
    expect(a['user.email']).toBe(hmac('ann@acme.example'));
    expect(a).not.toHaveProperty(['client.address']);
    expect(JSON.stringify(a)).not.toContain('198.51.100.77');
    expect(a['user.id']).toBe('u-1');
  });

  it('drops event types by name and glob, keeps others, and changes severities', () => {
    const text = ['eventTypes: { drop: [vizql_http_request, "hist_access_*"] }', 'severity: { "personal_access_token_*": ERROR }'].join('\n');
    const site = (type: string) => `pod=p/siteLuid=s/y=2026/m=11/d=24/h=23/eventType=${type}/f.txt`;
    const rec = { eventTime: '2026-11-24T23:00:00Z', actorUserLuid: 'u' };
    const v = mapWith(text, rec, site('vizql_http_request'));
    expect(v.ok).toBe(false);
    expect(!v.ok && v.dropped).toBe(true);
    const h = mapWith(text, rec, site('hist_access_view'));
    expect(!h.ok && h.dropped).toBe(true);
    const kept = mapWith(text, rec, site('hist_delete_workbook'));
    expect(kept.ok).toBe(true);
    const pat = mapWith(text, tenantRecord, tenantKey);
    expect(pat.ok && pat.record.severityNumber).toBe(17);
    expect(pat.ok && pat.record.severityText).toBe('ERROR');
  });

  it('keep: only the listed event types flow', () => {
    const text = 'eventTypes: { keep: ["*login*"] }';
    expect(mapWith(text, tenantRecord, tenantKey).ok).toBe(true);
    const other = mapWith(text, { eventTime: '2026-11-24T23:00:00Z' }, 'pod=p/siteLuid=s/y=2026/m=11/d=24/h=23/eventType=hist_delete_workbook/f.txt');
    expect(!other.ok && other.dropped).toBe(true);
  });
});

describe('overrides validation names the file and the place', () => {
  it('unknown keys, wrong types, hash without a key, an unset variable', () => {
    const f1 = overridesFile('attributes:\n  hide: [user.email]\n');
    expect(() => loadOverrides(f1)).toThrow(`${f1}:2:3: attributes: unknown key 'hide'`);
    const f2 = overridesFile('severity: { "hist_*": LOUD }\n');
    expect(() => loadOverrides(f2)).toThrow(new RegExp(`${f2.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:\\d+: severity\\.hist_\\*: `));
    const f3 = overridesFile('attributes: { hash: [user.email] }\n');
    expect(() => loadOverrides(f3)).toThrow(/hashKey: attributes.hash needs a hashKey/);
    const f4 = overridesFile('hashKey: ${NOT_SET_ANYWHERE}\nattributes: { hash: [user.email] }\n');
    expect(() => loadOverrides(f4, {})).toThrow(`${f4}:1:10: hashKey: environment variable NOT_SET_ANYWHERE is not set`);
  });

  it('a rename or static attribute that would emit one name twice', () => {
    const f1 = overridesFile('attributes:\n  rename: { user.email: a, client.address: a }\n');
    expect(() => loadOverrides(f1)).toThrow(/'client.address' and 'user.email' would both be emitted as 'a'/);
    const f2 = overridesFile('attributes:\n  rename:\n    tableau.token_name: user.email\n');
    const o = loadOverrides(f2);
    expect(() => checkOverridesAgainstCatalog(o, catalog)).toThrow(`${f2}:3:25: attributes.rename.tableau.token_name: 'user.email' is already emitted by the mapping`);
    const f3 = overridesFile('static: { tableau.workbook_luid: x }\n');
    expect(() => checkOverridesAgainstCatalog(loadOverrides(f3), catalog)).toThrow(/static\.tableau\.workbook_luid: 'tableau\.workbook_luid' is already emitted/);
    // the identity attributes the mapper derives (user.roles, tableau.event_sub_type, tableau.impersonated)
    for (const name of ['user.roles', 'tableau.event_sub_type', 'tableau.impersonated']) {
      const f = overridesFile(`static: { ${name}: x }\n`);
      expect(() => checkOverridesAgainstCatalog(loadOverrides(f), catalog)).toThrow(`'${name}' is already emitted`);
    }
  });
});

describe('two tenants in one process', () => {
  let a: OtlpReceiver | undefined;
  let b: OtlpReceiver | undefined;
  afterEach(async () => {
    await a?.close();
    await b?.close();
  });

  it("one tenant's overrides never touch the other tenant's records", async () => {
    a = await startOtlpReceiver();
    b = await startOtlpReceiver();
    const work = tempDir();
    writeFileSync(join(work, 'private.yaml'), ['eventTypes: { drop: [vizql_http_request] }', 'attributes: { hash: [user.email, client.address] }', 'hashKey: ${PII_KEY}', 'static: { deployment.environment.name: prod }'].join('\n'));
    const examples = resolve(REPO_ROOT, 'examples', 'activity-log');
    writeFileSync(
      join(work, 'config.yaml'),
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: private',
        `    mappings: ./private.yaml`,
        `    sources: [ { type: directory, path: ${JSON.stringify(examples)} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(a.url)} } ]`,
        '  - id: plain',
        `    sources: [ { type: directory, path: ${JSON.stringify(examples)} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(b.url)} } ]`,
      ].join('\n'),
    );
    const validated = await runCli(['validate', '--config', join(work, 'config.yaml')], { env: { PII_KEY: HASH_KEY } });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('1 overrides file(s)');
    const res = await runCli(['run', '--once', '--config', join(work, 'config.yaml')], { env: { PII_KEY: HASH_KEY } });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).not.toContain(HASH_KEY);

    const priv = a.records();
    const plain = b.records();
    expect(plain.length).toBe(410); // the whole example tree
    const vizql = plain.filter((r) => r.eventName === 'tableau.vizql_http_request').length;
    expect(vizql).toBeGreaterThan(0);
    expect(priv.length).toBe(410 - vizql);
    expect(priv.every((r) => r.resource['tableau_activity_otel.tenant'] === 'private')).toBe(true);
    expect(plain.every((r) => r.resource['tableau_activity_otel.tenant'] === 'plain')).toBe(true);

    const emails = plain.filter((r) => typeof r.attributes['user.email'] === 'string');
    expect(emails.length).toBeGreaterThan(0);
    expect(emails.every((r) => /@/.test(r.attributes['user.email'] as string))).toBe(true);
    expect(plain.every((r) => !('deployment.environment.name' in r.resource))).toBe(true);
    expect(priv.every((r) => r.resource['deployment.environment.name'] === 'prod' && !('deployment.environment.name' in r.attributes))).toBe(true);

    const privEmails = priv.filter((r) => 'user.email' in r.attributes);
    expect(privEmails.length).toBe(emails.length);
    for (const r of privEmails) expect(r.attributes['user.email']).toMatch(/^[0-9a-f]{64}$/);
    const byUid = new Map(plain.map((r) => [r.attributes['log.record.uid'], r]));
    for (const r of privEmails) {
      const twin = byUid.get(r.attributes['log.record.uid'])!;
      expect(r.attributes['user.email']).toBe(hmac(twin.attributes['user.email'] as string));
    }
    expect(JSON.stringify(priv.map((r) => r.body))).not.toMatch(/@acme/);
  });
});

describe('schema drift', () => {
  it('counts unknown event types and attributes per name and reports each name once', () => {
    const seen: string[] = [];
    const mapper = new RecordMapper(catalog, { tenantId: 't', onSchemaDrift: (kind, name) => seen.push(`${kind}:${name}`) });
    const ctx = (type: string) => ({ keyInfo: parseObjectKey(`pod=p/siteLuid=s/y=2026/m=11/d=24/h=23/eventType=${type}/f.txt`), uidPrefix: 'x' });
    for (let i = 0; i < 3; i++) {
      expect(mapper.map({ eventTime: '2026-11-24T23:00:00Z', brandNew: i }, i + 1, ctx('hist_delete_workbook'), 0n).ok).toBe(true);
      const r = mapper.map({ eventTime: '2026-11-24T23:00:00Z', shiny: true }, i + 1, ctx('future_event_type'), 0n);
      expect(r.ok && r.record.attributes['tableau.shiny']).toBe(true);
      expect(r.ok && r.record.eventName).toBe('tableau.future_event_type');
    }
    expect(seen).toEqual(['attribute:hist_delete_workbook.brandNew', 'eventType:future_event_type']);
    expect(mapper.drift.unknownAttributes.get('hist_delete_workbook.brandNew')).toBe(3);
    expect(mapper.drift.unknownEventTypes.get('future_event_type')).toBe(3);
  });
});
