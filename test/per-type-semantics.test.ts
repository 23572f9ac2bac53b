/**
 * Per-type semantics (a mapping file's `semantics:` key): the acting user's name is `user.name`,
 * a tenant sign-in's new session is `session.id`, the session a refresh-token deletion names is
 * the target's (kept as `tableau.session_id`), a sign-in's URL is `url.full`, and
 * `http.request.method` is normalised. Every record goes through the three mapping paths (map()
 * + the object encoder, mapDirect() and mapLineDirect() of the line's bytes) and is read back with
 * the test receiver's own protobuf decoder. The loader rejects an unknown semantic-convention
 * name or an undocumented attribute, naming file and line, and the generator keeps the key.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, expect } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadCatalog } from '../src/mapping/catalog.js';
import { loadOverrides } from '../src/mapping/tenant-overrides-file.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { encodeLogsRequest } from '../src/export/otlp-protobuf/object-encoder.js';
import { createSplunkHecEncoder } from '../src/export/splunk-hec/encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { catalog, mappedThreeWays, OBSERVED, scope, SITE_KEY, TENANT_KEY } from './support/three-path-mapping.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import { REPO_ROOT } from './support/cli-process.js';

const mapped = mappedThreeWays;

describe('per-type semantics, through the protobuf encodings', () => {
  it('the acting user\'s name is user.name on the sign-in types, never a target user\'s', () => {
    const auth = mapped('login_authentication', 'site', { actorUserLuid: 'u-1', username: 'alice@example.com', loginType: 'SAML' });
    expect(auth.attributes['user.name']).toBe('alice@example.com');
    expect(auth.attributes['tableau.username']).toBeUndefined();
    expect(auth.attributes['user.id']).toBe('u-1');
    expect(mapped('login_verification', 'site', { username: 'bob' }).attributes['user.name']).toBe('bob');
    const uat = mapped('validate_uat_jwt', 'tenant', { username: 'carol' });
    expect(uat.attributes['user.name']).toBe('carol');
    expect(uat.attributes['tableau.username']).toBeUndefined();
    expect(mapped('site_storage_usage', 'site', { actorUsername: 'dave' }).attributes['user.name']).toBe('dave');
    // the user added to a group is the target, not the actor: stays tableau.user_name
    const added = mapped('hist_add_user_to_group', 'site', { userName: 'erin' });
    expect(added.attributes['tableau.user_name']).toBe('erin');
    expect(added.attributes['user.name']).toBeUndefined();
    // the Salesforce user of a Tableau GPT registration is not the actor either
    expect(mapped('tabgpt_registration_event', 'site', { username: 'sf-user' }).attributes['tableau.username']).toBe('sf-user');
  });

  it('request headers are http.request.header.<name> as one-item string arrays: the sign-ins\' acceptLanguage, a view request\'s referrer', () => {
    const auth = mapped('login_authentication', 'site', { actorUserLuid: 'u-1', acceptLanguage: 'de-CH,de;q=0.9,en;q=0.8' });
    expect(auth.attributes['http.request.header.accept-language']).toEqual(['de-CH,de;q=0.9,en;q=0.8']);
    expect(auth.attributes['tableau.accept_language']).toBeUndefined();
    expect(mapped('login_verification', 'site', { acceptLanguage: 'fr' }).attributes['http.request.header.accept-language']).toEqual(['fr']);
    const view = mapped('vizql_http_request', 'site', { referrer: 'https://tableau.example/#/views/Sales/Overview', method: 'GET' });
    expect(view.attributes['http.request.header.referer']).toEqual(['https://tableau.example/#/views/Sales/Overview']);
    expect(view.attributes['tableau.referrer']).toBeUndefined();
    // a value that is not a string keeps its own type under the generic name
    expect(mapped('vizql_http_request', 'site', { referrer: 7 }).attributes['tableau.referrer']).toBe(7);
  });

  it('Splunk HEC (CIM): the sign-in\'s user is the user name the record gives, not the user id', () => {
    const ctx = { keyInfo: parseObjectKey(SITE_KEY.replace('ET', 'login_authentication')), uidPrefix: 'abc' };
    const r = new RecordMapper(catalog, { tenantId: 't1' }).map({ eventTime: '2026-11-29T10:11:12Z', actorUserLuid: 'u-1', username: 'alice', status: 'success' }, 1, ctx, OBSERVED);
    if (!r.ok) throw new Error(r.reason);
    const encoder = createSplunkHecEncoder({ kind: 'splunk-hec', sourcetype: 'tableau:activity', host: 'h', source: 'src', fields: [], cimFields: true, maxRequestBytes: 65536, compression: 'none' });
    const event = JSON.parse(new TextDecoder().decode(encoder.encode([r.record]).bodies[0]).trim()) as { fields: Record<string, string> };
    expect(event.fields.user).toBe('alice');
  });

  it('a tenant sign-in\'s new session is session.id; the session a refresh-token deletion names is not', () => {
    for (const type of ['jwt_login', 'personal_access_token_login', 'user_login_create_session']) {
      const r = mapped(type, 'tenant', { newSessionId: 'sess-new', initiatingSessionId: 'sess-old' });
      expect(r.attributes['session.id'], type).toBe('sess-new');
      expect(r.attributes['tableau.new_session_id'], type).toBeUndefined();
      expect(r.attributes['tableau.initiating_session_id'], type).toBe('sess-old');
      expect(r.attributes['tableau.raw.initiatingSessionId'], type).toBeUndefined();
    }
    // other tenant types keep the family move of initiatingSessionId
    expect(mapped('create_user', 'tenant', { initiatingSessionId: 'sess-old' }).attributes['session.id']).toBe('sess-old');
    const deleted = mapped('hist_delete_refresh_token_session', 'site', { sessionId: 'target-session', refreshTokenGuid: 'rt-1' });
    expect(deleted.attributes['session.id']).toBeUndefined();
    expect(deleted.attributes['tableau.session_id']).toBe('target-session');
    expect(deleted.attributes['tableau.target.id']).toBe('target-session');
    // a type without the opt-out keeps the family move
    expect(mapped('login_with_jwt', 'site', { sessionId: 'actor-session' }).attributes['session.id']).toBe('actor-session');
  });

  it('a sign-in\'s loginUrl is url.full', () => {
    const r = mapped('login_authentication', 'site', { loginUrl: 'https://sso.example.com/#/site/s1' });
    expect(r.attributes['url.full']).toBe('https://sso.example.com/#/site/s1');
    expect(r.attributes['tableau.login_url']).toBeUndefined();
  });

  it('http.request.method: known methods upper-cased, anything else _OTHER with the value in http.request.method_original', () => {
    const method = (m: unknown) => {
      const r = mapped('vizql_http_request', 'site', { method: m, requestUri: '/vizql/x' });
      return [r.attributes['http.request.method'], r.attributes['http.request.method_original'], r.attributes['tableau.method']];
    };
    expect(method('GET')).toEqual(['GET', undefined, undefined]);
    expect(method('post')).toEqual(['POST', 'post', undefined]);
    expect(method('Options')).toEqual(['OPTIONS', 'Options', undefined]);
    for (const m of ['PUT', 'DELETE', 'PATCH', 'HEAD', 'TRACE', 'CONNECT']) expect(method(m.toLowerCase())).toEqual([m, m.toLowerCase(), undefined]);
    expect(method('PROPFIND')).toEqual(['_OTHER', 'PROPFIND', undefined]);
    expect(method('get ')).toEqual(['_OTHER', 'get ', undefined]);
    expect(method('')).toEqual(['_OTHER', '', undefined]);
    // not a string: not an HTTP method, kept under its generic name with its type
    expect(method(7)).toEqual([undefined, undefined, 7]);
  });
});

describe('per-type semantics and the tenant overrides', () => {
  it('hash, drop and redact find a field by the name its type moves it to (user.name, http.request.method_original)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'semantics-overrides-'));
    try {
      const file = path.join(dir, 'overrides.yaml');
      writeFileSync(file, 'attributes:\n  hash: [user.name]\n  drop: [http.request.method_original]\n  redact: [tableau.initiating_session_id]\nhashKey: ${K}\n');
      const overrides = loadOverrides(file, { K: 'k'.repeat(32) });
      const encode = (eventType: string, key: string, record: Record<string, unknown>) => {
        const r = new RecordMapper(catalog, { tenantId: 't1', overrides }).map({ eventTime: '2026-11-29T10:11:12Z', ...record }, 1, { keyInfo: parseObjectKey(key.replace('ET', eventType)), uidPrefix: 'abc' }, OBSERVED);
        if (!r.ok) throw new Error(r.reason);
        return decodeOtlpLogsBody(encodeLogsRequest([r.record], scope), 'protobuf')[0]!.attributes;
      };
      const auth = encode('login_authentication', SITE_KEY, { username: 'alice@example.com' });
      expect(auth['user.name']).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(auth)).not.toContain('alice');
      const viz = encode('vizql_http_request', SITE_KEY, { method: 'propfind' });
      expect(viz['http.request.method']).toBe('_OTHER');
      expect(viz).not.toHaveProperty('http.request.method_original');
      // an override of http.request.method also covers the value as sent (one field, both names)
      const methodFile = path.join(dir, 'method.yaml');
      writeFileSync(methodFile, 'attributes:\n  redact: [http.request.method]\n');
      const r = new RecordMapper(catalog, { tenantId: 't1', overrides: loadOverrides(methodFile) }).map({ eventTime: '2026-11-29T10:11:12Z', method: 'propfind' }, 1, { keyInfo: parseObjectKey(SITE_KEY.replace('ET', 'vizql_http_request')), uidPrefix: 'abc' }, OBSERVED);
      expect(r.ok && decodeOtlpLogsBody(encodeLogsRequest([r.record], scope), 'protobuf')[0]!.attributes).toMatchObject({ 'http.request.method': '[redacted]', 'http.request.method_original': '[redacted]' });
      const jwt = encode('jwt_login', TENANT_KEY, { eventType: 'jwt_login', newSessionId: 'new', initiatingSessionId: 'old' });
      expect(jwt['session.id']).toBe('new');
      expect(jwt['tableau.initiating_session_id']).toBe('[redacted]');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('semantics: at load and in the generator', () => {
  const MAPPINGS = path.join(REPO_ROOT, 'mappings');
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'scripts', 'generate-catalog.ts'), ...args], { cwd: REPO_ROOT, encoding: 'utf8' });

  /** Writes the type's file with `semantics` and returns the 1-based line of the key holding `needle`. */
  function writeWith(dir: string, rel: string, semantics: Record<string, string>, needle: string): { file: string; line: number } {
    const file = path.join(dir, rel);
    const entry = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const text = stringify({ ...entry, semantics });
    writeFileSync(file, text);
    return { file, line: text.split('\n').findIndex((l) => l.includes(needle)) + 1 };
  }

  it('rejects an unknown semantic-convention name, an undocumented attribute and a keep without a family move, naming file and line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'semantics-load-'));
    try {
      cpSync(MAPPINGS, dir, { recursive: true });
      const a = writeWith(dir, 'site/login_verification.yaml', { username: 'user.nickname' }, 'username: user.nickname');
      expect(a.line).toBeGreaterThan(1);
      expect(() => loadCatalog(dir, { snapshot: false })).toThrow(new RegExp(`login_verification\\.yaml[\\s\\S]*${a.line}:\\d+: semantics\\.username: unknown semantic-convention name 'user\\.nickname'`));
      const b = writeWith(dir, 'site/login_verification.yaml', { userNmae: 'user.name' }, 'userNmae');
      expect(() => loadCatalog(dir, { snapshot: false })).toThrow(new RegExp(`login_verification\\.yaml[\\s\\S]*${b.line}:\\d+: semantics\\.userNmae: 'userNmae' is not an attribute of this event type`));
      const c = writeWith(dir, 'site/login_verification.yaml', { username: 'keep' }, 'username: keep');
      expect(() => loadCatalog(dir, { snapshot: false })).toThrow(new RegExp(`login_verification\\.yaml[\\s\\S]*${c.line}:\\d+: semantics\\.username: keep: 'username' has no site semantic-convention move`));
      // a valid one loads and is what the mapper uses
      writeWith(dir, 'site/login_verification.yaml', { username: 'user.name', userAgent: 'keep' }, 'username');
      const loaded = loadCatalog(dir, { snapshot: false });
      expect(loaded.eventTypes.get('login_verification')?.semantics).toEqual({ username: 'user.name', userAgent: 'keep' });
      const ctx = { keyInfo: parseObjectKey(SITE_KEY.replace('ET', 'login_verification')), uidPrefix: 'abc' };
      const r = new RecordMapper(loaded, { tenantId: 't1' }).map({ eventTime: '2026-11-29T10:11:12Z', userAgent: 'curl/8', username: 'u' }, 1, ctx, OBSERVED);
      expect(r.ok && r.record.attributes).toMatchObject({ 'tableau.user_agent': 'curl/8', 'user.name': 'u' });
      expect(r.ok && r.record.attributes['user_agent.original']).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('npm run catalog keeps a hand-written semantics key over the derived default, and derives it where the file has none', () => {
    const keep = mkdtempSync(path.join(tmpdir(), 'semantics-keep-'));
    const out = mkdtempSync(path.join(tmpdir(), 'semantics-out-'));
    try {
      cpSync(MAPPINGS, keep, { recursive: true });
      writeWith(keep, 'site/hist_delete_refresh_token_session.yaml', { sessionId: 'session.id' }, 'sessionId');
      writeWith(keep, 'site/vizql_http_request.yaml', { sessionId: 'keep' }, 'sessionId');
      const stripped = path.join(keep, 'site', 'login_authentication.yaml');
      const entry = parse(readFileSync(stripped, 'utf8')) as Record<string, unknown>;
      delete entry.semantics;
      writeFileSync(stripped, stringify(entry));
      const result = run(['--out', out, '--keep-from', keep]);
      expect(result.status, result.stderr).toBe(0);
      const read = (rel: string) => parse(readFileSync(path.join(out, rel), 'utf8')) as Record<string, unknown>;
      expect(read('site/hist_delete_refresh_token_session.yaml').semantics).toEqual({ sessionId: 'session.id' });
      // the file's key wins attribute by attribute; the derived default fills in the others
      expect(read('site/vizql_http_request.yaml').semantics).toEqual({ referrer: 'http.request.header.referer', sessionId: 'keep' });
      expect(read('site/login_authentication.yaml').semantics).toEqual({ username: 'user.name', loginUrl: 'url.full', acceptLanguage: 'http.request.header.accept-language' });
    } finally {
      rmSync(keep, { recursive: true, force: true });
      rmSync(out, { recursive: true, force: true });
    }
  });
});
