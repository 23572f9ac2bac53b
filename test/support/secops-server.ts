/**
 * A Google SecOps (Chronicle API) ingestion stand-in for tests, on 127.0.0.1, checking what
 * arrives as the API reference documents `logs:import`, independently of our encoder:
 *
 * - `POST /{v1alpha|v1beta}/projects/{p}/locations/{l}/instances/{i}/logTypes/{t}/logs:import`
 *   (404 otherwise, with Google's `{"error":{code,message,status}}` body);
 * - `Authorization: Bearer <token>`, checked by the test's verifier: a self-signed JWT whose
 *   RS256 signature is checked with the service account's public key (`iss`/`sub` the account,
 *   `scope` with the Chronicle scope, not expired), or a token the STS stand-in issued and has
 *   not expired or revoked; 401 UNAUTHENTICATED otherwise;
 * - body (gzip or not): an ImportLogsRequest `{"inlineSource":{"logs":[…],"forwarder"?}}` of at
 *   most 1000 logs and 4 MB (413 over the size, or over a smaller limit the test sets); each log
 *   with `data` (base64 of the raw log), `logEntryTime` and `collectionTime` (RFC 3339,
 *   collection not before the entry), optional `environmentNamespace` and `labels`
 *   (`{key: {value}}`); 400 INVALID_ARGUMENT otherwise;
 * - 200 `{}` when accepted. Responses can be injected (429 with Retry-After, 503 …); logs are
 *   recorded (their data decoded) only for accepted requests.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type http from 'node:http';
import zlib from 'node:zlib';
import { listenLocal } from './local-server.js';

export const SECOPS_MAX_LOGS = 1000;
export const SECOPS_MAX_BYTES = 4_000_000;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/;

export interface ImportedLog {
  /** The log's data decoded from base64 and parsed (our record JSON). */
  record: Record<string, unknown>;
  dataText: string;
  logEntryTime: string;
  collectionTime: string;
  environmentNamespace?: string;
  labels?: Record<string, { value: string }>;
  logType: string;
  parent: string;
}

export interface SecOpsRequest {
  status: number;
  path: string;
  headers: http.IncomingHttpHeaders;
  authorization: string | undefined;
  wireBytes: number;
  rawBytes: number;
  logs: number;
  forwarder?: string;
  /** Why the bearer was refused (undefined: accepted or not checked). */
  authProblem?: string;
}

export interface QueuedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** Says whether a bearer token is good: undefined when it is, else why not. */
export type TokenVerifier = (token: string) => string | undefined;

export interface SecOpsServer {
  url: string;
  requests: SecOpsRequest[];
  logs: ImportedLog[];
  problems: string[];
  respondNext(...responses: QueuedResponse[]): void;
  setVerifier(v: TokenVerifier): void;
  setMaxPayloadBytes(bytes: number | null): void;
  /** Make every request wait this long before it is answered (0: off). */
  setDelay(ms: number): void;
  /** Answer 400 to a request holding a log whose record matches (null: off). */
  rejectLogs(match: ((record: Record<string, unknown>) => boolean) | null): void;
  close(): Promise<void>;
}

function googleError(code: number, status: string, message: string): unknown {
  return { error: { code, message, status } };
}

