/**
 * A local Tableau Cloud Manager REST API for tests (127.0.0.1, random port), with the activity
 * log protocol and a storage host for the pre-signed download URLs on the same port:
 *
 * - `POST /api/v1/pat/login` `{"token"}` → `{sessionToken, userId, tenantId, sessionExpiration}`;
 *   a wrong token answers 401 with the token echoed in the body (to prove clients never quote it).
 * - `GET /api/v1/tenants/{t}/sites` → the configured sites, in one of several shapes; with
 *   `siteDetails`, those items instead, paged like the users.
 * - `GET /api/v1/tenants/{t}/users?maxResults&pageToken` → `{"users": [...], pageToken|nextPageToken}`,
 *   the `users` items as given (so a test can leave fields out), pages of at most `maxResults`
 *   (and `pageSize`); a page token is only good for the list it came from.
 * - `GET /api/v1/tenants/{t}[/sites/{s}]/activitylog?startTime&endTime&pageSize&pageToken&eventType`
 *   → files whose availability time is in [startTime, endTime), paged; windows longer than
 *   `maxWindowMs` (7 days by default, as the real API) answer 400.
 * - `POST` the same path `{"files": [...]}` (≤ 100) → `{"files":[{path, url}]}`.
 * - `GET /storage/...?X-Amz-Signature=…` → the file's bytes (gzip files as stored, or with
 *   `Content-Encoding: gzip` when asked). With `separateStorage`, the storage (and `/redirect`)
 *   listens on a second port, `storageUrl`: another origin than the API.
 * - `GET /redirect?to=<url>` → 302 to that URL (a storage host that redirects).
 * - `overrideDownloadUrl`: the URL the API hands out for a file (metadata endpoints, `data:`…).
 *
 * Failure modes for fault tests: sessions that expire after N calls, queued responses per kind
 * of request (429 with Retry-After, 5xx, …), download URLs refused on first use, page tokens under
 * `pageToken`, `nextPageToken` or alternating. Every request is recorded with its arrival time.
 *
 * `startTrapServer`: a host that must never be contacted, or never see a secret (the target of a
 * redirect, a "metadata" endpoint): it records every connection and request, headers and body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

export type TcmRequestKind = 'login' | 'sites' | 'users' | 'list' | 'urls' | 'download' | 'redirect' | 'other';

export interface TcmServerFile {
  /** Site id, or undefined for a tenant file. */
  site?: string;
  /** The path the API lists (and the client uses as object key). */
  path: string;
  /** NDJSON text. */
  text: string;
  /** Store (and serve) the bytes gzip-compressed. */
  gzip?: boolean;
  /** Serve a gzip file with `Content-Encoding: gzip` (the HTTP client then decompresses it). */
  contentEncodingGzip?: boolean;
  /** Availability time (ms since epoch): what listings filter on. */
  availableAt: number;
  /** Event type for `eventType=` filtering when the path has no `eventType=` segment. */
  eventType?: string;
}

export interface TcmServerOptions {
  pat: string;
  tenantId: string;
  sites?: string[];
  /** How `GET …/sites` answers: `{"sites":[{"id"}]}`, `{"sites":[{"siteUUID"}]}`, or a plain array of `{"id"}`. */
  siteListShape?: 'object-id' | 'object-siteUUID' | 'array';
  sessionTtlMs?: number;
  /** Largest page the server returns whatever the client asks. */
  pageSize?: number;
  maxWindowMs?: number;
  /** Name of the next-page field: one of them, or alternating page by page (default). */
  tokenKey?: 'pageToken' | 'nextPageToken' | 'alternate';
  /** List files available at exactly endTime too (so a file on a boundary shows up in two windows). */
  inclusiveEnd?: boolean;
  /** Serve /storage and /redirect on a second port (`storageUrl`), not the API's. */
  separateStorage?: boolean;
  /** The tenant's users (`GET …/users`), served as given. */
  users?: Array<Record<string, unknown>>;
  /** The sites `GET …/sites` serves as given, paged (instead of the items built from `sites`). */
  siteDetails?: Array<Record<string, unknown>>;
}

