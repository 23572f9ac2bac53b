/** Small pieces of the daemon: log formats, warnings, secret scrubbing, listen addresses, progress figures, the status area. */
import { describe, it, expect } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, formatPretty, resolveLogFormat, routeProcessWarnings } from '../src/daemon/logger.js';
import { registerSecrets, scrubSecrets, secretsOfDocument, secretsOfEnvironment } from '../src/core/redaction.js';
import { parseListenAddress, formatListenAddress } from '../src/daemon/http-server.js';
import { progressFigures, progressLine, duration, bytes, ProgressReporter } from '../src/daemon/progress.js';
import { StatusArea, fit } from '../src/daemon/terminal.js';
import { parseConfig } from '../src/daemon/config.js';
import { listenAddress } from '../src/daemon/run-command.js';
import type { SourceProgressView } from '../src/daemon/daemon.js';
import type { SourceProgress } from '../src/pipeline/source-runner.js';
import { tempDir } from './support/activity-fixtures.js';

function capture(): { out: { print(t: string): void }; lines: string[] } {
  const lines: string[] = [];
  return { out: { print: (t) => lines.push(t) }, lines };
}

describe('logs', () => {
  it('JSON by default off a terminal, pretty on one; LOG_FORMAT overrides', () => {
    expect(resolveLogFormat({}, false)).toBe('json');
    expect(resolveLogFormat({}, true)).toBe('pretty');
    expect(resolveLogFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(resolveLogFormat({ LOG_FORMAT: 'PRETTY' }, false)).toBe('pretty');
  });

  it('one JSON line per event with level, time, tenant, source, object', () => {
    const { out, lines } = capture();
    const log = createLogger('info', { format: 'json', out });
    log.child({ tenant: 'acme' }).child({ source: 's3://b/' }).warn({ object: 'k/1.txt', line: 7 }, 'line dead-lettered');
    log.debug('not shown');
    expect(lines).toHaveLength(1);
    const o = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(o).toMatchObject({ level: 'warn', tenant: 'acme', source: 's3://b/', object: 'k/1.txt', line: 7, msg: 'line dead-lettered' });
    expect(typeof o.time).toBe('string');
  });

  it('pretty: time, level, message, then tenant/source/object and the other fields as key=value', () => {
    const line = JSON.stringify({ level: 'error', time: '2026-11-30T10:11:12.345Z', service: 'x', tenant: 'acme', object: 'a b.txt', source: 'dir', n: 3, nested: { a: 1 }, msg: 'object unreadable' });
    expect(formatPretty(line)).toBe('10:11:12.345 ERROR object unreadable tenant=acme source=dir object="a b.txt" n=3 nested={"a":1}\n');
    expect(formatPretty(line, true)).toContain('\x1b[31mERROR\x1b[0m');
    expect(formatPretty('not json')).toBe('not json\n');
  });

  it('secrets are scrubbed from every line, whatever field they are in', () => {
    registerSecrets(['Bearer unit-test-token-abcdef', 'pw"with\\quote-123456']);
    const { out, lines } = capture();
    const log = createLogger('info', { format: 'json', out });
    log.info({ reason: 'refused: Bearer unit-test-token-abcdef', other: 'unit-test-token-abcdef', q: 'pw"with\\quote-123456' }, 'x');
    log.info({ headers: { a: 'b' }, token: 't' }, 'y');
    expect(lines.join('')).not.toContain('unit-test-token-abcdef');
    expect(lines.join('')).not.toContain('quote-123456');
    expect(JSON.parse(lines[0]!)).toMatchObject({ reason: 'refused: [redacted]', other: '[redacted]', q: '[redacted]' });
    expect(JSON.parse(lines[1]!)).toMatchObject({ headers: '[redacted]', token: '[redacted]' });
  });

  it('process warnings go through the logger; the AWS SDK Node-version notice once, at debug', async () => {
    const { out, lines } = capture();
    const log = createLogger('debug', { format: 'json', out });
    const undo = routeProcessWarnings(log);
    try {
      process.emitWarning('NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)\nwill require node >=22.');
      process.emitWarning('NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)\nwill require node >=22.');
      process.emitWarning('something odd', { code: 'X_ODD' });
      await new Promise((r) => setImmediate(r));
    } finally {
      undo();
    }
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.filter((l) => l.warning === 'NodeVersionSupportWarning')).toHaveLength(1);
    expect(parsed.find((l) => l.warning === 'NodeVersionSupportWarning')).toMatchObject({ level: 'debug' });
    expect(parsed.find((l) => l.code === 'X_ODD')).toMatchObject({ level: 'warn', msg: 'something odd' });
  });
});

