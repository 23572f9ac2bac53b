/**
 * Hardening (issue 16) through the real interfaces: which configured values count as secrets,
 * control characters in the pretty log format, configuration errors that quote `${VAR}` as
 * written, /readyz detail by caller, start-up warnings for weak settings (also from the built
 * CLI), and the mode of the file destination's output. (Overrides: tenant-overrides.test.ts;
 * per-object limits: object-chunks.test.ts; end to end: `npm run faults`, security-* rows.)
 */
import { describe, it, expect } from 'vitest';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import { createLogger, formatPretty } from '../src/daemon/logger.js';
import { fit } from '../src/daemon/terminal.js';
import { isCredentialHeader, registerSecrets, secretsOfDocument, secretsOfEnvironment } from '../src/core/redaction.js';
import { parseConfig } from '../src/daemon/config.js';
import { FileError, unsubstitute } from '../src/core/yaml-file.js';
import { showsReadyDetail, startHttpServer, type ReadyDetail } from '../src/daemon/http-server.js';
import { AddressRanges } from '../src/daemon/address-ranges.js';
import { securityWarnings } from '../src/daemon/security-warnings.js';
import { FileDestination } from '../src/export/file/destination.js';
import { silentLogger } from '../src/daemon/logger.js';
import { tempDir } from './support/activity-fixtures.js';
import { runCli } from './support/cli-process.js';

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

describe('secrets: credential headers and named secrets only', () => {
  it('keeps tenant ids and other header values, takes Authorization, api-key style headers and secret options', () => {
    const doc = {
      tenants: [
        {
          id: 'acme-prod',
          destinations: [
            {
              type: 'otlp',
              headers: {
                'X-Scope-OrgID': 'acme-prod',
                'Content-Type': 'application/x-protobuf',
                'X-Splunk-Request-Channel': 'c0ffee00-0000-4000-8000-000000000000',
                Authorization: 'Bearer auth-value-1',
                'Proxy-Authorization': 'Basic proxy-value-2',
                'dd-api-key': 'dd-value-3',
                'x-api-key': 'api-value-4',
                'x-tableau-session-token': 'session-value-5',
                Cookie: 'sid=cookie-value-6',
                'x-honeycomb-team': 'team-value-7',
              },
            },
          ],
        },
      ],
    };
    const found = secretsOfDocument(doc, {}, tempDir());
    expect(found.sort()).toEqual(['Bearer auth-value-1', 'Basic proxy-value-2', 'dd-value-3', 'api-value-4', 'session-value-5', 'sid=cookie-value-6', 'team-value-7'].sort());
    expect(secretsOfEnvironment({ OTEL_EXPORTER_OTLP_HEADERS: 'X-Scope-OrgID=acme-prod,api-key=env-api-value' })).toEqual(['env-api-value']);
    for (const h of ['authorization', 'X-SF-Token', 'x-amz-security-token', 'dd-application-key', 'lightstep-access-token']) expect(isCredentialHeader(h), h).toBe(true);
    for (const h of ['x-scope-orgid', 'content-type', 'x-request-id', 'x-splunk-request-channel', 'user-agent']) expect(isCredentialHeader(h), h).toBe(false);
  });

  it('a log line keeps the tenant id a header also carries and loses the token', () => {
    const lines: string[] = [];
    const log = createLogger('info', { format: 'json', out: { print: (t) => lines.push(t) } });
    registerSecrets(secretsOfDocument({ headers: { 'X-Scope-OrgID': 'acme-prod', authorization: 'Bearer tok-0123456789' } }, {}, tempDir()));
    log.child({ tenant: 'acme-prod' }).warn({ err: 'HTTP 401: you sent Bearer tok-0123456789' }, 'batch refused');
    expect(lines).toHaveLength(1);
    const o = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(o.tenant).toBe('acme-prod');
    expect(lines[0]).not.toContain('tok-0123456789');
    expect(o.err).toBe('HTTP 401: you sent [redacted]');
  });
});