export interface TcmRequestRecord {
  /** Arrival time, ms since epoch with sub-millisecond precision. */
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  kind: TcmRequestKind;
  status: number;
  /** `tenant` or the site id, for listings and URL requests. */
  scope?: string;
  /** endTime - startTime of a listing. */
  windowMs?: number;
  /** The key the next-page token was sent under in the answer, if any. */
  tokenKey?: string;
  /** Whether the request carried x-tableau-session-token. */
  hadSessionHeader: boolean;
  /** Paths asked for (URL requests) or served (downloads). */
  files?: string[];
}

export interface QueuedTcmResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** Rewrites the URL the API hands out for `path`; `issued` counts the URLs issued for it (1, 2, …). undefined: the signed URL. */
export type DownloadUrlOverride = (path: string, issued: number, signedUrl: string) => string | undefined;

export interface TcmServer {
  url: string;
  /** Where the download URLs point: `url`, or the second port with `separateStorage`. */
  storageUrl: string;
  options: Required<Omit<TcmServerOptions, 'sites' | 'users' | 'siteDetails'>> & { sites: string[]; users: Array<Record<string, unknown>>; siteDetails: Array<Record<string, unknown>> | undefined };
  requests: TcmRequestRecord[];
  publish(...files: TcmServerFile[]): void;
  files(): TcmServerFile[];
  /** Each session becomes invalid (401) after this many authenticated calls; null: never. */
  expireSessionsAfterCalls(n: number | null): void;
  /** The next requests of this kind get these answers (one each), before anything else is checked. */
  respondNext(kind: TcmRequestKind, ...responses: QueuedTcmResponse[]): void;
  /** Drop the answers still queued for this kind (the server answers normally again). */
  clearQueued(kind: TcmRequestKind): void;
  /** The first request of this kind whose query matches gets this answer (once), e.g. a later page of a list. */
  respondWhen(kind: TcmRequestKind, match: (query: Record<string, string>) => boolean, response: QueuedTcmResponse): void;
  /** The first download of every file matching this answers 403 (an expired pre-signed URL). */
  refuseFirstDownload(match: (path: string) => boolean): void;
  overrideDownloadUrl(fn: DownloadUrlOverride | null): void;
  logins(): number;
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;

interface SessionState {
  expiresAt: number;
  calls: number;
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function eventTypeOf(f: TcmServerFile): string | undefined {
  const m = /(?:^|\/)eventType=([^/]+)/.exec(f.path);
  return m ? m[1] : f.eventType;
}

export async function startTcmServer(opts: TcmServerOptions): Promise<TcmServer> {
  const options = {
    siteListShape: 'object-id' as const,
    sessionTtlMs: 3_600_000,
    pageSize: 1000,
    maxWindowMs: 7 * DAY_MS,
    tokenKey: 'alternate' as const,
    inclusiveEnd: false,
    separateStorage: false,
    ...opts,
    sites: opts.sites ?? [],
    users: opts.users ?? [],
    siteDetails: opts.siteDetails,
  };
  const requests: TcmRequestRecord[] = [];
  const stored: Array<TcmServerFile & { bytes: Buffer }> = [];
  const sessions = new Map<string, SessionState>();
  const queued = new Map<TcmRequestKind, QueuedTcmResponse[]>();
  const conditional: Array<{ kind: TcmRequestKind; match: (query: Record<string, string>) => boolean; response: QueuedTcmResponse }> = [];
  const signatures = new Map<string, string>(); // signature → path
  const refusedOnce = new Set<string>();
  let refuseMatch: ((path: string) => boolean) | null = null;
  let urlOverride: DownloadUrlOverride | null = null;
  const issuedUrls = new Map<string, number>();
  let sessionCallLimit: number | null = null;
  let loginCount = 0;
  let baseUrl = '';
  let storageBase = '';

  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, port: 'api' | 'storage'): Promise<void> => {
    const at = performance.timeOrigin + performance.now();
    const raw = await readBody(req);
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query = Object.fromEntries(u.searchParams.entries());
    const method = req.method ?? '';
    const path = u.pathname;
    const record: TcmRequestRecord = { at, method, path, query, kind: 'other', status: 0, hadSessionHeader: req.headers['x-tableau-session-token'] !== undefined };
    requests.push(record);
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      json(res, status, body, headers);
    };

