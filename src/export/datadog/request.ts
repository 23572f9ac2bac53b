/**
 * Datadog request building: the intake URL, the headers (`DD-API-KEY`, `Content-Encoding`), the
 * TLS-configured client, and the encoding spec the encode workers get (never the API key).
 */
import { HttpClient } from '../http-client.js';
import { datadogLogsUrl, type DatadogDestinationConfig } from './config.js';
import { DD_MAX_ENTRIES, DD_MAX_ENTRY_BYTES, DD_MAX_REQUEST_BYTES, type DatadogEncoding } from './encoder.js';

export function datadogEncodingSpec(config: DatadogDestinationConfig): DatadogEncoding {
  return {
    kind: 'datadog',
    service: config.service,
    ...(config.hostname !== undefined ? { hostname: config.hostname } : {}),
    tags: [...config.tags],
    maxEntries: DD_MAX_ENTRIES,
    maxRequestBytes: DD_MAX_REQUEST_BYTES,
    maxEntryBytes: DD_MAX_ENTRY_BYTES,
    compression: config.compression,
  };
}

export class DatadogRequestBuilder {
  readonly url: URL;
  readonly client: HttpClient;
  private readonly headers: Record<string, string>;

  constructor(config: DatadogDestinationConfig, apiKey: string, baseDir: string) {
    this.url = datadogLogsUrl(config);
    this.client = new HttpClient(config, baseDir, config.timeoutMs);
    this.headers = {
      'DD-API-KEY': apiKey,
      'Content-Type': 'application/json',
      'User-Agent': 'tableau-activity-otel',
      ...(config.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
    };
  }

  /** Headers of a logs POST (the body is already compressed by the encoder when gzip is on). */
  logsHeaders(): Record<string, string> {
    return this.headers;
  }
}