describe('pretty logs: control characters are shown, never sent to the terminal', () => {
  it('message, keys and values with escape sequences come out escaped', () => {
    const lines: string[] = [];
    const log = createLogger('info', { format: 'pretty', colors: false, out: { print: (t) => lines.push(t) } });
    log.warn({ object: 'evil-\x1b]0;PWNED\x07.txt', err: { type: 'Error', message: 'bad \x1b[2J' }, ['k\x1b[31m']: 'v\u202e', n: 1 }, 'line dead-lettered \x9b1m\r\nfake line');
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(RAW_CONTROL);
    expect(line).not.toContain('\u202e');
    expect(line).toContain('object=evil-\\u001b]0;PWNED\\u0007.txt');
    expect(line).toContain('line dead-lettered \\u009b1m\\r\\nfake line');
    expect(line).toContain('k\\u001b[31m=');
    // a line that is not JSON is escaped as well
    expect(formatPretty('plain \x1b[2J text\n')).toBe('plain \\u001b[2J text\n');
  });

  it('JSON lines escape what JSON leaves raw (C1 controls, bidirectional overrides) and still parse to the same values', () => {
    const lines: string[] = [];
    const log = createLogger('info', { format: 'json', out: { print: (t) => lines.push(t) } });
    const object = 'a\x1b[2J\x9b31m\u202eb\u2028c';
    log.warn({ object }, 'line dead-lettered \x9b2J');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.trimEnd()).not.toMatch(RAW_CONTROL);
    expect(lines[0]).not.toMatch(/[\u202e\u2028]/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ object, msg: 'line dead-lettered \x9b2J' });
  });

  it('status lines keep their colours but not other control characters', () => {
    const out = fit('\x1b[1mname\x1b[0m obj-\x1b]0;x\x07', 100);
    expect(out.startsWith('\x1b[1mname\x1b[0m')).toBe(true);
    expect(out).toContain('obj-\\u001b]0;x\\u0007');
  });
});

describe('configuration errors quote values as written', () => {
  const base = (source: string) => `tenants:\n  - id: acme\n    sources:\n      - ${source}\n    destinations: [ { type: file, path: "-" } ]\n`;
  const errorOf = (text: string, env: NodeJS.ProcessEnv): string => {
    try {
      parseConfig('config.yaml', text, env);
    } catch (err) {
      expect(err).toBeInstanceOf(FileError);
      return (err as Error).message;
    }
    throw new Error('no error');
  };

  it('a PAT put where a time belongs is shown as ${TCM_PAT}', () => {
    const pat = 'pat-secret-value-0123456789';
    const message = errorOf(base('{ type: tcm, tenantId: t, patEnv: TCM_PAT, since: "${TCM_PAT}" }'), { TCM_PAT: pat });
    expect(message).toMatch(/config\.yaml:4:\d+: tenants\.0\.sources\.0\.since: /);
    expect(message).toContain('${TCM_PAT}');
    expect(message).not.toContain(pat);
  });

  it('a value built from a variable and text, a duplicate tenant id from a variable', () => {
    const secret = 'interval-secret-987654';
    const message = errorOf(base('{ type: directory, path: x, pollInterval: "every ${INTERVAL}" }'), { INTERVAL: secret });
    expect(message).toContain('every ${INTERVAL}');
    expect(message).not.toContain(secret);
    const dup = errorOf('tenants:\n  - { id: "${T}", sources: [ { type: directory, path: x } ], destinations: [ { type: file, path: "-" } ] }\n  - { id: "${T}", sources: [ { type: directory, path: y } ], destinations: [ { type: file, path: "-" } ] }\n', { T: 'tenant-from-env' });
    expect(dup).toContain("duplicate tenant id '${T}'");
    expect(dup).not.toContain('tenant-from-env');
  });
});

