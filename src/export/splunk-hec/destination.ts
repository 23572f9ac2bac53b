/**
 * `type: splunk-hec`: sends the encoder's bodies to `/services/collector/event` and classifies
 * the answer, HEC's body `code` included, with the shared table (http-answers.ts): 429/503/5xx
 * retried, honouring `Retry-After`; 401/403 (token invalid or disabled) and a 400 that blames
 * our configuration (wrong index, channel) held like an outage; a 400 that blames the events
 * (invalid format, blank event) or a 413 splits the batch to dead-letter only the events at
 * fault. HEC's `{"text","code"}` is kept in the reason. With
 * indexer acknowledgement on, a body counts as delivered only once `/services/collector/ack`
 * says its ackId is indexed; an ack that does not come within `ack.timeout` makes it a retry.
 * The token never appears in a reason or response (they are redacted as a second guard).
 */
import type { Destination, SendOutcome } from '../destination.js';
import { classifyHttpAnswer } from '../http-answers.js';
import type { EncodingSpec } from '../encodings.js';
import { redact, secretFromEnv, type HttpResponse } from '../http-client.js';
import type { SplunkHecDestinationConfig } from './config.js';
import { hecEncodingSpec, HecRequestBuilder } from './request.js';

export interface SplunkHecBuildContext {
  baseDir: string;
  env: NodeJS.ProcessEnv;
}

export class SplunkHecDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly request: HecRequestBuilder;
  private readonly secrets: string[];
  private readonly acks: HecAckPoller | null;

  constructor(config: SplunkHecDestinationConfig, ctx: SplunkHecBuildContext) {
    this.name = config.name ?? 'splunk-hec';
    const token = secretFromEnv(ctx.env, config.tokenEnv, `splunk-hec destination ${this.name}: tokenEnv`);
    this.secrets = [token];
    this.encoding = hecEncodingSpec(config);
    this.request = new HecRequestBuilder(config, token, ctx.baseDir);
    this.acks = config.ack?.enabled ? new HecAckPoller(this.request, config.ack.pollInterval, config.ack.timeout, this.secrets) : null;
  }

  async send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    let res: HttpResponse;
    try {
      res = await this.request.client.post(this.request.eventUrl, this.request.eventHeaders(), payload, signal);
    } catch (err) {
      return { kind: 'retry', reason: redact((err as Error).message, this.secrets) };
    }
    const reply = parseHecReply(res.body);
    if (res.status >= 200 && res.status < 300) {
      if (!this.acks || typeof reply?.ackId !== 'number') return { kind: 'done' };
      const acked = await this.acks.wait(reply.ackId, signal);
      if (acked === 'acked') return { kind: 'done' };
      return { kind: 'retry', reason: acked === 'aborted' ? 'aborted while waiting for the indexer acknowledgement' : acked };
    }
    return this.classify(res, reply);
  }

  /**
   * An empty POST to the event endpoint: HEC answers `400 {"text":"No data","code":5}` once the
   * token is accepted (401/403 when it is not), so nothing is indexed.
   */
  async probe(signal: AbortSignal): Promise<SendOutcome> {
    let res: HttpResponse;
    try {
      res = await this.request.client.post(this.request.eventUrl, this.request.plainHeaders(), new Uint8Array(0), signal);
    } catch (err) {
      return { kind: 'retry', reason: redact((err as Error).message, this.secrets) };
    }
    const reply = parseHecReply(res.body);
    if ((res.status === 400 && reply?.code === 5) || (res.status >= 200 && res.status < 300)) return { kind: 'done' };
    return this.classify(res, reply);
  }

  /** A non-2xx answer → retry or rejection, with HEC's `text` and `code` in the reason. */
  private classify(res: HttpResponse, reply: HecReply | undefined): SendOutcome {
    const detail = reply?.text !== undefined ? `${reply.text}${reply.code !== undefined ? ` (HEC code ${reply.code})` : ''}` : '';
    return classifyHttpAnswer({
      status: res.status,
      ...(detail ? { detail: redact(detail, this.secrets) } : {}),
      retryAfter: headerValue(res.headers['retry-after']),
      response: redact(res.body.slice(0, 2000), this.secrets),
      location: res.headers.location,
      ...(typeof reply?.code === 'number' ? { hecCode: reply.code } : {}),
    });
  }

  async shutdown(): Promise<void> {
    this.acks?.close();
    this.request.client.close();
  }
}

interface HecReply {
  text?: string;
  code?: number;
  ackId?: number;
}

function parseHecReply(body: string): HecReply | undefined {
  try {
    const v = JSON.parse(body) as unknown;
    return typeof v === 'object' && v !== null ? (v as HecReply) : undefined;
  } catch {
    return undefined;
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

type AckResult = 'acked' | 'aborted' | string;

/**
 * Polls `/services/collector/ack` for every ackId in flight on this destination's channel, all
 * in one request per interval; each waiter learns whether its id was acknowledged, timed out
 * (a reason string) or was aborted.
 */
class HecAckPoller {
  private readonly pending = new Map<number, { deadline: number; done: (r: AckResult) => void }>();
  private timer: NodeJS.Timeout | null = null;
  private lastProblem = '';
  private closed = false;

  constructor(
    private readonly request: HecRequestBuilder,
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    private readonly secrets: string[],
  ) {}

  wait(ackId: number, signal: AbortSignal): Promise<AckResult> {
    return new Promise<AckResult>((resolve) => {
      const onAbort = (): void => finish('aborted');
      const finish = (r: AckResult): void => {
        if (this.pending.get(ackId)?.done !== finish) return;
        this.pending.delete(ackId);
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      this.pending.set(ackId, { deadline: Date.now() + this.timeoutMs, done: finish });
      if (signal.aborted) return finish('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.timer || this.closed || this.pending.size === 0) return;
    this.timer = setTimeout(() => void this.poll(), this.intervalMs);
  }

  private async poll(): Promise<void> {
    const ids = [...this.pending.keys()];
    try {
      const res = await this.request.client.post(this.request.ackUrl, this.request.plainHeaders(), Buffer.from(JSON.stringify({ acks: ids })));
      if (res.status === 200) {
        const acks = (parseHecReply(res.body) as { acks?: Record<string, boolean> } | undefined)?.acks ?? {};
        for (const id of ids) if (acks[String(id)] === true) this.pending.get(id)?.done('acked');
        this.lastProblem = '';
      } else {
        const reply = parseHecReply(res.body);
        this.lastProblem = redact(`ack poll answered HTTP ${res.status}${reply?.text ? `: ${reply.text}` : ''}`, this.secrets);
      }
    } catch (err) {
      this.lastProblem = redact(`ack poll failed: ${(err as Error).message}`, this.secrets);
    }
    const now = Date.now();
    for (const [id, p] of this.pending) {
      if (p.deadline <= now) p.done(`indexer acknowledgement of ackId ${id} not received within ${this.timeoutMs} ms${this.lastProblem ? ` (${this.lastProblem})` : ''}`);
    }
    this.timer = null;
    this.schedule();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const p of this.pending.values()) p.done('aborted');
  }
}
