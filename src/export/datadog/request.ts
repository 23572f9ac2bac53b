/**
 * Datadog request building: the intake URL, the headers (`DD-API-KEY`, `Content-Encoding`), the
 * shared HTTP transport. The encoding spec the encode workers get: encoding-spec.ts.
 */
import { StaticHeaderAuth } from '../../core/http/auth.js';
import { resolveHttpSettings } from '../http/settings.js';
import { DestinationHttpTransport } from '../http/destination-transport.js';
import type { DestinationSettings } from '../destination-type.js';
import { DATADOG_DEFAULT_TIMEOUT_MS, datadogLogsUrl, type DatadogDestinationConfig } from './config.js';
export { datadogEncodingSpec } from './encoding-spec.js';

export class DatadogRequestBuilder {
  readonly url: URL;
  readonly transport: DestinationHttpTransport;
  private readonly headers: Record<string, string>;

  constructor(config: DatadogDestinationConfig, apiKey: string, settings: Pick<DestinationSettings, 'baseDir' | 'log'>) {
    this.url = datadogLogsUrl(config);
    this.transport = new DestinationHttpTransport(resolveHttpSettings(config, settings), settings.baseDir, new StaticHeaderAuth({ 'DD-API-KEY': apiKey }, [apiKey]), DATADOG_DEFAULT_TIMEOUT_MS);
    this.headers = {
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
