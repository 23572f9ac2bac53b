/**
 * Conformance of every registered destination type (the list in src/export/destination-types.ts:
 * a new type is covered without touching this file). Each type is built from its descriptor's
 * sample configuration through the registry, as the daemon builds it, and must:
 *
 * - parse with the `destinations:` schema, and encode a record with the encoder its spec names;
 * - deliver to its target (a local HTTP server, or for a type without HTTP its own output);
 * - shut down twice without error.
 *
 * Types with the `http` capability also, against a scripted server on 127.0.0.1:
 * - probe (when they have one): accepted → done, 401 → hold;
 * - classify answers: 2xx done, 429 retry with its Retry-After, 503 retry, 401 hold, 400
 *   reject-content, 302 hold with the redirect not followed; an unreachable server and no
 *   answer within `timeout` (a duration) are retries;
 * - carry their credential and the configured extra headers, and never show the credential or
 *   a configured credential header's value in any reason or response excerpt;
 * - read the deprecated `timeoutMs` and warn about it once.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { DESTINATION_TYPES, createDestination, destinationConfigSchema, loadDestinationTypes } from '../src/export/destination-registry.js';
import type { DestinationDescriptor } from '../src/export/destination-type.js';
import type { Destination, SendOutcome } from '../src/export/destination.js';
import { createEncoder, encodingType } from '../src/export/encodings.js';
import { ENCODING_TYPES } from '../src/export/encoding-types.js';
import { createLogger } from '../src/daemon/logger.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import { tempDir } from './support/activity-fixtures.js';

const SECRET = 'conformance-SECRET-0123456789';
const HEADER_SECRET = 'header-SECRET-abcdefghij';
const SCOPE = { name: 'tableau-activity-otel', version: 'test' };

const RECORD: MappedLogRecord = {
  timeUnixNano: 1795928827123456789n,
  observedTimeUnixNano: 1795928828000000000n,
  severityNumber: 9,
  severityText: 'INFO',
  eventName: 'tableau.login',
  eventType: 'login',
  body: 'user signed in',
  attributes: { 'user.id': 'u1', 'tableau.count': 3 },
  resource: { key: 'r', attributes: { 'service.name': 'tableau-cloud', 'tableau.site_luid': 'S1' } },
};

interface Seen {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the client's timeout must end the request). */
  hang?: boolean;
}

