/**
 * Mapped records → OTLP protobuf: the writer (otlp-protobuf/writer.ts), the encoder of record
 * objects (otlp-protobuf/object-encoder.ts) and the fast path's direct writer
 * (otlp-protobuf/direct-writer.ts). Kept for the modules that import it from here.
 */
export { keyFieldOf, ProtoWriter } from './otlp-protobuf/writer.js';
export { encodeLogsRequest, MAX_NATIVE_VALUE_DEPTH } from './otlp-protobuf/object-encoder.js';
export { DirectLogsRequestWriter, type ConstBlock, type NameSlot } from './otlp-protobuf/direct-writer.js';