describe('unsubstitute', () => {
  it('puts every value back in one pass: a value that occurs in a variable name does not garble the text put back', () => {
    const subs = [
      { path: ['a'], written: '${SECRET_TOKEN}', value: 's3cr3t-value', inserted: [{ name: 'SECRET_TOKEN', value: 's3cr3t-value' }] },
      { path: ['b'], written: 'x-${PART}', value: 'x-SECRET', inserted: [{ name: 'PART', value: 'SECRET' }] },
    ];
    expect(unsubstitute('got "s3cr3t-value" and x-SECRET', ['a'], subs)).toBe('got "${SECRET_TOKEN}" and x-${PART}');
    // a short value is put back only in its own path's message
    const short = [{ path: ['n'], written: '${N}', value: '7', inserted: [{ name: 'N', value: '7' }] }];
    expect(unsubstitute('not a duration: "7"', ['n'], short)).toBe('not a duration: "${N}"');
    expect(unsubstitute('must be at least 1024, 7 items', ['other'], short)).toBe('must be at least 1024, 7 items');
  });
});

/** GET from 127.0.0.1, or with the client socket bound to `localAddress` (another 127/8 address: Linux routes all of it to lo). */
function get(port: number, path: string, localAddress?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, ...(localAddress ? { localAddress } : {}) }, (r) => {
        let body = '';
        r.setEncoding('utf8').on('data', (d: string) => (body += d));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('/readyz detail by caller', () => {
  const detail = { status: 'not ready', tenants: { 'acme-prod': { sources: [{ id: 's3://acme-bucket/' }], destinations: [{ lastError: 'HTTP 503 from collector.internal' }] } } };

  for (const [setting, expectDetail] of [
    ['loopback', true],
    ['all', true],
    ['none', false],
  ] as Array<[ReadyDetail, boolean]>) {
    it(`readyDetail: ${setting} — a loopback caller ${expectDetail ? 'gets' : 'does not get'} the detail`, async () => {
      const server = await startHttpServer({ host: '127.0.0.1', port: 0 }, { readiness: () => ({ ready: false, body: detail }), readyDetail: setting, metrics: async () => ({ contentType: 'text/plain', text: '' }) }, silentLogger());
      try {
        const port = Number(server.address.split(':').at(-1));
        const r = await get(port, '/readyz');
        expect(r.status).toBe(503);
        if (expectDetail) expect(JSON.parse(r.body)).toEqual(detail);
        else expect(JSON.parse(r.body)).toEqual({ status: 'not ready' });
      } finally {
        await server.close();
      }
    });
  }

  it('readyDetailFrom: a caller outside the ranges gets the status only (127.0.0.2 vs 127.0.0.1/32)', async () => {
    const endpoints = { readiness: () => ({ ready: false, body: detail }), metrics: async () => ({ contentType: 'text/plain', text: '' }) };
    const narrow = await startHttpServer({ host: '127.0.0.1', port: 0 }, { ...endpoints, readyDetailFrom: ['127.0.0.1/32'] }, silentLogger());
    const wide = await startHttpServer({ host: '127.0.0.1', port: 0 }, endpoints, silentLogger());
    try {
      const port = (s: { address: string }): number => Number(s.address.split(':').at(-1));
      const inside = await get(port(narrow), '/readyz');
      const outside = await get(port(narrow), '/readyz', '127.0.0.2');
      expect(inside.status).toBe(503);
      expect(JSON.parse(inside.body)).toEqual(detail);
      expect(outside.status).toBe(503);
      expect(JSON.parse(outside.body)).toEqual({ status: 'not ready' });
      expect(outside.body).not.toMatch(/acme|collector/);
      // the default ranges are all of loopback: 127.0.0.2 is in them
      expect(JSON.parse((await get(port(wide), '/readyz', '127.0.0.2')).body)).toEqual(detail);
    } finally {
      await narrow.close();
      await wide.close();
    }
  });

  it('readyDetailFrom ranges: CIDR and bare addresses, IPv4 mapped into IPv6', () => {
    const from = new AddressRanges(['10.1.0.0/16', '127.0.0.1', 'fd00::/8']);
    for (const a of ['10.1.2.3', '::ffff:10.1.255.255', '127.0.0.1', '::ffff:127.0.0.1', 'fd12::1']) expect(showsReadyDetail('loopback', a, from), a).toBe(true);
    for (const a of ['10.2.0.1', '127.0.0.2', '::1', 'fe80::1', 'not-an-address', '']) expect(showsReadyDetail('loopback', a, from), a).toBe(false);
    expect(showsReadyDetail('loopback', undefined, from)).toBe(false);
    expect(showsReadyDetail('none', '10.1.2.3', from)).toBe(false);
    expect(showsReadyDetail('all', '10.2.0.1', from)).toBe(true);
  });

  it('which callers count as loopback', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(showsReadyDetail('loopback', a), a).toBe(true);
    for (const a of ['192.0.2.7', '10.0.0.1', '::ffff:10.0.0.1', 'fd00::2', '0.0.0.0']) expect(showsReadyDetail('loopback', a), a).toBe(false);
    expect(showsReadyDetail('loopback', undefined)).toBe(false);
    expect(showsReadyDetail('all', '192.0.2.7')).toBe(true);
    expect(showsReadyDetail('none', '127.0.0.1')).toBe(false);
  });

  it('server.readyDetail in the config: loopback by default, one of three values', () => {
    const tenants = 'tenants: [ { id: a, sources: [ { type: directory, path: x } ], destinations: [ { type: file, path: "-" } ] } ]\n';
    expect(parseConfig('c.yaml', tenants).config.server.readyDetail).toBe('loopback');
    expect(parseConfig('c.yaml', 'server: { address: "0.0.0.0:9464" }\n' + tenants).config.server.readyDetail).toBe('loopback');
    expect(parseConfig('c.yaml', 'server: { readyDetail: none }\n' + tenants).config.server.readyDetail).toBe('none');
    expect(() => parseConfig('c.yaml', 'server: { readyDetail: everyone }\n' + tenants)).toThrow(/c\.yaml:1:\d+: server\.readyDetail/);
  });

  it('server.readyDetailFrom in the config: absent by default, CIDR ranges, only with readyDetail: loopback', () => {
    const tenants = 'tenants: [ { id: a, sources: [ { type: directory, path: x } ], destinations: [ { type: file, path: "-" } ] } ]\n';
    expect(parseConfig('c.yaml', tenants).config.server.readyDetailFrom).toBeUndefined();
    expect(parseConfig('c.yaml', 'server: { readyDetailFrom: [ 127.0.0.1/32, "10.0.0.0/8", "::1" ] }\n' + tenants).config.server.readyDetailFrom).toEqual(['127.0.0.1/32', '10.0.0.0/8', '::1']);
    expect(() => parseConfig('c.yaml', 'server:\n  readyDetailFrom: [ 127.0.0.1/32, 10.0.0.0/33 ]\n' + tenants)).toThrow(/c\.yaml:2:\d+: server\.readyDetailFrom\.1.*prefix length/);
    expect(() => parseConfig('c.yaml', 'server:\n  readyDetailFrom: [ intranet ]\n' + tenants)).toThrow(/c\.yaml:2:\d+: server\.readyDetailFrom\.0.*not an IP address/);
    expect(() => parseConfig('c.yaml', 'server: { readyDetailFrom: [] }\n' + tenants)).toThrow(/server\.readyDetailFrom/);
    expect(() => parseConfig('c.yaml', 'server: { readyDetail: all, readyDetailFrom: [ 10.0.0.0/8 ] }\n' + tenants)).toThrow(/server\.readyDetailFrom.*readyDetail: loopback only/);
  });
});

