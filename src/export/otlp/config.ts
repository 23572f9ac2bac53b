/**
 * `type: otlp` options (zod, strict). The shared HTTP settings (headers, timeout, TLS) come
 * from http/settings.ts; what is not set falls back to the standard OTEL_EXPORTER_OTLP_*
 * variables, resolved by OpenTelemetry JS's own code (see destination.ts).
 */
import { z } from 'zod';
import { compressionSchema, httpSettingsShape } from '../http/settings.js';

export const otlpProtocolSchema = z.enum(['http/protobuf', 'http/json']);
export type OtlpProtocol = z.infer<typeof otlpProtocolSchema>;

export const otlpDestinationConfigSchema = z
  .object({
    type: z.literal('otlp'),
    name: z.string().min(1).optional(),
    /** Base URL (`/v1/logs` is appended) or the full logs URL ending in `/v1/logs`. Default: the OTEL_EXPORTER_OTLP_* variables, else http://localhost:4318. */
    endpoint: z.string().url().optional(),
    protocol: otlpProtocolSchema.optional(),
    /** Default: OTEL_EXPORTER_OTLP_COMPRESSION, else none. */
    compression: compressionSchema.optional(),
    /** (`timeout` default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10s; `headers` are added to OTEL_EXPORTER_OTLP_HEADERS.) */
    ...httpSettingsShape,
  })
  .strict();
export type OtlpDestinationConfig = z.infer<typeof otlpDestinationConfigSchema>;

export function logsUrl(endpoint: string): string {
  const trimmed = endpoint.replace(/\/+$/, '');
  return /\/v1\/logs$/.test(trimmed) ? trimmed : `${trimmed}/v1/logs`;
}

/** Protocol from config, else OTEL_EXPORTER_OTLP_LOGS_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL, else protobuf. */
export function resolveProtocol(configured: OtlpProtocol | undefined, env: NodeJS.ProcessEnv = process.env): OtlpProtocol {
  if (configured) return configured;
  const fromEnv = env.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (fromEnv === 'http/json') return 'http/json';
  return 'http/protobuf';
}

/** The body an otlp destination sends: protobuf, or JSON for `http/json` (its `protocol` or OTEL_EXPORTER_OTLP_*_PROTOCOL). */
export function otlpEncodingSpec(config: OtlpDestinationConfig, env: NodeJS.ProcessEnv): { kind: 'otlp-json' | 'otlp-protobuf' } {
  return resolveProtocol(config.protocol, env) === 'http/json' ? { kind: 'otlp-json' } : { kind: 'otlp-protobuf' };
}
