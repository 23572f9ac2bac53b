/**
 * HTTP side of the Tableau Cloud Manager (TCM) source: sign-in with a TCM personal access
 * token, session reuse, the per-source rate limit, retries, and downloads from pre-signed URLs.
 *
 * - `POST {url}/api/v1/pat/login` `{"token": <PAT secret>}` → `sessionToken`, `tenantId`,
 *   `sessionExpiration`. Every later API call sends `x-tableau-session-token`. The session is
 *   reused and renewed shortly before `sessionExpiration`, or when a call answers 401 (that call
 *   is then sent once more with the new session).
 * - Every request of a source (sign-in, listings, URL requests, downloads) first takes a token
 *   from one token bucket (burst of one: at most `maxRequestsPerSecond` requests in any second).
 * - Statuses are classified by the daemon's one table (core/http-answers.ts): what it calls
 *   `retry` (408, 429, 5xx) and network errors are retried with the delivery backoff
 *   (core/backoff.ts: 0.5 s doubling to 30 s, equal jitter), honouring `Retry-After`, up to
 *   `maxAttempts`; every other status is an error for the caller (a listing's 400 tells the
 *   source to shorten its window; a download's 4xx tells it to ask for a fresh URL).
 * - Sign-in and API calls go through the daemon's shared HTTP layer (core/http/transport.ts,
 *   with the session as its auth hook: tcm-session-auth.ts): one keep-alive client, answers
 *   capped, every quoted answer passed through its redactor. They never follow a redirect: the
 *   PAT and the session token go to the configured `url` only. A 3xx is an outage (retried like a 5xx, then an error naming the
 *   target's origin, never its path or query).
 * - API responses are read up to `maxResponseBytes`; a longer one is an error, not read on.
 * - Downloads go through download-guard.ts (https, public addresses checked at connect time,
 *   `downloadHosts`), with node's http(s) modules and redirects followed by hand (at most
 *   MAX_DOWNLOAD_REDIRECTS hops, each checked the same way). A refused URL or hop is a
 *   `DownloadRefusedError` (permanent) and nothing is sent to that host.
 * - Secrets stay out of logs, errors and metrics: the PAT and the session token are replaced by
 *   `[redacted]` in any response text quoted in an error; the session token is never sent to the
 *   storage host; pre-signed URLs (their query string is a credential) are never logged.
 */
import http from 'node:http';
import https from 'node:https';
import type { SourceMetrics } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { HttpTransport } from '../../core/http/transport.js';
import type { NetworkError } from '../../core/http/client.js';
import { Backoff, BACKOFF_DEFAULTS, type BackoffPolicy } from '../../core/backoff.js';
import { answerClass, parseRetryAfter } from '../../core/http-answers.js';
import { sleep } from '../../core/sleep.js';
import { DownloadPolicy, DownloadRefusedError, originOf } from './download-guard.js';
import { TcmSessionAuth, type TcmSession } from './tcm-session-auth.js';

export type TcmOperation = 'login' | 'list' | 'urls' | 'download' | 'sites' | 'users';

export const TCM_LOGIN_PATH = '/api/v1/pat/login';

/** A request that failed for good (or after its retries). The message never holds a secret. */
export class TcmHttpError extends Error {
  constructor(
    readonly operation: TcmOperation,
    /** HTTP status; undefined for network errors and unusable responses. */
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'TcmHttpError';
  }
}

/** An answer longer than `maxResponseBytes` (not read on). */
export class TcmResponseTooLargeError extends TcmHttpError {
  constructor(operation: TcmOperation, message: string) {
    super(operation, undefined, message);
    this.name = 'TcmResponseTooLargeError';
  }
}

/**
 * A token bucket holding at most one token, refilled at `ratePerSecond`: requests are spaced
 * at least 1/rate seconds apart, so no second ever sees more than `ratePerSecond` of them.
 */
export class TokenBucket {
  private nextFreeAt = 0;
  readonly intervalMs: number;

