/**
 * A Splunk HTTP Event Collector for tests, on 127.0.0.1 (HTTP, or HTTPS with a given key and
 * certificate), that parses what arrives as Splunk documents it, independently of our encoder:
 *
 * - `POST /services/collector/event`, header `Authorization: Splunk <token>` (401 with HEC's
 *   `{"text":"Invalid token","code":4}` otherwise), `Content-Encoding: gzip` honoured;
 * - the body is "batched events": JSON objects one after another (whitespace between them
 *   optional, NOT an array); each must have `event`; `time` must be a number (its literal text
 *   is kept, to check the precision); `fields` values must be strings or arrays of strings
 *   (HEC answers `{"text":"Error in handling indexed fields","code":15}` otherwise);
 * - with indexer acknowledgement on: `X-Splunk-Request-Channel` required (400 code 10 without),
 *   the answer carries `ackId`, and `POST /services/collector/ack?channel=…` with
 *   `{"acks":[ids]}` answers `{"acks":{"<id>":true|false}}`.
 *
 * Responses can be injected (429 with Retry-After, 503, 400 …); events are recorded only for
 * requests answered 2xx.
 */
import type http from 'node:http';
import { listenLocal } from './local-server.js';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HecEvent {
  /** The object as parsed. */
  value: Record<string, unknown>;
  /** The literal text of `time` as it was on the wire (e.g. "1718561027.203309"). */
  timeLiteral: string | undefined;
  /** Index of the request it came in. */
  request: number;
}

export interface HecRequest {
  path: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Body size on the wire, and after gunzip. */
  wireBytes: number;
  rawBytes: number;
  events: number;
  ackId?: number;
}

export interface HecQueuedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface HecServerOptions {
  token: string;
  tls?: { key: string; cert: string };
  /** Indexer acknowledgement: acks arrive after this many polls for the id (default 1). */
  ack?: { pollsUntilAcked?: number; neverAck?: (ackId: number) => boolean };
}

export interface HecServer {
  url: string;
  requests: HecRequest[];
  /** Events of accepted requests, in arrival order. */
  events: HecEvent[];
  ackPolls: Array<{ channel: string | undefined; ids: number[] }>;
  /** Ids reported acknowledged. */
  acked: Set<number>;
  respondNext(...responses: HecQueuedResponse[]): void;
  /** Accept this token from now on (the one given at start is no longer accepted): a token rotated on the server. */
  setToken(token: string): void;
  /** Answer 413 to an event request whose body (as received) is larger than this (null: no limit), as HEC's max_content_length does. */
  setMaxContentLength(bytes: number | null): void;
  /** Answer 400 "Invalid data format" (code 6, with invalid-event-number) to a request holding a matching event (null: off). */
  rejectEvents(match: ((event: Record<string, unknown>) => boolean) | null): void;
  /** Bad requests seen: what the server found wrong with them. */
  problems: string[];
  close(): Promise<void>;
}

/**
 * Split HEC batched events into objects: a scanner that finds each top-level object's end
 * (tracking strings and escapes) and the literal text of its top-level `time` value.
 */
export function splitConcatenatedJson(text: string): Array<{ json: string; timeLiteral: string | undefined }> {
  const out: Array<{ json: string; timeLiteral: string | undefined }> = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && /\s/.test(text[i]!)) i++;
    if (i >= n) break;
    if (text[i] !== '{') throw new Error(`expected '{' at offset ${i}, got ${JSON.stringify(text.slice(i, i + 20))}`);
    const start = i;
    let depth = 0;
    let timeLiteral: string | undefined;
    let lastKey: string | undefined;
    for (; i < n; i++) {
      const c = text[i]!;
      if (c === '"') {
        const s = i;
        i++;
        while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
        const str = text.slice(s, i + 1);
        if (depth === 1) {
          // a key when followed by ':'
          let j = i + 1;
          while (j < n && /\s/.test(text[j]!)) j++;
          if (text[j] === ':') {
            lastKey = JSON.parse(str) as string;
            if (lastKey === 'time') {
              j++;
              while (j < n && /\s/.test(text[j]!)) j++;
              const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(j, j + 64));
              timeLiteral = m ? m[0] : text.slice(j, j + 20);
            }
          }
        }
      } else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) {
          i++;
          break;
        }
      }
    }
    if (depth !== 0) throw new Error('unterminated JSON object');
    out.push({ json: text.slice(start, i), timeLiteral });
  }
  return out;
}

function reply(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(text);
}

