/**
 * `type: datadog`: sends the encoder's JSON arrays to the Logs API v2 intake and classifies the
 * answer with the shared table (http-answers.ts): 202 accepted; 408, 429 (honouring
 * `Retry-After`) and 5xx retried; 401/403 (a wrong or revoked API key) held like an outage;
 * 400 and 413 blame the content (the pipeline splits the batch and dead-letters only the
 * entries at fault, with Datadog's error text). The API key never appears in a reason or response.
 */
import type { Destination, SendOutcome } from '../destination.js';
import type { EncodingSpec } from '../encodings.js';
import type { DestinationSettings } from '../destination-type.js';
import { secretFromEnv } from '../http/secret-from-env.js';
import { silentLogger } from '../../core/logger.js';
import type { DatadogDestinationConfig } from './config.js';
import { datadogEncodingSpec, DatadogRequestBuilder } from './request.js';

/** What the destination needs of the daemon's settings (all of them when the registry builds it). */
export type DatadogBuildContext = Pick<DestinationSettings, 'baseDir' | 'env'> & Partial<DestinationSettings>;

export class DatadogDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly request: DatadogRequestBuilder;

  constructor(config: DatadogDestinationConfig, ctx: DatadogBuildContext) {
    this.name = config.name ?? 'datadog';
    const apiKey = secretFromEnv(ctx.env, config.apiKeyEnv, `datadog destination ${this.name}: apiKeyEnv`);
    this.encoding = datadogEncodingSpec(config);
    this.request = new DatadogRequestBuilder(config, apiKey, { baseDir: ctx.baseDir, log: ctx.log ?? silentLogger() });
  }

  send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    return this.request.transport.send({ url: this.request.url, headers: this.request.logsHeaders(), body: payload, signal, detail: (res) => ({ detail: datadogError(res.body) }) });
  }

  async shutdown(): Promise<void> {
    this.request.transport.close();
  }
}

/** Datadog's error bodies: `{"errors":[{"status","title","detail"}]}` or `{"errors":["text"]}`. */
function datadogError(body: string): string {
  try {
    const v = JSON.parse(body) as { errors?: unknown[] };
    const first = v.errors?.[0];
    if (typeof first === 'string') return first;
    if (first && typeof first === 'object') {
      const e = first as { title?: string; detail?: string };
      return [e.title, e.detail].filter(Boolean).join(': ');
    }
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 200);
}