describe('secrets of a configuration', () => {
  it('header values, secret-named options, the variables …Env options name, the files …File options name', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'pat.txt'), '  pat-from-file-123456\n');
    const doc = {
      tenants: [
        {
          sources: [{ type: 'tcm', patFile: 'pat.txt' }, { type: 's3', accessKeyIdEnv: 'K', secretAccessKeyEnv: 'S', caFile: 'ca.pem' }],
          destinations: [{ type: 'otlp', headers: { authorization: 'Bearer abcdefgh-1234' } }, { type: 'splunk-hec', tokenEnv: 'HEC' }],
        },
      ],
      hashKey: 'hash-key-0123456789',
    };
    const found = secretsOfDocument(doc, { K: 'AKIAKEYID123', S: 'secret-value-xyz', HEC: 'hec-token-0000' }, dir);
    expect(found.sort()).toEqual(['  pat-from-file-123456\n', 'AKIAKEYID123', 'Bearer abcdefgh-1234', 'hash-key-0123456789', 'hec-token-0000', 'secret-value-xyz'].sort());
    expect(secretsOfEnvironment({ OTEL_EXPORTER_OTLP_HEADERS: 'dd-api-key=abc%20defghij,x=1', AWS_SECRET_ACCESS_KEY: 'aws-secret-000' })).toEqual(['abc%20defghij', 'abc defghij', 'aws-secret-000']);
    registerSecrets(found);
    expect(scrubSecrets('token abcdefgh-1234 and Bearer abcdefgh-1234 and pat-from-file-123456')).toBe('token [redacted] and [redacted] and [redacted]');
  });
});