export async function startHecServer(options: HecServerOptions): Promise<HecServer> {
  const requests: HecRequest[] = [];
  const events: HecEvent[] = [];
  const problems: string[] = [];
  const queue: HecQueuedResponse[] = [];
  const ackPolls: Array<{ channel: string | undefined; ids: number[] }> = [];
  const acked = new Set<number>();
  const pollCount = new Map<number, number>();
  let nextAckId = 0;
  let token = options.token;
  let maxContentLength: number | null = null;
  let rejectMatch: ((event: Record<string, unknown>) => boolean) | null = null;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const wire = Buffer.concat(chunks);
      const record: HecRequest = { path: url.pathname, status: 0, headers: req.headers, wireBytes: wire.length, rawBytes: 0, events: 0 };
      requests.push(record);
      const answer = (status: number, body: unknown, headers?: Record<string, string>): void => {
        record.status = status;
        reply(res, status, body, headers);
      };
      const auth = req.headers.authorization;
      if (!auth) return answer(401, { text: 'Token is required', code: 2 });
      if (auth !== `Splunk ${token}`) return answer(401, { text: 'Invalid token', code: 4 });
      let raw: Buffer;
      try {
        raw = req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(wire) : wire;
      } catch {
        return answer(400, { text: 'Invalid data format', code: 6 });
      }
      record.rawBytes = raw.length;
      const channel = (req.headers['x-splunk-request-channel'] as string | undefined) ?? url.searchParams.get('channel') ?? undefined;

      if (url.pathname === '/services/collector/ack') {
        if (!options.ack) return answer(400, { text: 'ACK is disabled', code: 14 });
        if (!channel) return answer(400, { text: 'Data channel is missing', code: 10 });
        const ids = (JSON.parse(raw.toString('utf8')) as { acks: number[] }).acks;
        ackPolls.push({ channel, ids });
        const acks: Record<string, boolean> = {};
        for (const id of ids) {
          const polls = (pollCount.get(id) ?? 0) + 1;
          pollCount.set(id, polls);
          const ok = !options.ack.neverAck?.(id) && polls >= (options.ack.pollsUntilAcked ?? 1);
          acks[String(id)] = ok;
          if (ok) acked.add(id);
        }
        return answer(200, { acks });
      }
      if (url.pathname !== '/services/collector/event') return answer(404, { text: 'The requested URL was not found on this server.', code: 404 });
      if (options.ack && !channel) return answer(400, { text: 'Data channel is missing', code: 10 });

      const injected = queue.shift();
      if (injected) return answer(injected.status, injected.body ?? { text: 'injected', code: 9 }, injected.headers);
      if (maxContentLength !== null && wire.length > maxContentLength) return answer(413, { text: `Content-Length of ${wire.length} too large (maximum is ${maxContentLength})`, code: 27 });

      let parsed: Array<{ json: string; timeLiteral: string | undefined }>;
      const batch: HecEvent[] = [];
      try {
        parsed = splitConcatenatedJson(raw.toString('utf8'));
        for (const p of parsed) {
          const value = JSON.parse(p.json) as Record<string, unknown>;
          if (!('event' in value)) throw Object.assign(new Error('Event field is required'), { code: 12 });
          if (value.event === '' || value.event === null) throw Object.assign(new Error('Event field cannot be blank'), { code: 13 });
          if ('time' in value && typeof value.time !== 'number') throw Object.assign(new Error('Invalid data format'), { code: 6 });
          if ('fields' in value) {
            const f = value.fields as Record<string, unknown>;
            for (const v of Object.values(f)) {
              if (!(typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string')))) throw Object.assign(new Error('Error in handling indexed fields'), { code: 15 });
            }
          }
          if (rejectMatch?.(value)) throw Object.assign(new Error('Invalid data format'), { code: 6, eventNumber: batch.length });
          batch.push({ value, timeLiteral: p.timeLiteral, request: requests.length - 1 });
        }
      } catch (err) {
        problems.push((err as Error).message);
        const eventNumber = (err as { eventNumber?: number }).eventNumber;
        return answer(400, { text: (err as Error).message, code: (err as { code?: number }).code ?? 6, ...(eventNumber !== undefined ? { 'invalid-event-number': eventNumber } : {}) });
      }
      if (batch.length === 0) return answer(400, { text: 'No data', code: 5 });
      record.events = batch.length;
      events.push(...batch);
      if (options.ack) {
        record.ackId = nextAckId++;
        return answer(200, { text: 'Success', code: 0, ackId: record.ackId });
      }
      return answer(200, { text: 'Success', code: 0 });
    });
  };

  const local = await listenLocal(handler, options.tls);
  return {
    url: local.url,
    requests,
    events,
    ackPolls,
    acked,
    problems,
    respondNext: (...r) => queue.push(...r),
    setToken: (t) => {
      token = t;
    },
    setMaxContentLength: (n) => {
      maxContentLength = n;
    },
    rejectEvents: (m) => {
      rejectMatch = m;
    },
    close: local.close,
  };
}

export interface TestCertificates {
  /** PEM files. */
  caFile: string;
  key: string;
  cert: string;
}

/** Whether the openssl CLI is on the PATH. */
export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A throwaway CA and a server certificate it signs for 127.0.0.1 / localhost, made with the openssl CLI. */
export function makeTestCertificates(dir: string): TestCertificates {
  const f = (name: string): string => join(dir, name);
  const run = (args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  writeFileSync(
    f('ca.cnf'),
    ['[req]', 'distinguished_name=dn', 'prompt=no', 'x509_extensions=v3_ca', '[dn]', 'CN=tableau-activity-otel test CA', '[v3_ca]', 'basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign', 'subjectKeyIdentifier=hash'].join('\n'),
  );
  writeFileSync(f('server.cnf'), ['[req]', 'distinguished_name=dn', 'prompt=no', '[dn]', 'CN=127.0.0.1'].join('\n'));
  writeFileSync(f('server.ext'), ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth', 'subjectAltName=IP:127.0.0.1,DNS:localhost', 'authorityKeyIdentifier=keyid'].join('\n'));
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-config', 'ca.cnf']);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-config', 'server.cnf']);
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext']);
  return { caFile: f('ca.pem'), key: readFileSync(f('server.key'), 'utf8'), cert: readFileSync(f('server.pem'), 'utf8') };
}