    const tenantPrefix = `/api/v1/tenants/${options.tenantId}`;
    let scope: string | undefined;
    if (method === 'POST' && path === '/api/v1/pat/login') record.kind = 'login';
    else if (path.startsWith('/storage/')) record.kind = 'download';
    else if (path === '/redirect') record.kind = 'redirect';
    else if (path === `${tenantPrefix}/sites` && method === 'GET') record.kind = 'sites';
    else if (path === `${tenantPrefix}/users` && method === 'GET') record.kind = 'users';
    else {
      const m = /^\/api\/v1\/tenants\/([^/]+)(?:\/sites\/([^/]+))?\/activitylog$/.exec(path);
      if (m) {
        record.kind = method === 'POST' ? 'urls' : 'list';
        if (decodeURIComponent(m[1]!) !== options.tenantId) return answer(403, { message: 'tenant mismatch' });
        scope = m[2] ? decodeURIComponent(m[2]) : 'tenant';
        record.scope = scope;
        if (scope !== 'tenant' && !options.sites.includes(scope)) return answer(404, { message: `no site ${scope}` });
      }
    }

    const storageKind = record.kind === 'download' || record.kind === 'redirect';
    if (options.separateStorage && storageKind !== (port === 'storage')) {
      record.kind = 'other';
      return answer(404, { message: `no route ${method} ${path} on this port` });
    }

    if (record.kind === 'list') {
      const s = query.startTime !== undefined ? Date.parse(query.startTime) : NaN;
      const e = query.endTime !== undefined ? Date.parse(query.endTime) : NaN;
      if (Number.isFinite(s) && Number.isFinite(e)) record.windowMs = e - s;
    }

    const q = queued.get(record.kind);
    const when = conditional.findIndex((c) => c.kind === record.kind && c.match(query));
    const next = when >= 0 ? conditional.splice(when, 1)[0]!.response : q?.shift();
    if (next) {
      record.status = next.status;
      res.writeHead(next.status, { 'content-type': 'application/json', ...(next.headers ?? {}) });
      res.end(next.body ?? JSON.stringify({ message: `queued ${next.status}` }));
      return;
    }

    if (record.kind === 'login') {
      let token: unknown;
      try {
        token = (JSON.parse(raw.toString('utf8')) as { token?: unknown }).token;
      } catch {
        return answer(400, { message: 'bad JSON' });
      }
      if (token !== options.pat) return answer(401, { code: 'UNAUTHORIZED', message: `invalid personal access token '${String(token)}'` });
      loginCount++;
      const sessionToken = `sess-${randomBytes(12).toString('hex')}`;
      const expiresAt = Date.now() + options.sessionTtlMs;
      sessions.set(sessionToken, { expiresAt, calls: 0 });
      return answer(200, { sessionToken, userId: randomUUID(), tenantId: options.tenantId, sessionExpiration: new Date(expiresAt).toISOString() });
    }

    if (record.kind === 'redirect') {
      record.status = 302;
      res.writeHead(302, { location: query.to ?? '/' });
      res.end();
      return;
    }

    if (record.kind === 'download') {
      const sig = u.searchParams.get('X-Amz-Signature') ?? '';
      const filePath = signatures.get(sig);
      const file = filePath !== undefined ? stored.find((f) => f.path === filePath) : undefined;
      if (!file) {
        record.status = 403;
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>');
        return;
      }
      record.files = [file.path];
      if (refuseMatch?.(file.path) && !refusedOnce.has(file.path)) {
        refusedOnce.add(file.path);
        signatures.delete(sig);
        record.status = 403;
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>');
        return;
      }
      record.status = 200;
      const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'content-length': String(file.bytes.length) };
      if (file.gzip && file.contentEncodingGzip) headers['content-encoding'] = 'gzip';
      res.writeHead(200, headers);
      res.end(file.bytes);
      return;
    }

    if (record.kind === 'other') return answer(404, { message: `no route ${method} ${path}` });

