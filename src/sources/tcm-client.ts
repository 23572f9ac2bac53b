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
 * - 408, 429, 5xx and network errors are retried with exponential backoff and full jitter,
 *   honouring `Retry-After`; other statuses are errors for the caller (a listing's 400 tells the
 *   source to shorten its window; a download's 4xx tells it to ask for a fresh URL).
 * - Secrets stay out of logs, errors and metrics: the PAT and the session token are replaced by
 *   `[redacted]` in any response text quoted in an error; the session token is never sent to the
 *   storage host; pre-signed URLs (their query string is a credential) are never logged.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { SourceMetrics } from '../daemon/metrics.js';
import type { Logger } from '../daemon/logger.js';
import { backoffDelay, sleep, type RetryPolicy } from '../export/delivery.js';

export type TcmOperation = 'login' | 'list' | 'urls' | 'download' | 'sites';

export const TCM_LOGIN_PATH = '/api/v1/pat/login';
export const TCM_SESSION_HEADER = 'x-tableau-session-token';

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

export interface TcmRetrySettings extends RetryPolicy {
  /** Attempts per request for retryable failures (429, 5xx, network). */
  maxAttempts: number;
}

export const DEFAULT_TCM_RETRY: TcmRetrySettings = { initialDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: Infinity, maxAttempts: 8 };

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
}

interface Session {
  token: string;
  /** performance.now() after which a new session is signed in first; undefined: only on 401. */
  renewAt: number | undefined;
}

const MAX_RETRY_AFTER_MS = 5 * 60_000;
const ERROR_EXCERPT_CHARS = 300;

export class TcmClient {
  readonly bucket: TokenBucket;
  private readonly baseUrl: string;
  private readonly retry: TcmRetrySettings;
  private readonly timeoutMs: number;
  private session: Session | null = null;
  private signingIn: Promise<Session> | null = null;
  /** Values never to be quoted: the PAT and the current session token. */
  private readonly secrets = new Set<string>();
  /** Sign-ins done by this client (for logs and tests). */
  logins = 0;

