/**
 * The plain HTTP(S) request every HTTP client of the daemon uses (the destinations otlp,
 * splunk-hec, datadog; the TCM source's API calls), under the shared layer (transport.ts): one
 * keep-alive agent per client with its TLS options (custom CA, verification on unless turned
 * off), a per-request timeout, an abort signal, and the response read back (capped) so the
 * caller can classify it (core/http-answers.ts). A caller may set a per-call limit on a 2xx
 * body (`maxResponseBytes`): a longer answer comes back `truncated` and is not read on. A redirect is never followed (Node's http client does not, and
 * we do not either): a 3xx comes back as an answer like any other, so a credential never goes to
 * the host a redirect names. Network and TLS failures come back as a `NetworkError`
 * with a readable reason (the TLS error code included), never with request headers in it.
 */
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface TlsOptions {
  caFile?: string | undefined;
  insecureSkipVerify?: boolean | undefined;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The response body as text, at most MAX_RESPONSE_BYTES (a 2xx: the call's `maxResponseBytes`, when set). */
  body: string;
  /** With a per-call `maxResponseBytes`: the answer was longer than its limit and was not read on. */
  truncated?: boolean;
}

export interface RequestOptions {
  method?: 'GET' | 'POST';
  /** Body to send (none for a GET). */
  body?: Uint8Array | undefined;
  signal?: AbortSignal | undefined;
  /**
   * The most bytes of a 2xx answer read; a longer one (by its Content-Length or as it arrives)
   * is cut off: `truncated`, the rest not read. An error answer is then read up to
   * MAX_RESPONSE_BYTES and not read on either. Unset: any answer is read to its end, the first
   * MAX_RESPONSE_BYTES kept.
   */
  maxResponseBytes?: number | undefined;
}

/** A request that got no HTTP response: connection refused, reset, TLS failure, timeout. */
export class NetworkError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'NetworkError';
  }
}

/** Of an answer, at most this much is kept (an error answer is only quoted, shortened). */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** A client bound to one origin's TLS settings, with a keep-alive agent. */
export class HttpClient {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(
    tls: TlsOptions,
    /** Base directory `caFile` is relative to. */
    baseDir: string,
    private readonly timeoutMs: number,
  ) {
    const ca = tls.caFile ? readFileSync(resolve(baseDir, tls.caFile), 'utf8') : undefined;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    this.httpsAgent = new https.Agent({
      keepAlive: true,
      maxSockets: 16,
      rejectUnauthorized: tls.insecureSkipVerify !== true,
      ...(ca !== undefined ? { ca } : {}),
    });
  }

  post(url: URL, headers: Record<string, string>, body: Uint8Array, signal?: AbortSignal): Promise<HttpResponse> {
    return this.request(url, headers, { method: 'POST', body, signal });
  }

  request(url: URL, headers: Record<string, string>, opts: RequestOptions = {}): Promise<HttpResponse> {
    const isHttps = url.protocol === 'https:';
    const mod = isHttps ? https : http;
    const { body, signal, maxResponseBytes: limit } = opts;
    return new Promise<HttpResponse>((resolvePromise, reject) => {
      let settled = false;
      const fail = (err: NetworkError): void => {
        if (settled) return;
        settled = true;
        reject(err);
      };
      const req = mod.request(
        url,
        {
          method: opts.method ?? 'POST',
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          headers: body !== undefined ? { ...headers, 'Content-Length': String(body.byteLength) } : headers,
          timeout: this.timeoutMs,
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          const cap = limit !== undefined && ok ? limit : MAX_RESPONSE_BYTES;
          const chunks: Buffer[] = [];
          let size = 0;
          const finish = (truncated: boolean): void => {
            if (settled) return;
            settled = true;
            const text = Buffer.concat(chunks).subarray(0, cap).toString('utf8');
            resolvePromise({ status, headers: res.headers, body: text, ...(truncated ? { truncated } : {}) });
          };
          if (limit !== undefined && ok && Number(res.headers['content-length'] ?? 0) > cap) {
            finish(true);
            res.destroy();
            return;
          }
          res.on('data', (c: Buffer) => {
            if (limit !== undefined && size + c.length > cap) {
              chunks.push(c.subarray(0, cap - size));
              size = cap;
              finish(true);
              res.destroy(); // not read on
              return;
            }
            if (size < cap) chunks.push(c);
            size += c.length;
          });
          res.on('error', (err) => fail(describe(err, url)));
          res.on('end', () => finish(false));
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error(`no response within ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', (err) => fail(describe(err, url)));
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** TLS error codes Node reports when the peer's certificate is not trusted. */
const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|ERR_SSL|HOSTNAME|DEPTH_ZERO/;

function describe(err: Error, url: URL): NetworkError {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${url.protocol}//${url.host}`;
  if (code && TLS_CODES.test(code)) {
    return new NetworkError(`TLS error talking to ${where}: ${err.message} (${code}); set caFile to the CA that signed the server's certificate, or insecureSkipVerify: true for a test setup`, code);
  }
  if (err.name === 'AbortError') return new NetworkError(`request to ${where} aborted`, 'ABORT_ERR');
  return new NetworkError(`cannot reach ${where}: ${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`, code);
}
