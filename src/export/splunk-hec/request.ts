/**
 * Splunk HEC request building: the endpoint URLs, the headers (`Authorization: Splunk <token>`,
 * `Content-Encoding`, the request channel) and the shared HTTP transport. The encoding spec the
 * encode workers get: encoding-spec.ts.
 */
import { randomUUID } from 'node:crypto';
import { StaticHeaderAuth } from '../../core/http/auth.js';
import { resolveHttpSettings } from '../http/settings.js';
import { DestinationHttpTransport } from '../http/destination-transport.js';
import type { DestinationSettings } from '../destination-type.js';
import { HEC_DEFAULT_TIMEOUT_MS, hecAckUrl, hecEventUrl, type SplunkHecDestinationConfig } from './config.js';
export { hecEncodingSpec } from './encoding-spec.js';

export class HecRequestBuilder {
  readonly eventUrl: URL;
  readonly ackUrl: URL;
  /** Generated per destination: HEC ties acknowledgement ids to the channel. */
  readonly channel = randomUUID();
  readonly transport: DestinationHttpTransport;

  constructor(config: SplunkHecDestinationConfig, token: string, settings: Pick<DestinationSettings, 'baseDir' | 'log'>) {
    this.eventUrl = hecEventUrl(config.url);
    this.ackUrl = hecAckUrl(this.eventUrl);
    this.ackUrl.searchParams.set('channel', this.channel);
    this.transport = new DestinationHttpTransport(resolveHttpSettings(config, settings), settings.baseDir, new StaticHeaderAuth({ Authorization: `Splunk ${token}` }, [token]), HEC_DEFAULT_TIMEOUT_MS);
    this.gzip = config.compression === 'gzip';
  }

  private readonly gzip: boolean;

  private baseHeaders(): Record<string, string> {
    return {
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
