/**
 * `type: otlp`: OTLP/HTTP (protobuf by default, or JSON) through OpenTelemetry JS's own log
 * exporters, called batch by batch so that each batch's result callback is the acknowledgement
 * the checkpoint waits for. The standard OTEL_EXPORTER_OTLP_* variables apply as in every SDK
 * when the config leaves an option out.
 */
import { z } from 'zod';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import { ExportResultCode } from '@opentelemetry/core';
import type { Destination, SendOutcome } from './destination.js';
import { classifyHttpStatus } from './destination.js';
import type { MappedLogRecord, InstrumentationScopeInfo } from '../mapping/log-record.js';
import { OtelLogRecordBuilder } from './otel-log-records.js';

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

export class OtlpDestination implements Destination {
  readonly name: string;
  private readonly exporter: LogRecordExporter;
  private readonly builder: OtelLogRecordBuilder;

  constructor(config: OtlpDestinationConfig, scope: InstrumentationScopeInfo) {
    this.name = config.name ?? 'otlp';
    const protocol = resolveProtocol(config.protocol);
    const options = {
      ...(config.endpoint ? { url: logsUrl(config.endpoint) } : {}),
      ...(config.headers ? { headers: config.headers } : {}),
      ...(config.compression ? { compression: config.compression as never } : {}),
      ...(config.timeoutMs ? { timeoutMillis: config.timeoutMs } : {}),
    };
    this.exporter = protocol === 'http/json' ? new JsonExporter(options) : new ProtoExporter(options);
    this.builder = new OtelLogRecordBuilder(scope);
  }

  send(records: readonly MappedLogRecord[]): Promise<SendOutcome> {
    const otel = this.builder.build(records);
    return new Promise((resolve) => {
      this.exporter.export(otel, (result) => {
        if (result.code === ExportResultCode.SUCCESS) return resolve({ kind: 'done' });
        const err = result.error as (Error & { code?: number; data?: string }) | undefined;
        const status = typeof err?.code === 'number' ? err.code : undefined;
        const reason = status ? `HTTP ${status}${err?.message ? ` ${err.message}` : ''}` : (err?.message ?? 'export failed');
        if (status === undefined) return resolve({ kind: 'retry', reason });
        resolve(classifyHttpStatus(status, reason, undefined, err?.data?.slice(0, 2000)));
      });
    });
  }

  async shutdown(): Promise<void> {
    await this.exporter.shutdown();
  }
}
