/**
 * Encodings: mapped records → request bodies in a destination's wire format. They run in the
 * encode workers (pipeline/chunk-processor.ts), so every destination declares its encoding as a
 * plain, serialisable spec, and destinations that share a spec share the encoded bytes.
 * An encoder may split one batch into several request bodies (size limits of the destination).
 *
 * The encoder of a spec is found by its `kind` in the list of encoding types
 * (encoding-types.ts): a worker loads the encoders, never a destination's own code or its
 * config schema.
 */
import type { InstrumentationScopeInfo, MappedLogRecord } from '../mapping/log-record.js';
import type { EncodingType } from './destination-type.js';
import { ENCODING_TYPES } from './encoding-types.js';

/** A destination's encoding: its `kind` names the encoding type, the other fields are its options (plain data). */
export interface EncodingSpec {
  readonly kind: string;
}

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

let byKind: Map<string, EncodingType> | undefined;

function encodingTypes(): Map<string, EncodingType> {
  if (byKind) return byKind;
  const m = new Map<string, EncodingType>();
  for (const t of ENCODING_TYPES) {
    if (m.has(t.kind)) throw new Error(`internal error: two encoding types named ${t.kind}`);
    m.set(t.kind, t);
  }
  return (byKind = m);
}

export function encodingType(spec: EncodingSpec): EncodingType {
  const t = encodingTypes().get(spec.kind);
  if (!t) throw new Error(`no encoder for encoding ${spec.kind}`);
  return t;
}

export function createEncoder(spec: EncodingSpec, scope: InstrumentationScopeInfo): Encoder {
  return encodingType(spec).encoderFactory(spec, scope);
}

/** The chunk processor may write this spec's bodies straight from the raw lines (see EncodingType.direct). */
export function encodingSupportsDirect(spec: EncodingSpec): boolean {
  return encodingTypes().get(spec.kind)?.direct === true;
}