    // Authenticated API calls.
    const token = req.headers['x-tableau-session-token'];
    const session = typeof token === 'string' ? sessions.get(token) : undefined;
    if (!session || Date.now() >= session.expiresAt || (sessionCallLimit !== null && session.calls >= sessionCallLimit)) {
      if (typeof token === 'string') sessions.delete(token);
      return answer(401, { code: 'SESSION_EXPIRED', message: 'session expired or invalid' });
    }
    session.calls++;

    if (record.kind === 'users' || (record.kind === 'sites' && options.siteDetails)) {
      const kind = record.kind;
      const all = kind === 'users' ? options.users : options.siteDetails!;
      const asked = Number(query.maxResults ?? query.pageSize ?? options.pageSize) || options.pageSize;
      const size = Math.max(1, Math.min(options.pageSize, asked));
      let offset = 0;
      let pageIndex = 0;
      if (query.pageToken) {
        try {
          const t = JSON.parse(Buffer.from(query.pageToken, 'base64url').toString('utf8')) as { o: number; p: number; w: string };
          if (t.w !== kind) return answer(400, { message: 'page token does not match the query' });
          offset = t.o;
          pageIndex = t.p;
        } catch {
          return answer(400, { message: 'bad page token' });
        }
      }
      const body: Record<string, unknown> = { [kind]: all.slice(offset, offset + size) };
      if (offset + size < all.length) {
        const key = options.tokenKey === 'alternate' ? (pageIndex % 2 === 0 ? 'pageToken' : 'nextPageToken') : options.tokenKey;
        body[key] = Buffer.from(JSON.stringify({ o: offset + size, p: pageIndex + 1, w: kind })).toString('base64url');
        record.tokenKey = key;
      }
      return answer(200, body);
    }

    if (record.kind === 'sites') {
      const items = options.sites.map((id, i) => ({ ...(options.siteListShape === 'object-siteUUID' ? { siteUUID: id } : { id }), name: `Site ${i}`, contentUrl: `site${i}`, instance: { id: 'pod-instance-not-a-site' } }));
      return answer(200, options.siteListShape === 'array' ? items : { sites: items });
    }

