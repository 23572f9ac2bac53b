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
import type { EncodingSpec } from '../encodings.js';
import type { DestinationSettings } from '../destination-type.js';
import { secretFromEnv } from '../http/secret-from-env.js';
import type { HttpResponse } from '../../core/http/client.js';
import type { AnswerDetail } from '../http/destination-transport.js';
import { silentLogger } from '../../core/logger.js';
import type { SplunkHecDestinationConfig } from './config.js';
import { hecEncodingSpec, HecRequestBuilder } from './request.js';

/** What the destination needs of the daemon's settings (all of them when the registry builds it). */
export type SplunkHecBuildContext = Pick<DestinationSettings, 'baseDir' | 'env'> & Partial<DestinationSettings>;

export class SplunkHecDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly request: HecRequestBuilder;
  private readonly acks: HecAckPoller | null;

  constructor(config: SplunkHecDestinationConfig, ctx: SplunkHecBuildContext) {
    this.name = config.name ?? 'splunk-hec';
    const token = secretFromEnv(ctx.env, config.tokenEnv, `splunk-hec destination ${this.name}: tokenEnv`);
    this.encoding = hecEncodingSpec(config);
    this.request = new HecRequestBuilder(config, token, { baseDir: ctx.baseDir, log: ctx.log ?? silentLogger() });
    this.acks = config.ack?.enabled ? new HecAckPoller(this.request, config.ack.pollInterval, config.ack.timeout) : null;
  }

  send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    return this.request.transport.send({
      url: this.request.eventUrl,
      headers: this.request.eventHeaders(),
      body: payload,
      signal,
      detail: hecDetail,
      interpret: async (res) => {
        if (res.status < 200 || res.status >= 300) return undefined;
        const reply = parseHecReply(res.body);
        if (!this.acks || typeof reply?.ackId !== 'number') return { kind: 'done' };
        const acked = await this.acks.wait(reply.ackId, signal);
        if (acked === 'acked') return { kind: 'done' };
        return { kind: 'retry', reason: acked === 'aborted' ? 'aborted while waiting for the indexer acknowledgement' : acked };
      },
    });
  }

  /**
   * An empty POST to the event endpoint: HEC answers `400 {"text":"No data","code":5}` once the
   * token is accepted (401/403 when it is not), so nothing is indexed.
   */
  probe(signal: AbortSignal): Promise<SendOutcome> {
    return this.request.transport.send({
      url: this.request.eventUrl,
      headers: this.request.plainHeaders(),
      body: new Uint8Array(0),
      signal,
      detail: hecDetail,
      interpret: (res) => (res.status === 400 && parseHecReply(res.body)?.code === 5 ? { kind: 'done' } : undefined),
    });
  }

  async shutdown(): Promise<void> {
    this.acks?.close();
    this.request.transport.close();
  }
}

/** HEC's `text` and `code` for the reason; the code also decides a 400 (http-answers.ts). */
function hecDetail(res: HttpResponse): AnswerDetail {
  const reply = parseHecReply(res.body);
  const detail = reply?.text !== undefined ? `${reply.text}${reply.code !== undefined ? ` (HEC code ${reply.code})` : ''}` : '';
  return { ...(detail ? { detail } : {}), ...(typeof reply?.code === 'number' ? { hecCode: reply.code } : {}) };
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
      const res = await this.request.transport.post({ url: this.request.ackUrl, headers: this.request.plainHeaders(), body: Buffer.from(JSON.stringify({ acks: ids })) });
      if (res.status === 200) {
        const acks = (parseHecReply(res.body) as { acks?: Record<string, boolean> } | undefined)?.acks ?? {};
        for (const id of ids) if (acks[String(id)] === true) this.pending.get(id)?.done('acked');
        this.lastProblem = '';
      } else {
        const reply = parseHecReply(res.body);
        this.lastProblem = this.request.transport.redactor.excerpt(`ack poll answered HTTP ${res.status}${reply?.text ? `: ${reply.text}` : ''}`);
      }
    } catch (err) {
      this.lastProblem = this.request.transport.redactor.redact(`ack poll failed: ${(err as Error).message}`);
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
