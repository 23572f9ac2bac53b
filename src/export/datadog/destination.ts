/**
 * `type: datadog`: sends the encoder's JSON arrays to the Logs API v2 intake and classifies the
 * answer with the shared table (http-answers.ts): 202 accepted; 408, 429 (honouring
 * `Retry-After`) and 5xx retried; 401/403 (a wrong or revoked API key) held like an outage;
 * 400 and 413 blame the content (the pipeline splits the batch and dead-letters only the
 * entries at fault, with Datadog's error text). The API key never appears in a reason or response.
 */
import type { Destination, SendOutcome } from '../destination.js';
import { classifyHttpAnswer } from '../http-answers.js';
import type { EncodingSpec } from '../encodings.js';
import { redact, secretFromEnv, type HttpResponse } from '../http-client.js';
import type { DatadogDestinationConfig } from './config.js';
import { datadogEncodingSpec, DatadogRequestBuilder } from './request.js';

export interface DatadogBuildContext {
  baseDir: string;
  env: NodeJS.ProcessEnv;
}

export class DatadogDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly request: DatadogRequestBuilder;
  private readonly secrets: string[];

  constructor(config: DatadogDestinationConfig, ctx: DatadogBuildContext) {
    this.name = config.name ?? 'datadog';
    const apiKey = secretFromEnv(ctx.env, config.apiKeyEnv, `datadog destination ${this.name}: apiKeyEnv`);
    this.secrets = [apiKey];
    this.encoding = datadogEncodingSpec(config);
    this.request = new DatadogRequestBuilder(config, apiKey, ctx.baseDir);
  }

  async send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    let res: HttpResponse;
    try {
      res = await this.request.client.post(this.request.url, this.request.logsHeaders(), payload, signal);
    } catch (err) {
      return { kind: 'retry', reason: redact((err as Error).message, this.secrets) };
    }
    if (res.status >= 200 && res.status < 300) return { kind: 'done' };
    const detail = datadogError(res.body);
    return classifyHttpAnswer({
      status: res.status,
      ...(detail ? { detail: redact(detail, this.secrets) } : {}),
      retryAfter: res.headers['retry-after'],
      response: redact(res.body.slice(0, 2000), this.secrets),
      location: res.headers.location,
    });
  }

  async shutdown(): Promise<void> {
    this.request.client.close();
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