    if (record.kind === 'list') {
      const now = Date.now();
      const start = query.startTime !== undefined ? Date.parse(query.startTime) : now - DAY_MS;
      const end = query.endTime !== undefined ? Date.parse(query.endTime) : now;
      if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) return answer(400, { message: 'invalid time range' });
      record.windowMs = end - start;
      if (end - start > options.maxWindowMs) return answer(400, { message: 'The time range must not exceed 7 days' });
      const all = stored
        .filter((f) => (f.site ?? 'tenant') === scope && f.availableAt >= start && (f.availableAt < end || (options.inclusiveEnd && f.availableAt === end)))
        .filter((f) => query.eventType === undefined || eventTypeOf(f) === query.eventType)
        .sort((a, b) => a.availableAt - b.availableAt || (a.path < b.path ? -1 : 1));
      const pageSize = Math.min(options.pageSize, Number(query.pageSize ?? options.pageSize) || options.pageSize);
      let offset = 0;
      let pageIndex = 0;
      if (query.pageToken) {
        try {
          const t = JSON.parse(Buffer.from(query.pageToken, 'base64url').toString('utf8')) as { o: number; p: number; w: string };
          if (t.w !== `${scope}|${query.startTime}|${query.endTime}|${query.eventType ?? ''}`) return answer(400, { message: 'page token does not match the query' });
          offset = t.o;
          pageIndex = t.p;
        } catch {
          return answer(400, { message: 'bad page token' });
        }
      }
      const page = all.slice(offset, offset + pageSize);
      const body: Record<string, unknown> = { files: page.map((f) => ({ path: f.path, size: f.bytes.length })) };
      if (offset + pageSize < all.length) {
        const key = options.tokenKey === 'alternate' ? (pageIndex % 2 === 0 ? 'pageToken' : 'nextPageToken') : options.tokenKey;
        body[key] = Buffer.from(JSON.stringify({ o: offset + pageSize, p: pageIndex + 1, w: `${scope}|${query.startTime}|${query.endTime}|${query.eventType ?? ''}` })).toString('base64url');
        record.tokenKey = key;
      }
      return answer(200, body);
    }

    // urls
    let asked: unknown;
    try {
      asked = (JSON.parse(raw.toString('utf8')) as { files?: unknown }).files;
    } catch {
      return answer(400, { message: 'bad JSON' });
    }
    if (!Array.isArray(asked) || asked.length === 0 || asked.length > 100 || asked.some((p) => typeof p !== 'string')) {
      return answer(400, { message: 'files must be 1 to 100 paths' });
    }
    record.files = asked as string[];
    const out: Array<{ path: string; url: string }> = [];
    for (const p of asked as string[]) {
      const f = stored.find((x) => x.path === p && (x.site ?? 'tenant') === scope);
      if (!f) return answer(404, { message: `no file ${p}` });
      const sig = randomBytes(16).toString('hex');
      signatures.set(sig, p);
      const signed = `${storageBase}/storage/${encodeURIComponent(p)}?X-Amz-Expires=300&X-Amz-Signature=${sig}`;
      const issued = (issuedUrls.get(p) ?? 0) + 1;
      issuedUrls.set(p, issued);
      out.push({ path: p, url: urlOverride?.(p, issued, signed) ?? signed });
    }
    return answer(200, { files: out });
  };

  const listener = (port: 'api' | 'storage') => (req: http.IncomingMessage, res: http.ServerResponse) => {
    handle(req, res, port).catch((e: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(e));
      }
    });
  };
  const server = http.createServer(listener('api'));
  baseUrl = await listenLoopback(server);
  const storage = options.separateStorage ? http.createServer(listener('storage')) : null;
  storageBase = storage ? await listenLoopback(storage) : baseUrl;

  return {
    url: baseUrl,
    storageUrl: storageBase,
    options,
    requests,
    publish: (...files) => {
      for (const f of files) {
        const bytes = f.gzip ? gzipSync(f.text) : Buffer.from(f.text);
        stored.push({ ...f, bytes });
      }
    },
    files: () => stored.map(({ bytes: _bytes, ...f }) => f),
    expireSessionsAfterCalls: (n) => {
      sessionCallLimit = n;
    },
    respondNext: (kind, ...responses) => {
      queued.set(kind, [...(queued.get(kind) ?? []), ...responses]);
    },
    clearQueued: (kind) => {
      queued.delete(kind);
    },
    respondWhen: (kind, match, response) => {
      conditional.push({ kind, match, response });
    },
    refuseFirstDownload: (match) => {
      refuseMatch = match;
    },
    overrideDownloadUrl: (fn) => {
      urlOverride = fn;
    },
    logins: () => loginCount,
    close: async () => {
      await closeServer(server);
      if (storage) await closeServer(storage);
    },
  };
}

function listenLoopback(server: http.Server): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export interface TrapRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface TrapServer {
  url: string;
  /** TCP connections accepted (a refused download must not even connect). */
  connections: number;
  requests: TrapRequest[];
  /** Whether any request carried one of these strings in its URL, headers or body. */
  saw(...secrets: string[]): boolean;
  close(): Promise<void>;
}

/**
 * A host on 127.0.0.1 that records everything it gets: where a redirect points, or a stand-in
 * for a cloud metadata endpoint. It answers like one (200, credentials-shaped JSON), so a client
 * that does fetch from it gets something to pass on.
 */
export async function startTrapServer(): Promise<TrapServer> {
  const trap: TrapServer = {
    url: '',
    connections: 0,
    requests: [],
    saw: (...secrets) =>
      trap.requests.some((r) => secrets.some((s) => s !== '' && (r.url.includes(s) || r.body.includes(s) || JSON.stringify(r.headers).includes(s)))),
    close: async () => closeServer(server),
  };
  const server = http.createServer((req, res) => {
    readBody(req)
      .then((body) => {
        trap.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: body.toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Code: 'Success', AccessKeyId: 'ASIATRAPTRAPTRAP', SecretAccessKey: 'trap-metadata-secret', Token: 'trap-session' }) + '\n');
      })
      .catch(() => res.destroy());
  });
  server.on('connection', () => trap.connections++);
  trap.url = await listenLoopback(server);
  return trap;
}
