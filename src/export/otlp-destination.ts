/**
 * `type: otlp`: OTLP/HTTP, protobuf by default or JSON. The request bodies come from the encode
 * workers (our direct protobuf encoder, or OpenTelemetry JS's JSON serializer). The endpoint,
 * headers, compression and timeout are resolved by OpenTelemetry JS's own configuration code
 * (otlp-exporter-base), so config options and the standard OTEL_EXPORTER_OTLP_* variables behave
 * as in every SDK. The request itself goes through our HTTP client, so the status code and
 * `Retry-After` of every answer reach the shared retry policy (the SDK's exporter swallows both
 * once its own retry budget is spent), and TLS can be configured per destination.
 */
import { z } from 'zod';
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http';
import type { Destination, SendOutcome } from './destination.js';
import { classifyHttpAnswer } from './http-answers.js';
import type { EncodingSpec } from './encodings.js';
import { HttpClient, NetworkError, tlsConfigShape } from './http-client.js';

const gzipAsync = promisify(gzip);

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
    /** Per request, milliseconds (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10000). */
    timeoutMs: z.number().int().positive().optional(),
    ...tlsConfigShape,
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

const EMPTY_PROTOBUF_REQUEST = new Uint8Array(0);
const EMPTY_JSON_REQUEST = new TextEncoder().encode('{"resourceLogs":[]}');

export class OtlpDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly url: URL;
  private readonly headers: () => Promise<Record<string, string>>;
  private readonly gzip: boolean;
  private readonly client: HttpClient;

  constructor(config: OtlpDestinationConfig, baseDir: string = process.cwd()) {
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
    // the SDK's resolution of options and OTEL_EXPORTER_OTLP_* variables
    const resolved = convertLegacyHttpOptions(options, 'LOGS', 'v1/logs', { 'Content-Type': contentType });
    this.url = new URL(resolved.url);
    this.headers = resolved.headers;
    this.gzip = resolved.compression === 'gzip';
    this.client = new HttpClient({ caFile: config.caFile, insecureSkipVerify: config.insecureSkipVerify }, baseDir, resolved.timeoutMillis);
  }

  async send(payload: Uint8Array, _records?: number, signal?: AbortSignal): Promise<SendOutcome> {
    const headers = { ...(await this.headers()) };
    let body = payload;
    if (this.gzip) {
      body = await gzipAsync(payload);
      headers['Content-Encoding'] = 'gzip';
    }
    try {
      const res = await this.client.post(this.url, headers, body, signal);
      if (res.status >= 200 && res.status < 300) return { kind: 'done' };
      // (a header value the answer quotes is scrubbed by the daemon's logger and dead-letter store: they know the configured headers)
      return classifyHttpAnswer({
        status: res.status,
        ...(res.body ? { detail: res.body.slice(0, 200) } : {}),
        retryAfter: res.headers['retry-after'],
        response: res.body.slice(0, 2000),
        location: res.headers.location,
      });
    } catch (err) {
      if (err instanceof NetworkError) return { kind: 'retry', reason: err.message };
      throw err;
    }
  }

  /** An empty ExportLogsServiceRequest (no records): every OTLP receiver accepts it. */
  probe(signal?: AbortSignal): Promise<SendOutcome> {
    return this.send(this.encoding.kind === 'otlp-json' ? EMPTY_JSON_REQUEST : EMPTY_PROTOBUF_REQUEST, 0, signal);
  }

  async shutdown(): Promise<void> {
    this.client.close();
  }
}