/** A server that records every request (body decompressed) and answers from a script. */
async function scriptedServer(): Promise<{ url: string; seen: Seen[]; answer: (a: Answer) => void; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  let next: Answer = { status: 200, body: '{}' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      seen.push({ path: req.url ?? '', headers: req.headers, body: req.headers['content-encoding'] === 'gzip' && raw.length > 0 ? gunzipSync(raw) : raw });
      if (next.hang) return;
      res.writeHead(next.status, { 'Content-Type': 'application/json', ...next.headers });
      res.end(next.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    answer: (a) => (next = a),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The text followed by the decoding of each JSON string in it that is base64 (40 characters or more). */
function withBase64Decoded(text: string): string {
  const decoded = [...text.matchAll(/"([A-Za-z0-9+/]{40,}={0,2})"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'));
  return [text, ...decoded].join('\n');
}

/** Every text an outcome carries that could reach a log line or a dead letter. */
function textsOf(o: SendOutcome): string[] {
  if (o.kind === 'done') return [];
  return [o.reason, ...(o.kind === 'rejected' && o.response !== undefined ? [o.response] : [])];
}

function captureLog(): { lines: () => Array<Record<string, unknown>>; log: ReturnType<typeof createLogger> } {
  const out: string[] = [];
  const log = createLogger('debug', { format: 'json', out: { print: (t) => out.push(t) } });
  return { log, lines: () => out.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const descriptors = DESTINATION_TYPES as readonly DestinationDescriptor[];

it('the registry lists every type once, and the destinations: schema accepts each sample configuration', () => {
  expect(descriptors.length).toBeGreaterThanOrEqual(4);
  expect(new Set(descriptors.map((d) => d.type)).size).toBe(descriptors.length);
  for (const d of descriptors) {
    const { config } = d.sampleConfig({ url: 'http://127.0.0.1:1', dir: '/tmp', secret: SECRET });
    expect(destinationConfigSchema.parse(config).type).toBe(d.type);
    // the schema is strict: a misspelt option is an error, not ignored
    expect(destinationConfigSchema.safeParse({ ...(config as object), notAnOption: 1 }).success).toBe(false);
  }
});

describe.each(descriptors.map((d) => [d.type, d] as const))('destination type %s', (type, descriptor) => {
  let server: Awaited<ReturnType<typeof scriptedServer>>;
  const built: Destination[] = [];
  let dir: string;

  beforeAll(async () => {
    server = await scriptedServer();
    dir = tempDir();
    await loadDestinationTypes([{ type }]);
  });
  afterEach(async () => {
    await Promise.all(built.splice(0).map((d) => d.shutdown()));
  });
  afterAll(async () => {
    await server.close();
  });

  /** The type's sample configuration against the scripted server, with `extra` options, built through the registry. */
  function build(extra: Record<string, unknown> = {}, log = captureLog().log): Destination {
    const sample = descriptor.sampleConfig({ url: server.url, dir, secret: SECRET });
    const config = destinationConfigSchema.parse({ ...(sample.config as object), ...extra });
    const d = createDestination(config, { baseDir: dir, tenantId: 'acme', env: sample.env, log });
    built.push(d);
    return d;
  }

  function body(d: Destination): Uint8Array {
    const encoded = createEncoder(d.encoding, SCOPE).encode([RECORD]);
    expect(encoded.bodies.length).toBe(1);
    return encoded.bodies[0]!;
  }

  const signal = new AbortController().signal;

  it('lists its encodings among the encode workers\' (encoding-types.ts), the very same objects', () => {
    expect(descriptor.encoding.types.length).toBeGreaterThan(0);
    for (const t of descriptor.encoding.types) {
      expect(ENCODING_TYPES, `encoding ${t.kind} of ${type} is not in ENCODING_TYPES`).toContain(t);
      expect(encodingType({ kind: t.kind })).toBe(t);
    }
  });

  it('encodes a record with the encoder its spec names, delivers it, and shuts down twice', async () => {
    const d = build();
    expect(typeof d.probe === 'function', 'capabilities.probe says whether it has a probe').toBe(descriptor.capabilities.probe);
    expect(d.encoding).toEqual(descriptor.encoding.specFromConfig(destinationConfigSchema.parse(descriptor.sampleConfig({ url: server.url, dir, secret: SECRET }).config) as never, {}));
    const payload = body(d);
    const before = server.seen.length;
    server.answer({ status: 200, body: '{}' });
    expect(await d.send(payload, 1, signal)).toEqual({ kind: 'done' });
    if (descriptor.capabilities.http) {
      expect(server.seen.length).toBe(before + 1);
      // the record arrived (the body as the encoder made it, decompressed; with its base64 strings decoded, for an API that takes each record as bytes such as Chronicle's logs:import)
      expect(withBase64Decoded(server.seen.at(-1)!.body.toString('latin1'))).toContain('u1');
    } else {
      expect(server.seen.length).toBe(before);
    }
    await d.shutdown();
    await d.shutdown();
  });

  it.runIf(!descriptor.capabilities.http)('without HTTP: the probe and a send succeed against its own output', async () => {
    const d = build();
    if (descriptor.capabilities.probe) expect(await d.probe!(signal)).toEqual({ kind: 'done' });
    expect(await d.send(body(d), 1, signal)).toEqual({ kind: 'done' });
    await d.shutdown();
    const sample = descriptor.sampleConfig({ url: server.url, dir, secret: SECRET }).config as { path?: string };
    if (sample.path) expect(readFileSync(sample.path, 'utf8')).toContain('u1');
  });

  describe.runIf(descriptor.capabilities.http)('HTTP', () => {
    it.runIf(descriptor.capabilities.probe)('probe: accepted is done, 401 is a hold; the credential travels with it', async () => {
      const d = build();
      server.answer({ status: 200, body: '{}' });
      expect(await d.probe!(signal)).toEqual({ kind: 'done' });
      expect(JSON.stringify(server.seen.at(-1)!.headers)).toContain(SECRET);
      server.answer({ status: 401, body: `{"text":"Invalid token ${SECRET}","code":4}` });
      const held = await d.probe!(signal);
      expect(held).toMatchObject({ kind: 'hold', status: 401 });
      for (const t of textsOf(held)) expect(t).not.toContain(SECRET);
    });

    it('classifies answers: 2xx done, 429 retry after Retry-After, 503 retry, 401 hold, 400 reject-content, 302 hold and not followed', async () => {
      const d = build();
      const payload = body(d);
      const outcomes: SendOutcome[] = [];
      const send = async (a: Answer): Promise<SendOutcome> => {
        server.answer(a);
        const o = await d.send(payload, 1, signal);
        outcomes.push(o);
        return o;
      };
      expect(await send({ status: 202, body: '{}' })).toEqual({ kind: 'done' });
      expect(await send({ status: 429, headers: { 'Retry-After': '7' }, body: 'slow down' })).toMatchObject({ kind: 'retry', retryAfterMs: 7000 });
      expect(await send({ status: 503, body: `down; you sent ${SECRET}` })).toMatchObject({ kind: 'retry' });
      expect(await send({ status: 401, body: `{"text":"bad credentials ${SECRET}","errors":["bad key ${SECRET}"]}` })).toMatchObject({ kind: 'hold', status: 401 });
      const rejected = await send({ status: 400, body: `{"text":"invalid event, you sent ${SECRET}","errors":["invalid ${SECRET}"]}` });
      expect(rejected).toMatchObject({ kind: 'rejected', status: 400 });
      const before = server.seen.length;
      const moved = await send({ status: 302, headers: { Location: `${server.url}/moved?token=${SECRET}` }, body: '' });
      expect(moved).toMatchObject({ kind: 'hold', status: 302 });
      expect(server.seen.length).toBe(before + 1);
      expect(server.seen.some((s) => s.path.startsWith('/moved'))).toBe(false);
      // the credential went with every request, and shows in no reason or excerpt
      for (const s of server.seen) expect(JSON.stringify(s.headers)).toContain(SECRET);
      for (const o of outcomes) for (const t of textsOf(o)) expect(t).not.toContain(SECRET);
      expect(outcomes.flatMap(textsOf).join('\n')).toContain('[redacted]');
    });

    it('an unreachable server and no answer within `timeout` are retries', async () => {
      const down = await scriptedServer();
      const url = down.url;
      await down.close();
      const sample = descriptor.sampleConfig({ url, dir, secret: SECRET });
      const config = destinationConfigSchema.parse(sample.config);
      const unreachable = createDestination(config, { baseDir: dir, env: sample.env });
      built.push(unreachable);
      const o = await unreachable.send(body(unreachable), 1, signal);
      expect(o.kind).toBe('retry');
      for (const t of textsOf(o)) expect(t).not.toContain(SECRET);

      const d = build({ timeout: '300ms' });
      server.answer({ status: 200, hang: true });
      const started = Date.now();
      const slow = await d.send(body(d), 1, signal);
      expect(slow).toMatchObject({ kind: 'retry' });
      expect((slow as { reason: string }).reason).toMatch(/300 ms/);
      expect(Date.now() - started).toBeLessThan(20_000);
      server.answer({ status: 200, body: '{}' });
    });

    it('carries configured headers; a credential header value never shows in a reason', async () => {
      const d = build({ headers: { 'X-Scope-OrgID': 'acme-prod', 'X-Api-Key': HEADER_SECRET } });
      server.answer({ status: 400, body: `{"text":"rejected ${HEADER_SECRET} for acme-prod","errors":["${HEADER_SECRET}"]}` });
      const o = await d.send(body(d), 1, signal);
      const h = server.seen.at(-1)!.headers;
      expect(h['x-scope-orgid']).toBe('acme-prod');
      expect(h['x-api-key']).toBe(HEADER_SECRET);
      expect(o.kind).toBe('rejected');
      for (const t of textsOf(o)) expect(t).not.toContain(HEADER_SECRET);
      server.answer({ status: 200, body: '{}' });
    });

    it('reads the deprecated timeoutMs, warning once', async () => {
      const first = captureLog();
      const d = build({ timeoutMs: 300 }, first.log);
      build({ timeoutMs: 400 }, first.log);
      const warnings = first.lines().filter((l) => String(l.msg).includes('timeoutMs is deprecated'));
      expect(warnings.length).toBe(1);
      expect(warnings[0]).toMatchObject({ destinationType: type, option: 'timeoutMs' });
      server.answer({ status: 200, hang: true });
      const slow = await d.send(body(d), 1, signal);
      expect((slow as { reason?: string }).reason).toMatch(/300 ms/);
      server.answer({ status: 200, body: '{}' });
    });
  });
});