describe('start-up warnings', () => {
  const configWith = (destinations: unknown[], sources: unknown[] = [{ type: 'directory', path: 'x' }]) => parseConfig('c.yaml', JSON.stringify({ tenants: [{ id: 'acme', sources, destinations }] })).config;

  it('insecureSkipVerify: true, and credentials over plain http to a host that is not this machine', () => {
    const warnings = securityWarnings(
      configWith([
        { type: 'otlp', name: 'unverified', endpoint: 'https://collector.example:4318', insecureSkipVerify: true },
        { type: 'otlp', name: 'plain-token', endpoint: 'http://collector.example:4318', headers: { authorization: 'Bearer x' } },
        { type: 'otlp', name: 'plain-no-credentials', endpoint: 'http://collector.example:4318', headers: { 'X-Scope-OrgID': 'acme' } },
        { type: 'otlp', name: 'loopback-token', endpoint: 'http://127.0.0.1:4318', headers: { authorization: 'Bearer x' } },
        { type: 'otlp', name: 'localhost-token', endpoint: 'http://localhost:4318', headers: { 'x-api-key': 'x' } },
        { type: 'otlp', name: 'userinfo', endpoint: 'http://user:pw-in-url@collector.example:4318/path?q=1' },
        { type: 'otlp', name: 'https-token', endpoint: 'https://collector.example:4318', headers: { authorization: 'Bearer x' } },
      ]),
      {},
    );
    expect(warnings.map((w) => `${w.fields.destination}: ${/insecureSkipVerify/.test(w.msg) ? 'tls' : 'plain'}`).sort()).toEqual(['plain-token: plain', 'unverified: tls', 'userinfo: plain']);
    const userinfo = warnings.find((w) => w.fields.destination === 'userinfo')!;
    expect(userinfo.fields.url).toBe('http://collector.example:4318');
    expect(JSON.stringify(warnings)).not.toContain('pw-in-url');
  });

  it('the OTLP endpoint and headers from the environment; sources', () => {
    const fromEnv = securityWarnings(configWith([{ type: 'otlp' }]), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel.example:4318', OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20x' });
    expect(fromEnv).toHaveLength(1);
    expect(fromEnv[0]!.fields).toMatchObject({ tenant: 'acme', destination: 'otlp', url: 'http://otel.example:4318' });
    expect(securityWarnings(configWith([{ type: 'otlp' }]), { OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20x' })).toHaveLength(0); // default localhost:4318
    const tcm = securityWarnings(configWith([{ type: 'file', path: '-' }], [{ type: 'tcm', url: 'http://tcm.example', tenantId: 't', patEnv: 'PAT' }]), {});
    expect(tcm.map((w) => w.fields)).toEqual([{ tenant: 'acme', source: 'tcm', type: 'tcm', url: 'http://tcm.example' }]);
  });

  it('the built CLI warns once per weak setting at start and runs on', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'empty'));
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      JSON.stringify({
        state: { dir: join(dir, 'state') },
        tenants: [{ id: 'acme', sources: [{ type: 'directory', path: join(dir, 'empty') }], destinations: [{ type: 'otlp', name: 'unverified', endpoint: 'https://127.0.0.1:9', insecureSkipVerify: true }] }],
      }),
    );
    const r = await runCli(['run', '--once', '--config', config]);
    expect(r.code, r.stderr).toBe(0);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('insecureSkipVerify'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 'warn', tenant: 'acme', destination: 'unverified', url: 'https://127.0.0.1:9' });
  });
});

describe('file destination', () => {
  it('creates its output readable by the owner only', async () => {
    const path = join(tempDir(), 'out', 'records.jsonl');
    const d = new FileDestination({ type: 'file', path });
    expect(await d.send(new TextEncoder().encode('{"resourceLogs":[]}'))).toEqual({ kind: 'done' });
    await d.shutdown();
    expect((statSync(path).mode & 0o777).toString(8)).toBe('600');
  });
});
