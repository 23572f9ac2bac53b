/**
 * The OTLP encodings the encode workers produce: `otlp-protobuf` (our direct protobuf writer,
 * otlp-protobuf/) and `otlp-json` (OpenTelemetry JS's JSON serializer, loaded on
 * first use, otel-log-records.ts). The file destination writes `otlp-json` too.
 */
import { defineEncoding } from '../destination-type.js';
import { ProtoWriter } from '../otlp-protobuf/writer.js';
import { encodeLogsRequest } from '../otlp-protobuf/object-encoder.js';
import { OtelLogRecordBuilder, otlpJsonRequest } from '../otel-log-records.js';

export interface OtlpProtobufEncoding {
  kind: 'otlp-protobuf';
}
export interface OtlpJsonEncoding {
  kind: 'otlp-json';
}

export const otlpProtobufEncoding = defineEncoding<OtlpProtobufEncoding>({
  kind: 'otlp-protobuf',
  direct: true,
  encoderFactory(_spec, scope) {
    const writer = new ProtoWriter();
    return { encode: (records) => ({ bodies: [encodeLogsRequest(records, scope, writer)] }) };
  },
});

export const otlpJsonEncoding = defineEncoding<OtlpJsonEncoding>({
  kind: 'otlp-json',
  direct: false,
  encoderFactory(_spec, scope) {
    const builder = new OtelLogRecordBuilder(scope);
    return { encode: (records) => ({ bodies: [otlpJsonRequest(builder, records)] }) };
  },
});