  constructor(ratePerSecond: number) {
    this.intervalMs = 1000 / ratePerSecond;
  }

  /** Waits for a token. Rejects when the signal aborts. */
  async take(signal?: AbortSignal): Promise<void> {
    const now = performance.now();
    const at = Math.max(now, this.nextFreeAt);
    this.nextFreeAt = at + this.intervalMs;
    if (at > now) {
      // +1 ms: timers may fire a fraction of a millisecond early
      if (await sleep(Math.ceil(at - now) + 1, signal)) throw abortError(signal);
    } else if (signal?.aborted) {
      throw abortError(signal);
    }
  }
}

/** Retries of one request: the delivery backoff (core/backoff.ts) between these bounds. */
export interface TcmRetrySettings {
  /** The first wait. */
  initialDelayMs: number;
  /** The longest wait (`Retry-After` may ask for more, up to 5 minutes). */
  maxDelayMs: number;
  /** Attempts per request for retryable failures (429, 5xx, network). */
  maxAttempts: number;
}

export const DEFAULT_TCM_RETRY: TcmRetrySettings = { initialDelayMs: BACKOFF_DEFAULTS.delivery.initialMs, maxDelayMs: BACKOFF_DEFAULTS.delivery.maxMs, maxAttempts: 8 };

export interface TcmClientOptions {
  /** Base URL of Tableau Cloud Manager, e.g. https://cloudmanager.tableau.com */
  baseUrl: string;
  tenantId: string;
  /** Reads the PAT secret (from the environment or a file) at each sign-in, so a rotated token is picked up. */
  readPat(): Promise<string>;
  maxRequestsPerSecond: number;
  metrics: SourceMetrics;
  log: Logger;
  retry?: TcmRetrySettings;
  /** Per API call, and for a download until its response headers arrive. */
  requestTimeoutMs?: number;
  /** Largest API response body read (bytes); default DEFAULT_TCM_MAX_RESPONSE_BYTES. */
  maxResponseBytes?: number;
  /** Hosts whose download URLs skip the public-address check (see download-guard.ts). */
  downloadHosts?: readonly string[];
}

export const DEFAULT_TCM_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Redirects of one download followed at most. */
export const MAX_DOWNLOAD_REDIRECTS = 5;

const MAX_RETRY_AFTER_MS = 5 * 60_000;
const ERROR_EXCERPT_CHARS = 300;

