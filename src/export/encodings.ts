/**
 * Encodings: mapped records → request bodies in a destination's wire format. They run in the
 * encode workers (pipeline/chunk-processor.ts), so every destination declares its encoding as a
 * plain, serialisable spec, and destinations that share a spec share the encoded bytes.
 * An encoder may split one batch into several request bodies (size limits of the destination).
 */
import type { InstrumentationScopeInfo, MappedLogRecord } from '../mapping/log-record.js';
import { encodeLogsRequest, ProtoWriter } from './otlp-protobuf-encoder.js';
import { OtelLogRecordBuilder, otlpJsonRequest } from './otel-log-records.js';
import { createSplunkHecEncoder, type SplunkHecEncoding } from './splunk-hec/encoder.js';
import { createDatadogEncoder, type DatadogEncoding } from './datadog/encoder.js';

export type EncodingSpec = { kind: 'otlp-protobuf' } | { kind: 'otlp-json' } | SplunkHecEncoding | DatadogEncoding;

export interface EncodeResult {
  bodies: Uint8Array[];
  /**
   * Records in each body (same order), set by encoders that split a batch: the bodies take the
   * records in order, so the pipeline can tell which lines a rejected body held.
   */
  counts?: number[];
  /** Entries the encoder shortened on purpose to fit the destination's per-entry limit. */
  truncated?: number;
}

export interface Encoder {
  encode(records: readonly MappedLogRecord[]): EncodeResult;
}

export function encodingKey(spec: EncodingSpec): string {
  return JSON.stringify(spec);
}

export function createEncoder(spec: EncodingSpec, scope: InstrumentationScopeInfo): Encoder {
  switch (spec.kind) {
    case 'otlp-protobuf': {
      const writer = new ProtoWriter();
      return { encode: (records) => ({ bodies: [encodeLogsRequest(records, scope, writer)] }) };
    }
    case 'otlp-json': {
      const builder = new OtelLogRecordBuilder(scope);
      return { encode: (records) => ({ bodies: [otlpJsonRequest(builder, records)] }) };
    }
    case 'splunk-hec':
      return createSplunkHecEncoder(spec);
    case 'datadog':
      return createDatadogEncoder(spec);
  }
}
