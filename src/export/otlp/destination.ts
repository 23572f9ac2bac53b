/**
 * `type: otlp`: OTLP/HTTP, protobuf by default or JSON. The request bodies come from the encode
 * workers (our direct protobuf encoder, or OpenTelemetry JS's JSON serializer). The endpoint,
 * headers, compression and timeout are resolved by OpenTelemetry JS's own configuration code
 * (otlp-exporter-base), so config options and the standard OTEL_EXPORTER_OTLP_* variables behave
 * as in every SDK. The request itself goes through the shared HTTP layer (http/destination-transport.ts), so
 * the status code and `Retry-After` of every answer reach the shared retry policy (the SDK's
 * exporter swallows both once its own retry budget is spent), and TLS can be configured per
 * destination.
 */
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http';
import type { Destination, SendOutcome } from '../destination.js';
import type { EncodingSpec } from '../encodings.js';
import type { DestinationSettings } from '../destination-type.js';
import { DestinationHttpTransport } from '../http/destination-transport.js';
import { headerSecrets } from '../../core/http/redactor.js';
import { resolveHttpSettings } from '../http/settings.js';
import type { HttpAuth } from '../../core/http/auth.js';
import { silentLogger } from '../../core/logger.js';
import { logsUrl, otlpEncodingSpec, resolveProtocol, type OtlpDestinationConfig } from './config.js';

export { logsUrl, resolveProtocol, otlpDestinationConfigSchema, otlpProtocolSchema, type OtlpDestinationConfig, type OtlpProtocol } from './config.js';

const gzipAsync = promisify(gzip);

const EMPTY_PROTOBUF_REQUEST = new Uint8Array(0);
const EMPTY_JSON_REQUEST = new TextEncoder().encode('{"resourceLogs":[]}');

/**
 * The headers OpenTelemetry JS resolved (config `headers`, OTEL_EXPORTER_OTLP_HEADERS): they
 * are the credentials, so they are the auth of the shared layer.
 */
class ResolvedHeadersAuth implements HttpAuth {
  private known: string[] = [];
  constructor(private readonly headers: () => Promise<Record<string, string>>) {}
  async getAuthHeaders(): Promise<Record<string, string>> {
    const h = await this.headers();
    this.known = headerSecrets(h);
    return h;
  }
  secrets(): readonly string[] {
    return this.known;
  }
}

export class OtlpDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly url: URL;
  private readonly gzip: boolean;
  private readonly transport: DestinationHttpTransport;

  constructor(config: OtlpDestinationConfig, settings: Partial<DestinationSettings> = {}) {
    this.name = config.name ?? 'otlp';
    const env = settings.env ?? process.env;
    const http = resolveHttpSettings(config, { log: settings.log ?? silentLogger() });
    const protocol = resolveProtocol(config.protocol, env);
    this.encoding = otlpEncodingSpec(config, env);
    const options = {
      ...(config.endpoint ? { url: logsUrl(config.endpoint) } : {}),
      ...(config.headers ? { headers: config.headers } : {}),
      ...(config.compression ? { compression: config.compression as never } : {}),
      ...(http.timeoutMs ? { timeoutMillis: http.timeoutMs } : {}),
    };
    const contentType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    // the SDK's resolution of options and OTEL_EXPORTER_OTLP_* variables
    const resolved = convertLegacyHttpOptions(options, 'LOGS', 'v1/logs', { 'Content-Type': contentType });
    this.url = new URL(resolved.url);
    this.gzip = resolved.compression === 'gzip';
    // (the configured headers reach the request through the SDK's resolution, as the auth)
    this.transport = new DestinationHttpTransport({ ...http, headers: {} }, settings.baseDir ?? process.cwd(), new ResolvedHeadersAuth(resolved.headers), resolved.timeoutMillis);
    this.transport.redactor.add(headerSecrets(config.headers ?? {}));
  }

  async send(payload: Uint8Array, _records?: number, signal?: AbortSignal): Promise<SendOutcome> {
    let body = payload;
    const headers: Record<string, string> = {};
    if (this.gzip) {
      body = await gzipAsync(payload);
      headers['Content-Encoding'] = 'gzip';
    }
    return this.transport.send({ url: this.url, body, headers, signal, detail: (res) => ({ detail: res.body }) });
  }

  /** An empty ExportLogsServiceRequest (no records): every OTLP receiver accepts it. */
  probe(signal?: AbortSignal): Promise<SendOutcome> {
    return this.send(this.encoding.kind === 'otlp-json' ? EMPTY_JSON_REQUEST : EMPTY_PROTOBUF_REQUEST, 0, signal);
  }

  async shutdown(): Promise<void> {
    this.transport.close();
  }
}