export class TcmClient {
  readonly bucket: TokenBucket;
  private readonly baseUrl: string;
  private readonly retry: TcmRetrySettings;
  private readonly backoffPolicy: BackoffPolicy;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  readonly downloads: DownloadPolicy;
  /** Downloads only (download-guard.ts); the API calls use the transport's client. */
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 16 });
  private readonly auth: TcmSessionAuth;
  /** Sign-in and API calls: no redirect followed, answers capped, the PAT and session token redacted. */
  private readonly transport: HttpTransport;
  /** Sign-ins done by this client (for logs and tests). */
  logins = 0;

  constructor(private readonly options: TcmClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.bucket = new TokenBucket(options.maxRequestsPerSecond);
    this.retry = options.retry ?? DEFAULT_TCM_RETRY;
    this.backoffPolicy = { ...BACKOFF_DEFAULTS.delivery, initialMs: this.retry.initialDelayMs, maxMs: this.retry.maxDelayMs };
    this.timeoutMs = options.requestTimeoutMs ?? 60_000;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_TCM_MAX_RESPONSE_BYTES;
    this.downloads = new DownloadPolicy(this.baseUrl, options.downloadHosts ?? []);
    this.auth = new TcmSessionAuth(
      (signal) => this.signIn(signal),
      (secret) => this.transport.redactor.remove(secret),
    );
    // TLS: verification on, Node's bundled roots (the source has no TLS options)
    this.transport = new HttpTransport({ timeoutMs: this.timeoutMs, tls: {}, headers: {} }, '.', this.auth, this.timeoutMs);
  }

  /** Close the connections kept alive (API calls and downloads). */
  close(): void {
    this.transport.close();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** GET a JSON API path (with the session), following the retry and re-login rules. */
  getJson(operation: TcmOperation, path: string, query: Record<string, string>, signal: AbortSignal): Promise<unknown> {
    const qs = new URLSearchParams(query).toString();
    return this.api(operation, 'GET', qs ? `${path}?${qs}` : path, undefined, signal);
  }

  /** POST a JSON body to an API path (with the session). */
  postJson(operation: TcmOperation, path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    return this.api(operation, 'POST', path, JSON.stringify(body), signal);
  }

  /**
   * GET a pre-signed URL and return its body as a byte stream. A 4xx other than 408/429 is
   * thrown at once as a TcmHttpError (the URL expired or was refused: ask for a new one);
   * 408, 429, 5xx and network errors are retried with the same URL. Redirects are followed by
   * hand, each hop checked like the URL; a URL or hop the policy refuses throws a
   * DownloadRefusedError before anything is sent to its host.
   */
  async download(url: string, what: string, signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    let first: URL;
    try {
      first = new URL(url);
    } catch {
      throw new DownloadRefusedError(`download URL of ${what} refused: not a URL`);
    }
    const backoff = new Backoff(this.backoffPolicy);
    for (;;) {
      const attempt = backoff.attempts + 1;
      let target = first;
      let res: http.IncomingMessage | undefined;
      let failure = '';
      let timed: ReturnType<typeof timedSignal> | undefined;
      for (let hop = 0; ; hop++) {
        const step = hop === 0 ? 'download URL' : `redirect hop ${hop}`;
        const check = this.downloads.check(target, step);
        await this.bucket.take(signal);
        this.options.metrics.request('download');
        timed = timedSignal(signal, this.timeoutMs);
        try {
          res = await this.getOnce(target, check.checkAddresses, step, timed.signal);
        } catch (err) {
          timed.done();
          if (err instanceof DownloadRefusedError) throw err;
          if (signal.aborted) throw abortError(signal);
          failure = `network error: ${describeNetworkError(err)}`;
          res = undefined;
          break;
        }
        const status = res.statusCode ?? 0;
        if (status < 300 || status >= 400) break;
        timed.done();
        res.destroy();
        const location = res.headers.location;
        if (!location) throw new DownloadRefusedError(`${step} ${originOf(target)} of ${what}: HTTP ${status} without a Location`);
        if (hop >= MAX_DOWNLOAD_REDIRECTS) throw new DownloadRefusedError(`download of ${what} refused: more than ${MAX_DOWNLOAD_REDIRECTS} redirects`);
        try {
          target = new URL(location, target);
        } catch {
          throw new DownloadRefusedError(`redirect hop ${hop + 1} of ${what} refused: the Location is not a URL`);
        }
      }
      if (res && timed) {
        timed.clearTimer(); // the body may take longer than the header timeout
        const status = res.statusCode ?? 0;
        const cls = answerClass(status);
        if (cls === 'done') return streamBody(res, timed.done);
        timed.done();
        res.destroy();
        if (cls !== 'retry') {
          throw new TcmHttpError('download', status, `download of ${what}: HTTP ${status} from the storage host ${target.host}`);
        }
        failure = `HTTP ${status}`;
      }
      const retryAfter = res ? retryAfterMs(headerValue(res.headers['retry-after'])) : undefined;
      if (attempt >= this.retry.maxAttempts) {
        throw new TcmHttpError('download', res?.statusCode, `download of ${what} failed after ${attempt} attempts: ${failure}`);
      }
      await this.waitToRetry(backoff, retryAfter, { operation: 'download', object: what, reason: failure }, signal);
    }
  }

  /** One GET without any of our headers; resolves with the response (headers read, body not). */
  private getOnce(url: URL, checkAddresses: boolean, step: string, signal: AbortSignal): Promise<http.IncomingMessage> {
    const isHttps = url.protocol === 'https:';
    const where = originOf(url);
    return new Promise((resolve, reject) => {
      const req = (isHttps ? https : http).request(url, {
        method: 'GET',
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        // No session header: the storage host is not Tableau Cloud Manager.
        headers: { accept: '*/*' },
        signal,
        ...(checkAddresses ? { lookup: this.downloads.lookupFor(step, where) } : {}),
      });
      if (checkAddresses) req.on('socket', (socket) => this.downloads.checkSocket(socket, step, where));
      req.once('response', resolve);
      req.once('error', reject);
      req.end();
    });
  }

  private async api(operation: TcmOperation, method: 'GET' | 'POST', pathAndQuery: string, body: string | undefined, signal: AbortSignal): Promise<unknown> {
    const url = new URL(this.baseUrl + pathAndQuery);
    const label = `${method} ${pathAndQuery.split('?')[0]}`;
    let reloggedIn = false;
    const backoff = new Backoff(this.backoffPolicy);
    for (;;) {
      const attempt = backoff.attempts + 1;
      // signed in before the rate-limit token is taken (the sign-in takes its own)
      await this.auth.current(signal);
      await this.bucket.take(signal);
      this.options.metrics.request(operation);
      const result = await this.send(url, method, { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body, signal);
      if (result.kind === 'response' && result.status === 401 && !reloggedIn) {
        // The session expired early or was revoked (the transport told the auth, which dropped
        // it): sign in again and send this call once more.
        reloggedIn = true;
        this.options.log.info({ operation }, 'tcm session rejected (401); signing in again');
        continue;
      }
      if (result.kind === 'response' && answerClass(result.status) === 'done') {
        return parseJson(operation, label, result.text);
      }
      if (result.kind === 'too-large') throw this.tooLarge(operation, label, result.status);
      const failure = failureOf(result);
      const retryable = result.kind !== 'response' || answerClass(result.status) === 'retry';
      if (!retryable || attempt >= this.retry.maxAttempts) {
        const excerpt = result.kind === 'response' ? this.excerpt(result.text) : '';
        const status = result.kind === 'network' ? undefined : result.status;
        throw new TcmHttpError(operation, status, `tcm ${operation} ${label}: ${failure}${retryable ? ` after ${attempt} attempts` : ''}${excerpt ? `: ${excerpt}` : ''}`);
      }
      await this.waitToRetry(backoff, result.kind === 'response' ? result.retryAfterMs : undefined, { operation, request: label, reason: failure }, signal);
    }
  }

  /** Called by the auth (tcm-session-auth.ts) when a session is needed; it keeps the session. */
  private async signIn(signal: AbortSignal): Promise<TcmSession> {
    const pat = await this.options.readPat();
    this.auth.usePat(pat);
    const url = new URL(this.baseUrl + TCM_LOGIN_PATH);
    const backoff = new Backoff(this.backoffPolicy);
    for (;;) {
      const attempt = backoff.attempts + 1;
      await this.bucket.take(signal);
      this.options.metrics.request('login');
      const startedAt = performance.now();
      // without the session header: the PAT is the credential, in the body
      const result = await this.send(url, 'POST', { accept: 'application/json', 'content-type': 'application/json' }, JSON.stringify({ token: pat }), signal, false);
      if (result.kind === 'response' && answerClass(result.status) === 'done') {
        const parsed = parseJson('login', `POST ${TCM_LOGIN_PATH}`, result.text) as Record<string, unknown> | null;
        const token = parsed && typeof parsed === 'object' ? parsed.sessionToken : undefined;
        if (typeof token !== 'string' || token === '') {
          throw new TcmHttpError('login', result.status, `tcm sign-in: the response has no sessionToken`);
        }
        const tenant = parsed!.tenantId;
        if (typeof tenant === 'string' && tenant !== '' && tenant !== this.options.tenantId) {
          this.options.log.warn({ configuredTenantId: this.options.tenantId, patTenantId: tenant }, 'the PAT belongs to another TCM tenant than the configured tenantId; requests will use the configured one');
        }
        const session: TcmSession = { token, renewAt: renewTime(parsed!.sessionExpiration, startedAt) };
        this.transport.redactor.add([token]);
        this.logins++;
        this.options.log.debug({ logins: this.logins }, 'tcm signed in');
        return session;
      }
      if (result.kind === 'response' && (result.status === 401 || result.status === 403)) {
        // The body is deliberately not quoted: a server may echo what it was sent.
        throw new TcmHttpError('login', result.status, `tcm sign-in rejected (HTTP ${result.status}): check that the PAT is a Tableau Cloud Manager personal access token (a site PAT does not work) and that it has not expired or been revoked`);
      }
      if (result.kind === 'too-large') throw this.tooLarge('login', `POST ${TCM_LOGIN_PATH}`, result.status);
      const failure = failureOf(result);
      const retryable = result.kind !== 'response' || answerClass(result.status) === 'retry';
      if (!retryable || attempt >= this.retry.maxAttempts) {
        throw new TcmHttpError('login', result.kind === 'network' ? undefined : result.status, `tcm sign-in failed: ${failure}${retryable ? ` after ${attempt} attempts` : ''}`);
      }
      await this.waitToRetry(backoff, result.kind === 'response' ? result.retryAfterMs : undefined, { operation: 'login', reason: failure }, signal);
    }
  }

  /** The wait before the next attempt of a request: its backoff's next delay, or longer if `Retry-After` asks for it. */
  private async waitToRetry(backoff: Backoff, retryAfterMs: number | undefined, fields: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    const delay = Math.max(retryAfterMs ?? 0, backoff.next());
    this.options.log.warn({ ...fields, attempt: backoff.attempts, delayMs: delay }, 'tcm request failed; retrying');
    if (await sleep(delay, signal)) throw abortError(signal);
  }

  /**
   * One HTTP exchange through the transport (with the session header unless `withSession` is
   * false): redirects not followed, a 2xx body read up to `maxResponseBytes` (longer: not read
   * on), an error answer up to the client's cap. The whole exchange within the request timeout.
   * Network errors are returned, not thrown.
   */
  private async send(url: URL, method: 'GET' | 'POST', headers: Record<string, string>, body: string | undefined, signal: AbortSignal, withSession = true): Promise<SendResult> {
    const timed = timedSignal(signal, this.timeoutMs);
    try {
      const res = await this.transport.request({
        url,
        method,
        headers,
        ...(body !== undefined ? { body: Buffer.from(body) } : {}),
        signal: timed.signal,
        maxResponseBytes: this.maxResponseBytes,
        ...(withSession ? {} : { auth: false as const }),
      });
      if (res.status >= 300 && res.status < 400) {
        return { kind: 'redirect', status: res.status, target: redirectTarget(headerValue(res.headers.location), url) };
      }
      if (answerClass(res.status) === 'done' && res.truncated) return { kind: 'too-large', status: res.status };
      return { kind: 'response', status: res.status, text: res.body, retryAfterMs: retryAfterMs(headerValue(res.headers['retry-after'])) };
    } catch (err) {
      if (signal.aborted) throw abortError(signal);
      if (err instanceof TcmHttpError) throw err; // a sign-in for the session failed
      if (timed.signal.aborted || (err as NetworkError).code === 'ETIMEDOUT') return { kind: 'network', reason: 'timed out' };
      return { kind: 'network', reason: describeNetworkError(err) };
    } finally {
      timed.done();
    }
  }

  private tooLarge(operation: TcmOperation, label: string, status: number): TcmResponseTooLargeError {
    return new TcmResponseTooLargeError(operation, `tcm ${operation} ${label}: the response (HTTP ${status}) is larger than maxResponseBytes (${this.maxResponseBytes} bytes); not read on. Raise maxResponseBytes in the tcm source config if such answers are expected`);
  }

  /** A short, single-line excerpt of a response body with every secret removed (the transport's redactor). */
  private excerpt(text: string): string {
    const t = this.transport.redactor.redact(text).replace(/\s+/g, ' ').trim();
    return t.length > ERROR_EXCERPT_CHARS ? `${t.slice(0, ERROR_EXCERPT_CHARS)}…` : t;
  }
}

type SendResult =
  | { kind: 'response'; status: number; text: string; retryAfterMs: number | undefined }
  | { kind: 'redirect'; status: number; target: string }
  | { kind: 'too-large'; status: number }
  | { kind: 'network'; reason: string };

function failureOf(result: Exclude<SendResult, { kind: 'too-large' }>): string {
  if (result.kind === 'network') return `network error: ${result.reason}`;
  if (result.kind === 'redirect') return `HTTP ${result.status} redirect to ${result.target} (not followed: the PAT and the session token go only to the configured url)`;
  return `HTTP ${result.status}`;
}

/** Where a redirect points, as an origin (its path and query may carry anything). */
function redirectTarget(location: string | null, base: URL): string {
  if (!location) return '(no Location)';
  try {
    const u = new URL(location, base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? originOf(u) : `a ${u.protocol} URL`;
  } catch {
    return '(an invalid Location)';
  }
}

function headerValue(v: string | string[] | undefined): string | null {
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
}

/** `Retry-After` in seconds or as an HTTP date (core/http-answers.ts), capped at 5 minutes. */
export function retryAfterMs(value: string | null): number | undefined {
  const ms = parseRetryAfter(value?.trim());
  return ms === undefined ? undefined : Math.min(MAX_RETRY_AFTER_MS, ms);
}

/** When to sign in again: a little before `sessionExpiration` (a tenth of its lifetime, at most a minute). */
function renewTime(expiration: unknown, startedAt: number): number | undefined {
  if (typeof expiration !== 'string' && typeof expiration !== 'number') return undefined;
  const exp = typeof expiration === 'number' ? (expiration < 1e12 ? expiration * 1000 : expiration) : Date.parse(expiration);
  if (!Number.isFinite(exp)) return undefined;
  const lifetime = exp - Date.now();
  if (lifetime <= 0) return startedAt; // already expired by our clock: use it until it is refused
  const margin = Math.min(60_000, lifetime / 10);
  return performance.now() + lifetime - margin;
}

function parseJson(operation: TcmOperation, label: string, text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new TcmHttpError(operation, undefined, `tcm ${operation} ${label}: the response is not JSON`);
  }
}

function describeNetworkError(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || (e as { code?: string })?.code === 'TCM_TIMEOUT' || e?.cause?.code === 'TCM_TIMEOUT') return 'timed out';
  const cause = e?.cause;
  if (cause?.code) return `${e.message} (${cause.code})`;
  return e?.message ?? String(err);
}

function abortError(signal: AbortSignal | undefined): Error {
  const reason = signal?.reason as unknown;
  if (reason instanceof Error) return reason;
  const err = new Error('aborted');
  err.name = 'AbortError';
  return err;
}

/** A signal that aborts with the parent or after `ms`; `clearTimer` stops only the timeout, `done` detaches everything. */
function timedSignal(parent: AbortSignal, ms: number): { signal: AbortSignal; clearTimer(): void; done(): void } {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    const err = new Error(`no response within ${ms} ms`) as Error & { code: string };
    err.code = 'TCM_TIMEOUT';
    controller.abort(err);
  }, ms);
  return {
    signal: controller.signal,
    clearTimer: () => clearTimeout(timer),
    done: () => {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

async function* streamBody(res: http.IncomingMessage, done: () => void): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
  } finally {
    res.destroy();
    done();
  }
}
