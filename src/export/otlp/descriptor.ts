/** `type: otlp`: OTLP/HTTP, protobuf (default) or JSON. The destination itself: destination.ts. */
import { defineDestination } from '../destination-type.js';
import { otlpDestinationConfigSchema, otlpEncodingSpec } from './config.js';
import { otlpJsonEncoding, otlpProtobufEncoding } from './encoding.js';

export const otlpDescriptor = defineDestination({
  type: 'otlp',
  configSchema: otlpDestinationConfigSchema,
  capabilities: { http: true, probe: true },
  encoding: {
    specFromConfig: otlpEncodingSpec,
    types: [otlpProtobufEncoding, otlpJsonEncoding],
  },
  // OpenTelemetry JS's exporter base (its configuration resolution) loads only for otlp destinations
  sampleConfig: ({ url, secret }) => ({ config: { type: 'otlp' as const, endpoint: url, protocol: 'http/protobuf' as const, headers: { authorization: `Bearer ${secret}` } }, env: {} }),
  load: async () => {
    const { OtlpDestination } = await import('./destination.js');
    return { create: (config, settings) => new OtlpDestination(config, settings) };
  },
});
