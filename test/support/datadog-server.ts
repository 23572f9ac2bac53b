/**
 * A Datadog Logs API v2 intake for tests, on 127.0.0.1 (HTTP or HTTPS), checking what arrives
 * as Datadog documents it, independently of our encoder:
 *
 * - `POST /api/v2/logs`, header `DD-API-KEY` (403 with Datadog's `{"errors":[…]}` otherwise),
 *   `Content-Encoding: gzip` (or deflate/none);
 * - body: a JSON array of at most 1000 entries, at most 5 MB uncompressed (413 otherwise), each
 *   entry at most 1 MB; reserved fields `message`, `ddsource`, `ddtags`, `hostname`, `service`,
 *   `status` must be strings when present; `ddtags` comma-separated tags;
 * - 202 `{}` when accepted.
 *
 * Responses can be injected (408, 429 with Retry-After, 503, 400, 413 …); entries are recorded
 * only for accepted requests.
 */
import type http from 'node:http';
import { listenLocal } from './local-server.js';
import zlib from 'node:zlib';

export const DD_MAX_ENTRIES = 1000;
export const DD_MAX_PAYLOAD_BYTES = 5 * 1000 * 1000;
export const DD_MAX_ENTRY_BYTES = 1000 * 1000;
const RESERVED_STRINGS = ['message', 'ddsource', 'ddtags', 'hostname', 'service', 'status'];

export interface DatadogEntry {
  [key: string]: unknown;
}

export interface DatadogRequest {
  status: number;
  headers: http.IncomingHttpHeaders;
  wireBytes: number;
  rawBytes: number;
  entries: number;
  /** Largest entry's JSON size, bytes. */
  maxEntryBytes: number;
}

export interface DatadogQueuedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface DatadogServer {
  url: string;
  requests: DatadogRequest[];
  /** Entries of accepted requests, in arrival order. */
  entries: DatadogEntry[];
  problems: string[];
  respondNext(...responses: DatadogQueuedResponse[]): void;
  /** Accept this API key from now on (the one given at start no longer): a key rotated. */
  setApiKey(key: string): void;
  /** Answer 413 to a payload (decompressed) larger than this (null: Datadog's 5 MB only). */
  setMaxPayloadBytes(bytes: number | null): void;
  /** Answer 400 to a request holding a matching entry (null: off). */
  rejectEntries(match: ((entry: DatadogEntry) => boolean) | null): void;
  close(): Promise<void>;
}

export async function startDatadogServer(options: { apiKey: string; tls?: { key: string; cert: string } }): Promise<DatadogServer> {
  const requests: DatadogRequest[] = [];
  const entries: DatadogEntry[] = [];
  const problems: string[] = [];
  const queue: DatadogQueuedResponse[] = [];
  let apiKey = options.apiKey;
  let maxPayloadBytes: number | null = null;
  let rejectMatch: ((entry: DatadogEntry) => boolean) | null = null;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const wire = Buffer.concat(chunks);
      const record: DatadogRequest = { status: 0, headers: req.headers, wireBytes: wire.length, rawBytes: 0, entries: 0, maxEntryBytes: 0 };
      requests.push(record);
      const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        record.status = status;
        res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      };
      const bad = (status: number, detail: string): void => {
        problems.push(detail);
        answer(status, { errors: [{ status: String(status), title: status === 413 ? 'Payload Too Large' : 'Bad Request', detail }] });
      };
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method !== 'POST' || url.pathname !== '/api/v2/logs') return answer(404, { errors: ['Not found'] });
      if (req.headers['dd-api-key'] !== apiKey) return answer(403, { errors: [{ status: '403', title: 'Forbidden', detail: 'API key is invalid' }] });
      let raw: Buffer;
      try {
        const enc = req.headers['content-encoding'];
        raw = enc === 'gzip' ? zlib.gunzipSync(wire) : enc === 'deflate' ? zlib.inflateSync(wire) : wire;
      } catch {
        return bad(400, 'cannot decompress the payload');
      }
      record.rawBytes = raw.length;
      if (raw.length > DD_MAX_PAYLOAD_BYTES) return bad(413, `payload of ${raw.length} bytes exceeds 5MB`);
      if (maxPayloadBytes !== null && raw.length > maxPayloadBytes) return bad(413, `payload of ${raw.length} bytes exceeds ${maxPayloadBytes}`);

      const injected = queue.shift();
      if (injected) return answer(injected.status, injected.body ?? { errors: ['injected'] }, injected.headers);

      let value: unknown;
      try {
        value = JSON.parse(raw.toString('utf8'));
      } catch {
        return bad(400, 'body is not JSON');
      }
      if (!Array.isArray(value)) return bad(400, 'body is not a JSON array');
      if (value.length > DD_MAX_ENTRIES) return bad(400, `${value.length} entries exceed 1000`);
      for (const e of value as unknown[]) {
        if (typeof e !== 'object' || e === null || Array.isArray(e)) return bad(400, 'entry is not an object');
        const size = Buffer.byteLength(JSON.stringify(e));
        record.maxEntryBytes = Math.max(record.maxEntryBytes, size);
        if (size > DD_MAX_ENTRY_BYTES) problems.push(`entry of ${size} bytes exceeds 1MB (Datadog would truncate it)`);
        for (const k of RESERVED_STRINGS) {
          if (k in e && typeof (e as Record<string, unknown>)[k] !== 'string') return bad(400, `reserved field ${k} is not a string`);
        }
        if (rejectMatch?.(e as DatadogEntry)) return bad(400, 'an entry is refused');
      }
      record.entries = value.length;
      entries.push(...(value as DatadogEntry[]));
      answer(202, {});
    });
  };

  const local = await listenLocal(handler, options.tls);
  return {
    url: local.url,
    requests,
    entries,
    problems,
    respondNext: (...r) => queue.push(...r),
    setApiKey: (k) => {
      apiKey = k;
    },
    setMaxPayloadBytes: (n) => {
      maxPayloadBytes = n;
    },
    rejectEntries: (m) => {
      rejectMatch = m;
    },
    close: local.close,
  };
}

/** `ddtags` → its tags. */
export function tagsOf(entry: DatadogEntry): string[] {
  return typeof entry.ddtags === 'string' ? entry.ddtags.split(',').filter((t) => t !== '') : [];
}
