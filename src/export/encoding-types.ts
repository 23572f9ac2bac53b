/**
 * Every encoding type the encode workers can produce (each defined next to its destination's
 * encoder: `<type>/encoder.ts`, otlp/encoding.ts). The workers find a spec's encoder here, by its
 * `kind`, and import nothing else of a destination type: its descriptor carries its config
 * schema (zod), which only the main thread needs.
 *
 * A destination type's descriptor lists the encodings it uses (`encoding.types`); each must be
 * listed here too, which the destination conformance test checks for every descriptor.
 */
import type { EncodingType } from './destination-type.js';
import { otlpJsonEncoding, otlpProtobufEncoding } from './otlp/encoding.js';
import { splunkHecEncoding } from './splunk-hec/encoder.js';
import { datadogEncoding } from './datadog/encoder.js';
import { sentinelEncoding } from './sentinel/encoder.js';
import { googleSecOpsEncoding } from './google-secops/encoder.js';

export const ENCODING_TYPES: readonly EncodingType[] = [otlpProtobufEncoding, otlpJsonEncoding, splunkHecEncoding, datadogEncoding, sentinelEncoding, googleSecOpsEncoding];
