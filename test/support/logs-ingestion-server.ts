/**
 * An Azure Monitor Logs Ingestion API stand-in for tests, on 127.0.0.1 (HTTPS with the test CA,
 * or HTTP), checking what arrives as Microsoft documents the upload call, independently of our
 * encoder:
 *
 * - `POST /dataCollectionRules/{dcrImmutableId}/streams/{stream}?api-version=2023-01-01`
 *   (404 for another DCR or stream, 400 for another api-version);
 * - `Authorization: Bearer <token>` that the Entra stand-in issued, not revoked, not expired
 *   (401 `{"error":{"code":"InvalidToken",…}}` otherwise);
 * - `Content-Encoding: gzip` (or none); at most 1 MB per call, compressed and uncompressed
 *   (413 otherwise);
 * - the body a JSON array of objects (rows), each with a `TimeGenerated` string (400 otherwise);
 * - 204 with no body when accepted.
 *
 * Answers can be injected (429 with Retry-After, 503, 413, 401 …); rows are recorded only for
 * accepted calls.
 */
import type http from 'node:http';
import zlib from 'node:zlib';
import { listenLocal } from './local-server.js';

export const INGESTION_MAX_CALL_BYTES = 1024 * 1024;

export interface IngestionCall {
  status: number;
  headers: http.IncomingHttpHeaders;
  token: string | undefined;
  wireBytes: number;
  rawBytes: number;
  rows: number;
}

export interface IngestionServer {
  url: string;
  calls: IngestionCall[];
  rows: Array<Record<string, unknown>>;
  problems: string[];
  respondNext(...answers: Array<{ status: number; body?: unknown; headers?: Record<string, string> }>): void;
  /** Answer 413 to a call of more uncompressed bytes than this (null: the API's 1 MB only). */
  setMaxCallBytes(bytes: number | null): void;
  /** Answer every call this many milliseconds late (a slow intake, so a run lasts long enough to change things mid-way). */
  setDelay(ms: number): void;
  /** Answer 400 to a call holding a matching row (null: off). */
  rejectRows(match: ((row: Record<string, unknown>) => boolean) | null): void;
  close(): Promise<void>;
}

export interface IngestionServerOptions {
  dcrImmutableId: string;
  stream: string;
  /** Whether a bearer token is good now (the Entra stand-in's `valid`). */
  validToken: (token: string) => boolean;
  tls?: { key: string; cert: string };
}

export async function startIngestionServer(options: IngestionServerOptions): Promise<IngestionServer> {
  const calls: IngestionCall[] = [];
  const rows: Array<Record<string, unknown>> = [];
  const problems: string[] = [];
  const queue: Array<{ status: number; body?: unknown; headers?: Record<string, string> }> = [];
  let maxCallBytes: number | null = null;
  let rejectMatch: ((row: Record<string, unknown>) => boolean) | null = null;
  let delayMs = 0;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const wire = Buffer.concat(chunks);
      const auth = req.headers.authorization;
      const token = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
      const call: IngestionCall = { status: 0, headers: req.headers, token, wireBytes: wire.length, rawBytes: 0, rows: 0 };
      calls.push(call);
      const reply = (status: number, body?: unknown, headers: Record<string, string> = {}): void => {
        if (body === undefined) {
          res.writeHead(status, headers);
          res.end();
          return;
        }
        res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      };
      const answer = (status: number, body?: unknown, headers: Record<string, string> = {}): void => {
        call.status = status;
        if (delayMs > 0) setTimeout(() => reply(status, body, headers), delayMs);
        else reply(status, body, headers);
      };
      const error = (status: number, code: string, message: string, headers?: Record<string, string>): void => {
        if (status === 400 || status === 413) problems.push(message);
        answer(status, { error: { code, message } }, headers);
      };
      const url = new URL(req.url ?? '/', 'http://x');
      const m = /^\/dataCollectionRules\/([^/]+)\/streams\/([^/]+)$/.exec(url.pathname);
      if (req.method !== 'POST' || !m) return error(404, 'NotFound', `no such resource ${url.pathname}`);
      if (url.searchParams.get('api-version') !== '2023-01-01') return error(400, 'InvalidApiVersion', `api-version ${url.searchParams.get('api-version')} is not supported`);
      if (!token || !options.validToken(token)) return error(401, 'InvalidToken', 'The provided token is invalid, expired or not issued for this resource.');
      if (decodeURIComponent(m[1]!) !== options.dcrImmutableId) return error(404, 'DcrNotFound', `data collection rule ${m[1]} not found`);
      if (decodeURIComponent(m[2]!) !== options.stream) return error(404, 'InvalidStream', `stream ${m[2]} is not declared in the data collection rule`);
      if (wire.length > INGESTION_MAX_CALL_BYTES) return error(413, 'ContentLengthLimitExceeded', `call of ${wire.length} bytes exceeds 1 MB`);
      let raw: Buffer;
      try {
        raw = req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(wire) : wire;
      } catch {
        return error(400, 'InvalidContentEncoding', 'cannot decompress the payload');
      }
      call.rawBytes = raw.length;
      if (raw.length > INGESTION_MAX_CALL_BYTES) return error(413, 'ContentLengthLimitExceeded', `payload of ${raw.length} bytes exceeds 1 MB`);
      if (maxCallBytes !== null && raw.length > maxCallBytes) return error(413, 'ContentLengthLimitExceeded', `payload of ${raw.length} bytes exceeds ${maxCallBytes}`);
      const injected = queue.shift();
      if (injected) return answer(injected.status, injected.body, injected.headers);
      let value: unknown;
      try {
        value = JSON.parse(raw.toString('utf8'));
      } catch {
        return error(400, 'InvalidPayload', 'the payload is not JSON');
      }
      if (!Array.isArray(value)) return error(400, 'InvalidPayload', 'the payload is not a JSON array');
      for (const row of value as unknown[]) {
        if (typeof row !== 'object' || row === null || Array.isArray(row)) return error(400, 'InvalidPayload', 'a row is not an object');
        if (typeof (row as Record<string, unknown>).TimeGenerated !== 'string') return error(400, 'InvalidPayload', 'a row has no TimeGenerated');
        if (rejectMatch?.(row as Record<string, unknown>)) return error(400, 'InvalidPayload', 'a row is refused');
      }
      call.rows = value.length;
      rows.push(...(value as Array<Record<string, unknown>>));
      answer(204);
    });
  };

  const local = await listenLocal(handler, options.tls);
  return {
    url: local.url,
    calls,
    rows,
    problems,
    respondNext: (...a) => queue.push(...a),
    setMaxCallBytes: (n) => {
      maxCallBytes = n;
    },
    setDelay: (ms) => {
      delayMs = ms;
    },
    rejectRows: (m) => {
      rejectMatch = m;
    },
    close: local.close,
  };
}
