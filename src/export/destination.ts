/**
 * The contract every destination implements: it declares the encoding it wants (the encode
 * workers produce the request bodies, see encodings.ts), takes one encoded request body at a
 * time and says whether it was accepted, should be retried later (an outage, or a hold: our
 * credentials refused), or its content was rejected for good. Retries, backoff and
 * dead-lettering live in delivery.ts and the pipeline, once for all destinations.
 *
 * A destination type is one folder `src/export/<type>/` whose `descriptor.ts` exports a
 * DestinationDescriptor (destination-type.ts); destination-registry.ts lists the descriptors.
 */
import type { EncodingSpec } from './encodings.js';

export type SendOutcome =
  | { kind: 'done' }
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  /**
   * The destination refuses us, not the data (credentials refused, moved, wrong URL): retried
   * like an outage, and the pipeline holds (checkpoint unchanged); never dead-lettered.
   */
  | { kind: 'hold'; reason: string; status: number }
  /**
   * The destination blames the content: the pipeline splits the batch and dead-letters the records at fault.
   * A bulk API that says which entries it refused sets `rejectedRecords` (indexes of the
   * records in the body, in order; the others were accepted). Optional: without it every
   * record of the body counts as suspect, and the pipeline finds the faulty ones by splitting.
   */
  | { kind: 'rejected'; reason: string; status?: number; response?: string; rejectedRecords?: readonly number[] };

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
  /** Close connections and timers. Safe to call more than once. */
  shutdown(): Promise<void>;
}

/** The classification of HTTP answers, shared by every HTTP destination, lives in http-answers.ts. */
export { classifyHttpAnswer, classifyHttpStatus, parseRetryAfter } from './http-answers.js';