describe('listen addresses', () => {
  it('host:port forms', () => {
    expect(parseListenAddress('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListenAddress(':9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseListenAddress('[::]:9464')).toEqual({ host: '::', port: 9464 });
    expect(parseListenAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
    expect(parseListenAddress('9464')).toBeUndefined();
    expect(parseListenAddress('a:99999')).toBeUndefined();
    expect(formatListenAddress({ host: '::1', port: 1 })).toBe('[::1]:1');
  });

  it('--listen, then server.address, then TAO_LISTEN, then 127.0.0.1:9464; --once only with --listen; enabled: false', () => {
    const base = 'tenants: [ { id: a, sources: [ { type: directory, path: x } ], destinations: [ { type: file, path: "-" } ] } ]\n';
    const plain = parseConfig('c.yaml', base);
    expect(listenAddress(plain, { once: false, env: {} })).toBe('127.0.0.1:9464');
    expect(listenAddress(plain, { once: false, env: { TAO_LISTEN: '0.0.0.0:9464' } })).toBe('0.0.0.0:9464');
    expect(listenAddress(plain, { once: true, env: { TAO_LISTEN: '0.0.0.0:9464' } })).toBeUndefined();
    expect(listenAddress(plain, { once: true, listen: ':1234', env: {} })).toBe(':1234');
    const configured = parseConfig('c.yaml', 'server: { address: "0.0.0.0:9000" }\n' + base);
    expect(listenAddress(configured, { once: false, env: { TAO_LISTEN: ':1' } })).toBe('0.0.0.0:9000');
    expect(listenAddress(configured, { once: false, listen: ':2', env: {} })).toBe(':2');
    const off = parseConfig('c.yaml', 'server: { enabled: false }\n' + base);
    expect(listenAddress(off, { once: false, env: {} })).toBeUndefined();
    expect(() => parseConfig('c.yaml', 'server: { address: "nope" }\n' + base)).toThrow(/c\.yaml:1:\d+: server\.address: an address is host:port/);
  });
});

function view(p: Partial<SourceProgress>, hasMore = false): SourceProgressView {
  const progress: SourceProgress = { objectsListed: 0, bytesListed: 0, sizesKnown: true, objectsRead: 0, bytesRead: 0, events: 0, exported: 0, newestExportedTimeUnixNano: 0n, lastPollOkAt: 0, lastErrorAt: 0, ...p };
  return { tenant: 'acme', source: 'directory:/data', type: 'directory', progress, hasMore };
}

describe('progress', () => {
  it('percent and ETA by bytes when sizes are known, by objects otherwise, none while the total is unknown', () => {
    const rates = { eventsPerSecond: 1000, bytesPerSecond: 1_000_000, objectsPerSecond: 2 };
    expect(progressFigures(view({ objectsListed: 10, objectsRead: 4, bytesListed: 10_000_000, bytesRead: 2_500_000, events: 4000 }), rates)).toMatchObject({ percent: 25, etaSeconds: 8, done: false, eventsPerSecond: 1000 });
    expect(progressFigures(view({ objectsListed: 10, objectsRead: 4, sizesKnown: false }), rates)).toMatchObject({ percent: 40, etaSeconds: 3 });
    const unknown = progressFigures(view({ objectsListed: 10, objectsRead: 4 }, true), rates);
    expect(unknown.percent).toBeUndefined();
    expect(unknown.etaSeconds).toBeUndefined();
    expect(progressFigures(view({ objectsListed: 3, objectsRead: 3, bytesListed: 30, bytesRead: 30 }), rates)).toMatchObject({ percent: 100, etaSeconds: 0, done: true });
  });

  it('a line per source', () => {
    const f = progressFigures(view({ objectsListed: 40, objectsRead: 12, bytesListed: 4_000_000, bytesRead: 1_800_000, events: 3400 }), { eventsPerSecond: 1234, bytesPerSecond: 100_000, objectsPerSecond: 1 });
    expect(progressLine(f)).toBe('acme directory:/data   45%  [███████░░░░░░░░░]  ETA 0:22  12/40 objects  3,400 events  1,234/s  1.7 MB');
    expect(progressLine(progressFigures(view({ objectsListed: 5, objectsRead: 1 }, true), { eventsPerSecond: 0, bytesPerSecond: 0, objectsPerSecond: 0 }))).toBe('acme directory:/data  [                ]  1/5+ objects  0 events  0/s  0 B');
    expect(duration(3725)).toBe('1:02:05');
    expect(duration(59)).toBe('0:59');
    expect(bytes(1536)).toBe('1.5 KB');
  });

  it('plain mode logs one line per source with the figures', () => {
    const { out, lines } = capture();
    let now = 0;
    const v = view({ objectsListed: 10, objectsRead: 0, bytesListed: 1000 });
    const reporter = new ProgressReporter(() => [v], { tty: false, intervalMs: 1000, log: createLogger('info', { format: 'json', out }), now: () => now });
    reporter.tick();
    now = 2000;
    v.progress.objectsRead = 5;
    v.progress.bytesRead = 500;
    v.progress.events = 100;
    reporter.tick();
    const last = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    expect(last).toMatchObject({ msg: 'progress', tenant: 'acme', source: 'directory:/data', objectsRead: 5, objectsListed: 10, events: 100, eventsPerSecond: 50, percent: 50, etaSeconds: 2 });
  });
});

describe('status area', () => {
  it('log lines print above the status lines, which are redrawn in place', () => {
    const written: string[] = [];
    const area = new StatusArea({ write: (t) => written.push(t) }, () => 40);
    area.print('a\n');
    area.update(['bar 1', 'bar 2']);
    area.print('b\n');
    area.update(['bar 3']);
    area.done();
    area.print('c\n');
    expect(written).toEqual(['a\n', 'bar 1\nbar 2\n', '\r\x1b[2A\x1b[0Jb\nbar 1\nbar 2\n', '\r\x1b[2A\x1b[0Jbar 3\n', 'c\n']);
    expect(fit('x'.repeat(50), 40)).toBe('x'.repeat(39) + '\x1b[0m');
    expect(fit('\x1b[1mab\x1b[0m', 40)).toBe('\x1b[1mab\x1b[0m');
  });
});
