/**
 * The contract every destination (otlp, file, later splunk-hec and datadog) implements: it
 * declares the encoding it wants (the encode workers produce the request bodies, see
 * encodings.ts), takes one encoded request body at a time and says whether it was accepted,
 * should be retried later, or was rejected for good. Retries, backoff and dead-lettering live
 * in delivery.ts and the pipeline, once for all destinations.
 */
import type { EncodingSpec } from './encodings.js';

export type SendOutcome =
  | { kind: 'done' }
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  | { kind: 'rejected'; reason: string; status?: number; response?: string };

export interface Destination {
  /** `<type>` or the configured name, used in logs, metrics and the dead-letter store. */
  readonly name: string;
  readonly encoding: EncodingSpec;
  /** Send one request body; `records` is how many records it holds (for logs and metrics). */
  send(payload: Uint8Array, records: number, signal: AbortSignal): Promise<SendOutcome>;
  /**
   * Optional: check that the destination answers and accepts our credentials, without
   * delivering any record (e.g. an empty OTLP export request, a health endpoint). The daemon
   * probes at start so that `/readyz` can report a destination reached before there is anything
   * to send; without it a destination counts as reached at its first accepted batch.
   */
  probe?(signal: AbortSignal): Promise<SendOutcome>;
  shutdown(): Promise<void>;
}

/** Classify an HTTP status the same way for every HTTP destination. */
export function classifyHttpStatus(status: number, reason: string, retryAfterHeader?: string | null, response?: string): SendOutcome {
  if (status >= 200 && status < 300) return { kind: 'done' };
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(retryAfterHeader);
    return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
  }
  return { kind: 'rejected', reason, status, ...(response !== undefined ? { response } : {}) };
}

/** `Retry-After` as seconds or an HTTP date → milliseconds from now. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value == null || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
