/**
 * `type: otlp`: OTLP/HTTP, protobuf by default or JSON. The request bodies come from the encode
 * workers (our direct protobuf encoder, or OpenTelemetry JS's JSON serializer); transport,
 * compression, headers, timeouts, the exporter's own retries and the standard
 * OTEL_EXPORTER_OTLP_* variables are OpenTelemetry JS's (otlp-exporter-base), so the endpoint
 * behaves as in every SDK. Each export's result callback is the acknowledgement the checkpoint
 * waits for.
 */
import { z } from 'zod';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { createOtlpHttpExportDelegate, convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http';
import { ExportResultCode } from '@opentelemetry/core';
import type { Destination, SendOutcome } from './destination.js';
import { classifyHttpStatus } from './destination.js';
import type { EncodingSpec } from './encodings.js';

export const otlpProtocolSchema = z.enum(['http/protobuf', 'http/json']);
export type OtlpProtocol = z.infer<typeof otlpProtocolSchema>;

export const otlpDestinationConfigSchema = z
  .object({
    type: z.literal('otlp'),
    name: z.string().min(1).optional(),
    /** Base URL (`/v1/logs` is appended) or the full logs URL ending in `/v1/logs`. Default: the OTEL_EXPORTER_OTLP_* variables, else http://localhost:4318. */
    endpoint: z.string().url().optional(),
    protocol: otlpProtocolSchema.optional(),
    headers: z.record(z.string(), z.string()).optional(),
    compression: z.enum(['gzip', 'none']).optional(),
    /** Per request, milliseconds. */
    timeoutMs: z.number().int().positive().optional(),
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

/** The bodies are already encoded: the exporter's serializer passes them through. */
const passThrough = {
  serializeRequest: (payload: Uint8Array) => payload,
  deserializeResponse: (data: Uint8Array) => data,
};
const payloadMetrics = { name: 'log' as const, countItems: () => 0 };
const EMPTY_PROTOBUF_REQUEST = new Uint8Array(0);
const EMPTY_JSON_REQUEST = new TextEncoder().encode('{"resourceLogs":[]}');

export class OtlpDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly exporter: OTLPExporterBase<Uint8Array>;

  constructor(config: OtlpDestinationConfig) {
    this.name = config.name ?? 'otlp';
    const protocol = resolveProtocol(config.protocol);
    this.encoding = protocol === 'http/json' ? { kind: 'otlp-json' } : { kind: 'otlp-protobuf' };
    const options = {
      ...(config.endpoint ? { url: logsUrl(config.endpoint) } : {}),
      ...(config.headers ? { headers: config.headers } : {}),
      ...(config.compression ? { compression: config.compression as never } : {}),
      ...(config.timeoutMs ? { timeoutMillis: config.timeoutMs } : {}),
    };
    const contentType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    this.exporter = new OTLPExporterBase(
      createOtlpHttpExportDelegate(convertLegacyHttpOptions(options, 'LOGS', 'v1/logs', { 'Content-Type': contentType }), passThrough, 'tableau_activity_otel_otlp_http_log_exporter', payloadMetrics, undefined),
    );
  }

  send(payload: Uint8Array): Promise<SendOutcome> {
    return new Promise((resolve) => {
      this.exporter.export(payload, (result) => {
        if (result.code === ExportResultCode.SUCCESS) return resolve({ kind: 'done' });
        const err = result.error as (Error & { code?: number; data?: string }) | undefined;
        const status = typeof err?.code === 'number' ? err.code : undefined;
        const reason = status ? `HTTP ${status}${err?.message ? ` ${err.message}` : ''}` : (err?.message ?? 'export failed');
        if (status === undefined) return resolve({ kind: 'retry', reason });
        resolve(classifyHttpStatus(status, reason, undefined, err?.data?.slice(0, 2000)));
      });
    });
  }

  /** An empty ExportLogsServiceRequest (no records): every OTLP receiver accepts it. */
  probe(): Promise<SendOutcome> {
    return this.send(this.encoding.kind === 'otlp-json' ? EMPTY_JSON_REQUEST : EMPTY_PROTOBUF_REQUEST);
  }

  async shutdown(): Promise<void> {
    await this.exporter.shutdown();
  }
}
