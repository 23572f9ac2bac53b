/**
 * The one way an HTTP destination sends a request and learns what the answer means: the
 * credentials from its HttpAuth, its extra headers, the TLS-configured client, and the answer
 * turned into a SendOutcome through the shared table (http-answers.ts), `Retry-After`
 * included. A network or TLS failure is a retry; a 401 tells the auth to drop its token; every
 * reason and excerpt is redacted (Redactor) and capped. A redirect is never followed.
 */
import { classifyHttpAnswer } from '../http-answers.js';
import type { SendOutcome } from '../destination.js';
import { HttpClient, type HttpResponse } from './client.js';
import type { HttpAuth } from './auth.js';
import { headerSecrets, Redactor, RESPONSE_CHARS } from './redactor.js';
import type { ResolvedHttpSettings } from './settings.js';

/** What a destination reads from an answer's body for the reason (e.g. HEC's `text` and `code`). */
export interface AnswerDetail {
  detail?: string;
  /** Splunk HEC's body `code`. */
  hecCode?: number;
}

export interface HttpRequest {
  url: URL;
  body: Uint8Array;
  /** The request's own headers (content type, encoding); the configured and auth headers are added. */
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /**
   * Looks at the answer first: an outcome decides it (e.g. HEC's `400 No data` to a probe is
   * done; a 2xx still waiting for an acknowledgement), undefined leaves it to the shared table.
   */
  interpret?(res: HttpResponse): SendOutcome | undefined | Promise<SendOutcome | undefined>;
  /** The destination's reading of an error answer's body; default: the body's start. */
  detail?(res: HttpResponse): AnswerDetail;
}

export class HttpTransport {
  readonly client: HttpClient;
  readonly redactor: Redactor;
  private readonly headers: Record<string, string>;

  constructor(
    http: ResolvedHttpSettings,
    baseDir: string,
    private readonly auth: HttpAuth,
    /** Per request when the config sets none. */
    defaultTimeoutMs: number,
  ) {
    this.client = new HttpClient(http.tls, baseDir, http.timeoutMs ?? defaultTimeoutMs);
    this.headers = http.headers;
    this.redactor = new Redactor([...auth.secrets(), ...headerSecrets(http.headers)]);
  }

  /** POST the body; the answer (or the failure) as a send outcome. */
  async send(req: HttpRequest): Promise<SendOutcome> {
    let res: HttpResponse;
    try {
      res = await this.post(req);
    } catch (err) {
      return { kind: 'retry', reason: this.redactor.redact(err instanceof Error ? err.message : String(err)) };
    }
    return this.outcome(res, req);
  }

  /** POST the body and return the raw answer (for a caller that reads it itself, e.g. acknowledgement polls); throws NetworkError. */
  async post(req: Pick<HttpRequest, 'url' | 'body' | 'headers' | 'signal'>): Promise<HttpResponse> {
    const signal = req.signal ?? new AbortController().signal;
    const auth = await this.auth.getAuthHeaders(signal);
    this.redactor.add(this.auth.secrets());
    // the auth headers win over a configured header of the same name
    const res = await this.client.post(req.url, { ...this.headers, ...req.headers, ...auth }, req.body, req.signal);
    if (res.status === 401) this.auth.onUnauthorized?.();
    return res;
  }

  /** An answer → the outcome: the destination's own reading first, then the shared table. */
  async outcome(res: HttpResponse, req: Pick<HttpRequest, 'interpret' | 'detail'> = {}): Promise<SendOutcome> {
    const own = req.interpret ? await req.interpret(res) : undefined;
    if (own) return this.redacted(own);
    if (res.status >= 200 && res.status < 300) return { kind: 'done' };
    const d = req.detail ? req.detail(res) : { detail: res.body.trim() };
    return classifyHttpAnswer({
      status: res.status,
      ...(d.detail ? { detail: this.redactor.excerpt(d.detail) } : {}),
      retryAfter: res.headers['retry-after'],
      response: this.redactor.excerpt(res.body, RESPONSE_CHARS),
      location: res.headers.location,
      ...(d.hecCode !== undefined ? { hecCode: d.hecCode } : {}),
    });
  }

  private redacted(o: SendOutcome): SendOutcome {
    if (o.kind === 'done') return o;
    const out = { ...o, reason: this.redactor.redact(o.reason) };
    if (out.kind === 'rejected' && out.response !== undefined) out.response = this.redactor.excerpt(out.response, RESPONSE_CHARS);
    return out;
  }

  close(): void {
    this.client.close();
  }
}
