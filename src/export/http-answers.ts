/**
 * What an HTTP destination's answer means for the batch: the one table every destination
 * (otlp, splunk-hec, datadog) classifies its answers with.
 *
 *   2xx                        done
 *   408, 429, 5xx              retry, honouring `Retry-After` (an outage)
 *   401, 403, 407              hold: our credentials (or the proxy's) are refused. Retried with
 *                              backoff like an outage, never dead-lettered: an expired token
 *                              must not turn the backlog into dead letters
 *   3xx, 404, 405, 410         hold: the destination moved or the URL is wrong. A redirect is
 *                              never followed (our credentials would travel to another host);
 *                              the reason names the host it points to
 *   400, 413, 422              reject-content: the answer blames the batch's content. The
 *                              pipeline splits a multi-record batch to find the records at
 *                              fault and dead-letters only those
 *   any other 4xx              hold (we cannot tell it is the data's fault: nothing is lost)
 *
 * Destination-specific answers go through the same table: Splunk HEC's body `code` (an invalid
 * token is 403 code 4; a wrong index is 400 code 7, a configuration problem, not bad data).
 */
import type { SendOutcome } from './destination.js';
import { answerClass, parseRetryAfter } from '../core/http-answers.js';
export { answerClass, parseRetryAfter, type AnswerClass } from '../core/http-answers.js';

export interface HttpAnswer {
  status: number;
  /** What the destination said, already shortened and redacted (becomes part of the reason). */
  detail?: string;
  retryAfter?: string | string[] | null | undefined;
  /** The response body (shortened, redacted) kept with a dead letter. */
  response?: string;
  /** The `Location` header of a redirect. */
  location?: string | string[] | undefined;
  /** Splunk HEC's `code` in the answer's JSON body. */
  hecCode?: number;
}

/** An HTTP answer → the send outcome the delivery loop and the pipeline act on. */
export function classifyHttpAnswer(a: HttpAnswer): SendOutcome {
  const cls = answerClass(a.status, a.hecCode);
  if (cls === 'done') return { kind: 'done' };
  let reason = `HTTP ${a.status}${a.detail ? `: ${a.detail}` : ''}`;
  if (cls === 'retry') {
    const retryAfterMs = parseRetryAfter(first(a.retryAfter));
    return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
  }
  if (cls === 'hold') {
    if (a.status >= 300 && a.status < 400) reason += ` (redirect to ${redirectTarget(first(a.location))}, not followed: fix the destination's URL)`;
    else reason += ` (${holdCause(a.status)}; held and retried, nothing dead-lettered)`;
    return { kind: 'hold', reason, status: a.status };
  }
  return { kind: 'rejected', reason, status: a.status, ...(a.response !== undefined ? { response: a.response } : {}) };
}

/**
 * Kept for callers of the earlier signature: status, reason, `Retry-After` and response. The
 * reason is used as given (it should start with `HTTP <status>`).
 */
export function classifyHttpStatus(status: number, reason: string, retryAfterHeader?: string | null, response?: string): SendOutcome {
  const outcome = classifyHttpAnswer({ status, retryAfter: retryAfterHeader, ...(response !== undefined ? { response } : {}) });
  return outcome.kind === 'done' ? outcome : { ...outcome, reason };
}

function holdCause(status: number): string {
  if (status === 401 || status === 403) return 'the destination refuses our credentials';
  if (status === 407) return 'the proxy refuses our credentials';
  if (status === 404 || status === 405 || status === 410) return 'no intake at this URL';
  return 'the destination refuses the request';
}

/** Where a redirect points, as scheme://host only (a path or query may carry a token). */
function redirectTarget(location: string | undefined): string {
  if (!location) return 'an unnamed location';
  try {
    const u = new URL(location, 'http://same-host.invalid');
    return u.host === 'same-host.invalid' ? 'another path on the same host' : `${u.protocol}//${u.host}`;
  } catch {
    return 'an unparseable location';
  }
}

function first(v: string | string[] | null | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : (v ?? undefined);
}
