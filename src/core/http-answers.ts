/**
 * What an HTTP status means, the one table every HTTP client of the daemon classifies answers
 * with (the destinations through export/http-answers.ts, the TCM source's API client):
 *
 *   2xx                 done
 *   408, 429, 5xx       retry, honouring `Retry-After` (an outage)
 *   400, 413, 422       reject-content: the answer blames the request's content (Splunk HEC's
 *                       body code tells a content problem from a configuration one)
 *   anything else       hold: our credentials are refused, the URL is wrong or moved, or the
 *                       server refuses for a reason that is not the data's
 *
 * What a caller does with a class is its own: a destination holds its batch, the TCM source
 * stops the request with an error (see tcm-client.ts).
 */

export type AnswerClass = 'done' | 'retry' | 'hold' | 'reject-content';

/** Splunk HEC body codes that blame the request's content (the others on a 400 are our configuration). */
const HEC_CONTENT_CODES = new Set([5, 6, 12, 13, 15]);

/** The class of an HTTP status (and HEC code, when there is one). */
export function answerClass(status: number, hecCode?: number): AnswerClass {
  if (status >= 200 && status < 300) return 'done';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  if (status === 400 || status === 413 || status === 422) {
    // HEC says which: a wrong index, a channel or acknowledgement problem is ours, not the data's
    if (status === 400 && hecCode !== undefined && !HEC_CONTENT_CODES.has(hecCode)) return 'hold';
    return 'reject-content';
  }
  if (status < 200) return 'retry';
  return 'hold';
}

/** `Retry-After` as seconds or an HTTP date → milliseconds from now. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value == null || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
