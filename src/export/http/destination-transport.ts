/**
 * How an HTTP destination sends a batch and learns what the answer means: the shared transport
 * (core/http/transport.ts: auth headers, extra headers, TLS, no redirect followed, redaction)
 * with the answer turned into a SendOutcome through the destinations' table
 * (export/http-answers.ts), `Retry-After` included. A network or TLS failure is a retry; every
 * reason and excerpt is redacted (Redactor) and capped.
 */
import { classifyHttpAnswer } from '../http-answers.js';
import type { SendOutcome } from '../destination.js';
import type { HttpResponse } from '../../core/http/client.js';
import { HttpTransport } from '../../core/http/transport.js';
import { RESPONSE_CHARS } from '../../core/http/redactor.js';

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

export class DestinationHttpTransport extends HttpTransport {
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
}
