/**
 * The plain HTTP(S) POST every HTTP destination (otlp, splunk-hec, datadog) uses, under the
 * shared layer (transport.ts): one keep-alive
 * agent per destination with its TLS options (custom CA, verification on unless turned off),
 * a per-request timeout, an abort signal, and the response read back (capped) so the caller can
 * classify it (http-answers.ts). A redirect is never followed (Node's http client does not, and
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
  /** The response body as text, at most `MAX_RESPONSE_CHARS`. */
  body: string;
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

const MAX_RESPONSE_BYTES = 64 * 1024;

/** A POST client bound to one origin's TLS settings, with a keep-alive agent. */
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
    const isHttps = url.protocol === 'https:';
    const mod = isHttps ? https : http;
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
          method: 'POST',
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          headers: { ...headers, 'Content-Length': String(body.byteLength) },
          timeout: this.timeoutMs,
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            if (size < MAX_RESPONSE_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('error', (err) => fail(describe(err, url)));
          res.on('end', () => {
            if (settled) return;
            settled = true;
            const text = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
            resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: text });
          });
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