  constructor(private readonly options: TcmClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.bucket = new TokenBucket(options.maxRequestsPerSecond);
    this.retry = options.retry ?? DEFAULT_TCM_RETRY;
    this.timeoutMs = options.requestTimeoutMs ?? 60_000;
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
   * 408, 429, 5xx and network errors are retried with the same URL.
   */
  async download(url: string, what: string, signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    for (let attempt = 1; ; attempt++) {
      await this.bucket.take(signal);
      this.options.metrics.request('download');
      const timed = timedSignal(signal, this.timeoutMs);
      let res: Response | undefined;
      let failure = '';
      try {
        // No session header: the storage host is not Tableau Cloud Manager.
        res = await fetch(url, { method: 'GET', signal: timed.signal, redirect: 'follow' });
      } catch (err) {
        timed.done();
        if (signal.aborted) throw abortError(signal);
        failure = `network error: ${describeNetworkError(err)}`;
      }
      if (res) {
        timed.clearTimer(); // the body may take longer than the header timeout
        if (res.ok) {
          if (res.body) return streamBody(res.body, timed.done);
          timed.done();
          return emptyBody();
        }
        timed.done();
        await res.body?.cancel().catch(() => undefined);
        if (!isRetryableStatus(res.status)) {
          throw new TcmHttpError('download', res.status, `download of ${what}: HTTP ${res.status} from the storage host`);
        }
        failure = `HTTP ${res.status}`;
      }
      const retryAfter = res ? retryAfterMs(res.headers.get('retry-after')) : undefined;
      if (attempt >= this.retry.maxAttempts) {
        throw new TcmHttpError('download', res?.status, `download of ${what} failed after ${attempt} attempts: ${failure}`);
      }
      const delay = Math.max(retryAfter ?? 0, backoffDelay(this.retry, attempt));
      this.options.log.warn({ operation: 'download', object: what, reason: failure, attempt, delayMs: delay }, 'tcm request failed; retrying');
      if (await sleep(delay, signal)) throw abortError(signal);
    }
  }

  private async api(operation: TcmOperation, method: 'GET' | 'POST', pathAndQuery: string, body: string | undefined, signal: AbortSignal): Promise<unknown> {
    const url = this.baseUrl + pathAndQuery;
    const label = `${method} ${pathAndQuery.split('?')[0]}`;
    let reloggedIn = false;
    for (let attempt = 1; ; attempt++) {
      const session = await this.ensureSession(signal);
      await this.bucket.take(signal);
      this.options.metrics.request(operation);
      const result = await this.send(url, {
        method,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), [TCM_SESSION_HEADER]: session.token },
        ...(body !== undefined ? { body } : {}),
      }, signal);
      if (result.kind === 'response' && result.status === 401 && !reloggedIn) {
        // The session expired early or was revoked: sign in again and send this call once more.
        reloggedIn = true;
        attempt--;
        this.dropSession(session);
        this.options.log.info({ operation }, 'tcm session rejected (401); signing in again');
        continue;
      }
      if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
        return parseJson(operation, label, result.text);
      }
      const failure = result.kind === 'network' ? `network error: ${result.reason}` : `HTTP ${result.status}`;
      const retryable = result.kind === 'network' || isRetryableStatus(result.status);
      if (!retryable || attempt >= this.retry.maxAttempts) {
        const excerpt = result.kind === 'response' ? this.excerpt(result.text) : '';
        const status = result.kind === 'response' ? result.status : undefined;
        throw new TcmHttpError(operation, status, `tcm ${operation} ${label}: ${failure}${retryable ? ` after ${attempt} attempts` : ''}${excerpt ? `: ${excerpt}` : ''}`);
      }
      const delay = Math.max(result.kind === 'response' ? (result.retryAfterMs ?? 0) : 0, backoffDelay(this.retry, attempt));
      this.options.log.warn({ operation, request: label, reason: failure, attempt, delayMs: delay }, 'tcm request failed; retrying');
      if (await sleep(delay, signal)) throw abortError(signal);
    }
  }

  private async ensureSession(signal: AbortSignal): Promise<Session> {
    const s = this.session;
    if (s && (s.renewAt === undefined || performance.now() < s.renewAt)) return s;
    if (!this.signingIn) {
      this.signingIn = this.signIn(signal).finally(() => {
        this.signingIn = null;
      });
    }
    return this.signingIn;
  }

  private dropSession(s: Session): void {
    if (this.session === s) {
      this.session = null;
      this.secrets.delete(s.token);
    }
  }

  private async signIn(signal: AbortSignal): Promise<Session> {
    const pat = await this.options.readPat();
    this.secrets.add(pat);
    const url = this.baseUrl + TCM_LOGIN_PATH;
    for (let attempt = 1; ; attempt++) {
      await this.bucket.take(signal);
      this.options.metrics.request('login');
      const startedAt = performance.now();
      const result = await this.send(url, { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify({ token: pat }) }, signal);
      if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
        const parsed = parseJson('login', `POST ${TCM_LOGIN_PATH}`, result.text) as Record<string, unknown> | null;
        const token = parsed && typeof parsed === 'object' ? parsed.sessionToken : undefined;
        if (typeof token !== 'string' || token === '') {
          throw new TcmHttpError('login', result.status, `tcm sign-in: the response has no sessionToken`);
        }
        const tenant = parsed!.tenantId;
        if (typeof tenant === 'string' && tenant !== '' && tenant !== this.options.tenantId) {
          this.options.log.warn({ configuredTenantId: this.options.tenantId, patTenantId: tenant }, 'the PAT belongs to another TCM tenant than the configured tenantId; requests will use the configured one');
        }
        const session: Session = { token, renewAt: renewTime(parsed!.sessionExpiration, startedAt) };
        if (this.session) this.secrets.delete(this.session.token);
        this.session = session;
        this.secrets.add(token);
        this.logins++;
        this.options.log.debug({ logins: this.logins }, 'tcm signed in');
        return session;
      }
      if (result.kind === 'response' && (result.status === 401 || result.status === 403)) {
        // The body is deliberately not quoted: a server may echo what it was sent.
        throw new TcmHttpError('login', result.status, `tcm sign-in rejected (HTTP ${result.status}): check that the PAT is a Tableau Cloud Manager personal access token (a site PAT does not work) and that it has not expired or been revoked`);
      }
      const failure = result.kind === 'network' ? `network error: ${result.reason}` : `HTTP ${result.status}`;
      const retryable = result.kind === 'network' || isRetryableStatus(result.status);
      if (!retryable || attempt >= this.retry.maxAttempts) {
        throw new TcmHttpError('login', result.kind === 'response' ? result.status : undefined, `tcm sign-in failed: ${failure}${retryable ? ` after ${attempt} attempts` : ''}`);
      }
      const delay = Math.max(result.kind === 'response' ? (result.retryAfterMs ?? 0) : 0, backoffDelay(this.retry, attempt));
      this.options.log.warn({ operation: 'login', reason: failure, attempt, delayMs: delay }, 'tcm request failed; retrying');
      if (await sleep(delay, signal)) throw abortError(signal);
    }
  }

  /** One HTTP exchange with the whole body read as text; network errors are returned, not thrown. */
  private async send(url: string, init: RequestInit, signal: AbortSignal): Promise<SendResult> {
    const timed = timedSignal(signal, this.timeoutMs);
    try {
      const res = await fetch(url, { ...init, signal: timed.signal });
      const text = await res.text();
      return { kind: 'response', status: res.status, text, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
    } catch (err) {
      if (signal.aborted) throw abortError(signal);
      return { kind: 'network', reason: describeNetworkError(err) };
    } finally {
      timed.done();
    }
  }

  /** A short, single-line excerpt of a response body with every secret removed. */
  private excerpt(text: string): string {
    let t = text;
    for (const s of this.secrets) if (s) t = t.split(s).join('[redacted]');
    t = t.replace(/\s+/g, ' ').trim();
    return t.length > ERROR_EXCERPT_CHARS ? `${t.slice(0, ERROR_EXCERPT_CHARS)}…` : t;
  }
}

type SendResult = { kind: 'response'; status: number; text: string; retryAfterMs: number | undefined } | { kind: 'network'; reason: string };

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** `Retry-After` in seconds or as an HTTP date; capped. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.min(MAX_RETRY_AFTER_MS, Math.round(Number(v) * 1000));
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, t - Date.now()));
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
  if (e?.name === 'TimeoutError' || (e as { code?: string })?.code === 'TCM_TIMEOUT') return 'timed out';
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

async function* emptyBody(): AsyncGenerator<Buffer> {
  // a 2xx without a body: an empty object
}

async function* streamBody(body: ReadableStream<Uint8Array>, done: () => void): AsyncGenerator<Buffer> {
  const readable = Readable.fromWeb(body as unknown as NodeReadableStream<Uint8Array>);
  try {
    for await (const chunk of readable) yield chunk as Buffer;
  } finally {
    readable.destroy();
    done();
  }
}
