/**
 * The one way an HTTP client of the daemon sends a request: the credentials from its HttpAuth
 * (asked before every request; told of a 401 so it can drop a stale token), its extra headers,
 * the TLS-configured client (client.ts: no redirect followed, the answer capped, a per-request
 * timeout), and a Redactor that knows every secret the auth and the credential headers hold.
 * What an answer means is the caller's: the destinations turn it into a send outcome
 * (export/http/destination-transport.ts), the TCM source into a retry or an error
 * (sources/tcm/tcm-client.ts), both with the one table in core/http-answers.ts.
 */
import { HttpClient, type HttpResponse, type TlsOptions } from './client.js';
import type { HttpAuth } from './auth.js';
import { headerSecrets, Redactor } from './redactor.js';

/** The connection settings of one transport (a destination's come from export/http/settings.ts). */
export interface HttpTransportSettings {
  /** Per request, milliseconds; undefined: the transport's default. */
  timeoutMs: number | undefined;
  tls: TlsOptions;
  /** Extra headers on every request; credential headers among them are redacted. */
  headers: Record<string, string>;
}

export interface HttpTransportRequest {
  url: URL;
  /** Default POST. */
  method?: 'GET' | 'POST';
  body?: Uint8Array | undefined;
  /** The request's own headers (content type, encoding); the configured and auth headers are added. */
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** See client.ts's RequestOptions: the most bytes of a 2xx answer read, a longer one comes back `truncated`. */
  maxResponseBytes?: number | undefined;
  /** False: send without the auth's headers (a sign-in, whose credential is in the body); a 401 is then not reported to the auth. */
  auth?: false;
}

export class HttpTransport {
  readonly client: HttpClient;
  readonly redactor: Redactor;
  private readonly headers: Record<string, string>;

  constructor(
    http: HttpTransportSettings,
    baseDir: string,
    protected readonly auth: HttpAuth,
    /** Per request when the settings give none. */
    defaultTimeoutMs: number,
  ) {
    this.client = new HttpClient(http.tls, baseDir, http.timeoutMs ?? defaultTimeoutMs);
    this.headers = http.headers;
    this.redactor = new Redactor([...auth.secrets(), ...headerSecrets(http.headers)]);
  }

  /** Send the request and return the raw answer (the caller classifies it); throws NetworkError. */
  async request(req: HttpTransportRequest): Promise<HttpResponse> {
    const signal = req.signal ?? new AbortController().signal;
    const auth = req.auth === false ? {} : await this.auth.getAuthHeaders(signal);
    this.redactor.add(this.auth.secrets());
    // the auth headers win over a configured header of the same name
    const res = await this.client.request(req.url, { ...this.headers, ...req.headers, ...auth }, {
      method: req.method ?? 'POST',
      body: req.body,
      signal: req.signal,
      maxResponseBytes: req.maxResponseBytes,
    });
    if (res.status === 401 && req.auth !== false) this.auth.onUnauthorized?.(auth);
    return res;
  }

  /** POST the body and return the raw answer (for a caller that reads it itself, e.g. acknowledgement polls); throws NetworkError. */
  post(req: Pick<HttpTransportRequest, 'url' | 'body' | 'headers' | 'signal'>): Promise<HttpResponse> {
    return this.request({ ...req, method: 'POST' });
  }

  close(): void {
    this.client.close();
  }
}