export async function startSecOpsServer(options: { verify: TokenVerifier; tls?: { key: string; cert: string } }): Promise<SecOpsServer> {
  const requests: SecOpsRequest[] = [];
  const logs: ImportedLog[] = [];
  const problems: string[] = [];
  const queue: QueuedResponse[] = [];
  let verifier = options.verify;
  let maxPayloadBytes: number | null = null;
  let delayMs = 0;
  let rejectMatch: ((record: Record<string, unknown>) => boolean) | null = null;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => setTimeout(() => handle(req, res, Buffer.concat(chunks)), delayMs));
  };
  const handle = (req: http.IncomingMessage, res: http.ServerResponse, wire: Buffer): void => {
    const path = req.url ?? '/';
    const record: SecOpsRequest = { status: 0, path, headers: req.headers, authorization: req.headers.authorization, wireBytes: wire.length, rawBytes: 0, logs: 0 };
    requests.push(record);
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const bad = (status: number, message: string): void => {
      problems.push(message);
      answer(status, googleError(status, status === 413 ? 'RESOURCE_EXHAUSTED' : 'INVALID_ARGUMENT', message));
    };
    const m = /^\/(v1alpha|v1beta)\/(projects\/[^/]+\/locations\/[^/]+\/instances\/[^/]+\/logTypes\/([A-Z0-9_]+))\/logs:import$/.exec(path);
    if (req.method !== 'POST' || !m) return answer(404, googleError(404, 'NOT_FOUND', `no such method: ${req.method} ${path}`));
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    const authProblem = token === undefined ? 'no bearer token' : verifier(token);
    if (authProblem !== undefined) {
      record.authProblem = authProblem;
      return answer(401, googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.'));
    }
    let raw: Buffer;
    try {
      raw = req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(wire) : wire;
    } catch {
      return bad(400, 'cannot decompress the payload');
    }
    record.rawBytes = raw.length;
    if (raw.length > SECOPS_MAX_BYTES) return bad(413, `request of ${raw.length} bytes exceeds ${SECOPS_MAX_BYTES}`);
    if (maxPayloadBytes !== null && raw.length > maxPayloadBytes) return bad(413, `request of ${raw.length} bytes exceeds ${maxPayloadBytes}`);
    const injected = queue.shift();
    if (injected) return answer(injected.status, injected.body ?? googleError(injected.status, 'INJECTED', 'injected'), injected.headers);

    let body: { inlineSource?: { logs?: unknown; forwarder?: unknown } };
    try {
      body = JSON.parse(raw.toString('utf8')) as typeof body;
    } catch {
      return bad(400, 'body is not JSON');
    }
    const src = body.inlineSource;
    if (!src || typeof src !== 'object' || !Array.isArray(src.logs) || src.logs.length === 0) return bad(400, 'inlineSource.logs is required');
    if (src.logs.length > SECOPS_MAX_LOGS) return bad(400, `${src.logs.length} logs exceed ${SECOPS_MAX_LOGS}`);
    if (src.forwarder !== undefined && typeof src.forwarder !== 'string') return bad(400, 'forwarder is not a string');
    const extra = Object.keys(body).filter((k) => k !== 'inlineSource' && k !== 'hint');
    if (extra.length > 0) return bad(400, `unknown fields ${extra.join(', ')}`);
    const accepted: ImportedLog[] = [];
    for (const l of src.logs as Array<Record<string, unknown>>) {
      const known = new Set(['data', 'logEntryTime', 'collectionTime', 'environmentNamespace', 'labels', 'additionals']);
      const unknown = Object.keys(l).filter((k) => !known.has(k));
      if (unknown.length > 0) return bad(400, `unknown log fields ${unknown.join(', ')}`);
      if (typeof l.data !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(l.data)) return bad(400, 'data is not base64');
      if (typeof l.logEntryTime !== 'string' || !RFC3339.test(l.logEntryTime)) return bad(400, `logEntryTime ${String(l.logEntryTime)} is not RFC 3339`);
      if (typeof l.collectionTime !== 'string' || !RFC3339.test(l.collectionTime)) return bad(400, `collectionTime ${String(l.collectionTime)} is not RFC 3339`);
      if (Date.parse(l.collectionTime) < Date.parse(l.logEntryTime)) return bad(400, 'collectionTime must be after logEntryTime');
      if (l.environmentNamespace !== undefined && typeof l.environmentNamespace !== 'string') return bad(400, 'environmentNamespace is not a string');
      if (l.labels !== undefined) {
        if (typeof l.labels !== 'object' || l.labels === null) return bad(400, 'labels is not a map');
        for (const [k, v] of Object.entries(l.labels as Record<string, unknown>)) {
          if (typeof v !== 'object' || v === null || typeof (v as { value?: unknown }).value !== 'string') return bad(400, `label ${k} has no string value`);
        }
      }
      const dataText = Buffer.from(l.data, 'base64').toString('utf8');
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(dataText) as Record<string, unknown>;
      } catch {
        return bad(400, 'a log is not JSON (this log type takes JSON)');
      }
      if (rejectMatch?.(parsed)) return bad(400, 'a log is refused');
      accepted.push({
        record: parsed,
        dataText,
        logEntryTime: l.logEntryTime,
        collectionTime: l.collectionTime,
        ...(typeof l.environmentNamespace === 'string' ? { environmentNamespace: l.environmentNamespace } : {}),
        ...(l.labels !== undefined ? { labels: l.labels as Record<string, { value: string }> } : {}),
        logType: m[3]!,
        parent: m[2]!,
      });
    }
    record.logs = accepted.length;
    if (typeof src.forwarder === 'string') record.forwarder = src.forwarder;
    logs.push(...accepted);
    answer(200, {});
  };

  const local = await listenLocal(handler, options.tls);
  return {
    url: local.url,
    requests,
    logs,
    problems,
    respondNext: (...r) => queue.push(...r),
    setVerifier: (v) => {
      verifier = v;
    },
    setMaxPayloadBytes: (n) => {
      maxPayloadBytes = n;
    },
    setDelay: (ms) => {
      delayMs = ms;
    },
    rejectLogs: (mm) => {
      rejectMatch = mm;
    },
    close: local.close,
  };
}

/** The decoded parts of a JWT (no check). */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    return {
      header: JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as Record<string, unknown>,
      payload: JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>,
    };
  } catch {
    return undefined;
  }
}

/**
 * A verifier of self-signed service-account JWTs: RS256 signed by the key whose public half is
 * given, `iss` and `sub` the account's email, `kid` the key id, `scope` holding `scope`, `iat`
 * not in the future and `exp` not past (with a minute of skew, as Google allows).
 */
export function selfSignedJwtVerifier(opts: { publicKeyPem: string; email: string; keyId: string; scope: string; now?: () => number }): TokenVerifier {
  const key: KeyObject = createPublicKey(opts.publicKeyPem);
  return (token) => {
    const parts = token.split('.');
    const jwt = decodeJwt(token);
    if (!jwt) return 'not a JWT';
    if (jwt.header.alg !== 'RS256') return `alg ${String(jwt.header.alg)}`;
    if (jwt.header.kid !== opts.keyId) return `kid ${String(jwt.header.kid)}`;
    if (!verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, 'base64url'))) return 'bad signature';
    const p = jwt.payload;
    if (p.iss !== opts.email || p.sub !== opts.email) return `iss/sub ${String(p.iss)}/${String(p.sub)}`;
    if (typeof p.scope !== 'string' || !p.scope.split(' ').includes(opts.scope)) return `scope ${String(p.scope)}`;
    const now = Math.floor((opts.now ?? Date.now)() / 1000);
    if (typeof p.iat !== 'number' || p.iat > now + 60) return 'iat in the future';
    if (typeof p.exp !== 'number' || p.exp < now - 60) return 'expired';
    if (p.exp - p.iat > 3600) return 'lifetime over an hour';
    return undefined;
  };
}
