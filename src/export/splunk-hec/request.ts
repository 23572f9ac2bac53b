/**
 * Splunk HEC request building: the endpoint URLs, the headers (`Authorization: Splunk <token>`,
 * `Content-Encoding`, the request channel), the TLS-configured client, and the encoding spec the
 * encode workers get (every option the encoder needs, never the token).
 */
import { randomUUID } from 'node:crypto';
import { HttpClient } from '../http-client.js';
import { hecAckUrl, hecEventUrl, type SplunkHecDestinationConfig } from './config.js';
import type { SplunkHecEncoding } from './encoder.js';

export function hecEncodingSpec(config: SplunkHecDestinationConfig): SplunkHecEncoding {
  // fixed key order: destinations with the same options share one encoding (see encodingKey)
  return {
    kind: 'splunk-hec',
    sourcetype: config.sourcetype,
    ...(config.index !== undefined ? { index: config.index } : {}),
    ...(config.source !== undefined ? { source: config.source } : {}),
    ...(config.host !== undefined ? { host: config.host } : {}),
    fields: [...config.fields],
    maxRequestBytes: config.maxRequestBytes,
    compression: config.compression,
  };
}

export class HecRequestBuilder {
  readonly eventUrl: URL;
  readonly ackUrl: URL;
  /** Generated per destination: HEC ties acknowledgement ids to the channel. */
  readonly channel = randomUUID();
  readonly client: HttpClient;

  constructor(
    config: SplunkHecDestinationConfig,
    private readonly token: string,
    baseDir: string,
  ) {
    this.eventUrl = hecEventUrl(config.url);
    this.ackUrl = hecAckUrl(this.eventUrl);
    this.ackUrl.searchParams.set('channel', this.channel);
    this.client = new HttpClient(config, baseDir, config.timeoutMs);
    this.gzip = config.compression === 'gzip';
  }

  private readonly gzip: boolean;

  private baseHeaders(): Record<string, string> {
    return {
      Authorization: `Splunk ${this.token}`,
      'Content-Type': 'application/json',
      'X-Splunk-Request-Channel': this.channel,
      'User-Agent': 'tableau-activity-otel',
    };
  }

  /** Headers of an event POST (the body is already compressed by the encoder when gzip is on). */
  eventHeaders(): Record<string, string> {
    return this.gzip ? { ...this.baseHeaders(), 'Content-Encoding': 'gzip' } : this.baseHeaders();
  }

  /** Headers of an uncompressed request (acknowledgement polls, the probe). */
  plainHeaders(): Record<string, string> {
    return this.baseHeaders();
  }
}
