/**
 * `type: s3-sqs`: S3 event notifications on an SQS queue name the objects to read. Every replica
 * of the daemon consumes the same queue (competing consumers): a message is handed to one of
 * them at a time, so the replicas share the work without talking to each other.
 *
 * A message's life:
 *   1. ReceiveMessage (long polling) with the source's `visibilityTimeout`: the message is now
 *      invisible to the other replicas. Its body is an S3 notification (direct, SNS-wrapped or
 *      an EventBridge event, see s3-notifications.ts), naming one or more objects.
 *   2. While any of its objects is waiting or being read, its visibility is extended
 *      (ChangeMessageVisibility) every half timeout: a large object is not handed to another
 *      replica halfway.
 *   3. Once every record of every object of the message was accepted by every destination (the
 *      pipeline calls `objectFinished`), the message is deleted.
 *   4. When a read fails, extension stops and the message becomes visible again when its
 *      timeout runs out (on shutdown, at once); after the queue's `maxReceiveCount` receives the
 *      queue's redrive policy moves it to the dead-letter queue. A replica that dies (kill -9)
 *      stops extending too: another replica receives the message after the timeout and reads
 *      the object from the start. Duplicates are possible, loss is not; the records carry the
 *      same `log.record.uid` (the identity is the `s3` source's: `s3://bucket/key?etag=…`).
 *   `s3:TestEvent` and events other than object creation are deleted; bodies that are none of
 *   the known shapes are logged and left alone (they end in the dead-letter queue).
 *
 * State: the checkpoint's `objects` holds an entry only while its object is in progress here
 * (for a resume after a restart, when the same replica receives the message again, and to
 * delete at once the message of an object already delivered). An entry is removed when its
 * message is deleted, and entries this replica lost track of are pruned after `STALE_MS`.
 */
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { SQSClient, ReceiveMessageCommand, DeleteMessageCommand, ChangeMessageVisibilityCommand, GetQueueAttributesCommand, type Message } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import type { Source, SourceObject } from '../source.js';
import type { SourceContext } from '../source-descriptor.js';
import type { SourceCheckpoint } from '../source-checkpoint.js';
import type { SourceMetrics } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { parseObjectKey } from '../../decoding/object-key.js';
import { createS3Client, isAccessError, isCredentialError, isKmsError, s3ErrorInfo, S3_REQUEST_SETTINGS, type S3ErrorInfo } from '../s3-common/s3-client.js';
import { readS3Object, s3ObjectError, type S3ObjectReaderOptions } from '../s3-common/s3-object-reader.js';
import { Backoff, BACKOFF_DEFAULTS } from '../../core/backoff.js';
import { sleep } from '../../core/sleep.js';
import { hourToMs, normalizedPrefix } from '../s3-common/s3-partitions.js';
import { normalizeEtag, parseNotification, type NotifiedObject } from './s3-notifications.js';

export { s3SqsSourceConfigSchema, type S3SqsSourceConfig } from './config.js';
import { s3SqsSourceId, type S3SqsSourceConfig } from './config.js';

/** What the source takes of the settings (source-descriptor.ts): it resolves no paths. */
export type S3SqsSourceContext = Pick<SourceContext, 'metrics' | 'log' | 'env'>;

export interface S3SqsSourceOptions {
  /** First pause before resuming an interrupted body (default: BACKOFF_DEFAULTS.objectResume, 500 ms doubling). */
  resumeDelayMs?: number;
  now?: () => number;
}

/** Wait of a receive while messages keep coming (and of the first one): `run --once` ends after one that finds nothing. */
const SHORT_WAIT_SECONDS = 1;
/** Checkpoint entries of objects this replica no longer holds a message for are forgotten after this long. */
const STALE_MS = 6 * 3_600_000;
const RECEIVED = 'received:';

interface HeldMessage {
  id: string;
  receiptHandle: string;
  receiveCount: number;
  /** Objects of this message not finished yet. */
  waiting: Set<HeldObject>;
  /** Every object of this message (for the cleanup once it is deleted). */
  objects: HeldObject[];
  extendedAt: number;
  extending: boolean;
  /** Its visibility ran out while held (another replica may read it too). */
  lost: boolean;
}

interface HeldObject {
  identity: string;
  key: string;
  etag: string;
  finished: boolean;
  messages: Set<HeldMessage>;
}

export class S3SqsSource implements Source {
  readonly type = 's3-sqs';
  readonly id: string;
  readonly readConcurrency: number;
  hasMore = false;
  private readonly queueUrl: string;
  private readonly s3: S3Client;
  private readonly sqs: SQSClient;
  private readonly secrets: string[];
  private readonly reader: S3ObjectReaderOptions;
  private readonly log: Logger;
  private readonly metrics: SourceMetrics;
  private readonly now: () => number;
  private readonly visibilitySeconds: number;
  private readonly prefix: string;
  /** Messages received and not yet deleted or given up, by message id. */
  private readonly held = new Map<string, HeldMessage>();
  /** Objects in progress, by identity (two messages naming the same object version share it). */
  private readonly inProgress = new Map<string, HeldObject>();
  private readonly ofSource = new WeakMap<SourceObject, HeldObject>();
  /** Deletes and visibility changes in flight (awaited on close). */
  private readonly calls = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private checkpoint: SourceCheckpoint | null = null;
  private queueChecked = false;
  /** The last pending() found nothing: the next one long-polls. */
  private idle = false;
  /** Failed polls in a row: the wait before the next poll grows (BACKOFF_DEFAULTS.source). */
  private readonly pollBackoff = new Backoff(BACKOFF_DEFAULTS.source);
  private pollDelayMs = 0;
  /** Polls in a row that found a read failed (messages abandoned): the pause before taking more work grows. */
  private readonly abandonBackoff = new Backoff(BACKOFF_DEFAULTS.source);
  private newestOpened = 0;
  private closed = false;

  constructor(private readonly config: S3SqsSourceConfig, ctx: S3SqsSourceContext, options: S3SqsSourceOptions = {}) {
    this.queueUrl = config.queueUrl;
    this.id = s3SqsSourceId(config);
    this.readConcurrency = config.concurrency;
    this.prefix = normalizedPrefix(config.prefix);
    this.log = ctx.log.child({ source: this.id });
    this.metrics = ctx.metrics;
    this.now = options.now ?? Date.now;
    this.visibilitySeconds = Math.ceil(config.visibilityTimeout / 1000);
    const built = createS3Client({ ...config, bucket: config.bucket ?? '', endpoint: config.s3Endpoint }, ctx.env);
    this.s3 = built.client;
    this.secrets = built.secrets;
    this.reader = {
      client: this.s3,
      secrets: this.secrets,
      metrics: this.metrics,
      log: this.log,
      ...(options.resumeDelayMs !== undefined ? { resumeDelayMs: options.resumeDelayMs } : {}),
      skipped: {
        deleted: 'object deleted since its notification: skipped',
        replaced: 'object replaced since its notification: skipped (its new version has a notification of its own)',
      },
    };
    this.sqs = new SQSClient({
      region: config.region,
      // the queue URL names its endpoint (what the SDK would use anyway, without warning about it on every call)
      endpoint: config.endpoint ?? new URL(config.queueUrl).origin,
      // the same credentials as the S3 client (one provider, refreshed once)
      credentials: this.s3.config.credentials as AwsCredentialIdentityProvider,
      maxAttempts: S3_REQUEST_SETTINGS.maxAttempts,
      retryMode: 'standard',
      requestHandler: new NodeHttpHandler({
        connectionTimeout: S3_REQUEST_SETTINGS.connectionTimeoutMs,
        // longer than the longest long poll
        requestTimeout: 20_000 + S3_REQUEST_SETTINGS.requestTimeoutMs,
        throwOnRequestTimeout: true,
        httpAgent: { keepAlive: true, maxSockets: 20 },
        httpsAgent: { keepAlive: true, maxSockets: 20 },
      }),
    });
  }

  /** 0 (the receive itself waits); after failed polls a backoff, so an unreachable queue is not hammered. */
  get pollIntervalMs(): number {
    return this.pollDelayMs;
  }

  async pending(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    this.checkpoint = checkpoint;
    try {
      const out = await this.poll(checkpoint, signal);
      this.pollBackoff.reset();
      this.pollDelayMs = 0;
      this.hasMore = out.length > 0;
      this.idle = out.length === 0;
      return out;
    } catch (err) {
      this.hasMore = false;
      if (signal.aborted) return [];
      this.pollDelayMs = this.pollBackoff.next();
      throw err;
    }
  }

  private async poll(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    if (!this.queueChecked) await this.checkQueue(signal);
    const abandoned = this.settleHeld(checkpoint);
    this.prune(checkpoint);
    // a read failed: pause before taking more work (growing while it keeps failing)
    if (abandoned > 0) await sleep(this.abandonBackoff.next(), signal);
    else this.abandonBackoff.reset();
    this.startHeartbeat();

    const out: SourceObject[] = [];
    let wait = this.idle ? Math.round(this.config.waitTime / 1000) : SHORT_WAIT_SECONDS;
    while (out.length < this.config.concurrency && !signal.aborted) {
      const max = Math.max(1, Math.min(this.config.maxMessages, this.config.concurrency - out.length));
      let messages: Message[];
      try {
        messages = await this.receive(max, wait, signal);
      } catch (err) {
        if (signal.aborted || out.length > 0) {
          if (!signal.aborted) this.log.warn({ err: (err as Error).message }, 'receive failed; reading what was received');
          break;
        }
        throw err;
      }
      if (messages.length === 0) break;
      for (const m of messages) out.push(...(await this.accept(m, checkpoint, signal)));
      // more only if it is there now; while nothing to read came yet, wait a little for it
      wait = out.length > 0 ? 0 : SHORT_WAIT_SECONDS;
    }
    return out;
  }

  async objectFinished(obj: SourceObject): Promise<void> {
    const held = this.ofSource.get(obj);
    if (!held || this.closed) return;
    this.finish(held);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // objects whose last acknowledgement came just before the stop: their messages are deleted
    if (this.checkpoint) this.settleHeld(this.checkpoint, false);
    this.closed = true;
    this.stopHeartbeat();
    // the rest: visible again now, for another replica (or the next run)
    for (const m of [...this.held.values()]) {
      this.held.delete(m.id);
      if (m.waiting.size > 0 && !m.lost) this.track(this.changeVisibility(m, 0).catch(() => undefined));
    }
    await Promise.race([Promise.allSettled([...this.calls]), new Promise((r) => setTimeout(r, 10_000).unref())]);
    this.sqs.destroy();
    this.s3.destroy();
  }

  // -------------------------------------------------------------------------
  // receiving
  // -------------------------------------------------------------------------

  private async checkQueue(signal: AbortSignal): Promise<void> {
    this.metrics.request('GetQueueAttributes');
    try {
      const res = await this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: this.queueUrl, AttributeNames: ['RedrivePolicy', 'VisibilityTimeout'] }), { abortSignal: signal });
      const redrive = res.Attributes?.RedrivePolicy;
      if (!redrive) {
        this.log.warn(
          { queue: this.queueUrl },
          'the queue has no redrive policy: a message whose object can never be read is received again and again forever; give the queue a dead-letter queue (RedrivePolicy with maxReceiveCount)',
        );
      } else {
        let policy: { deadLetterTargetArn?: string; maxReceiveCount?: number | string } = {};
        try {
          policy = JSON.parse(redrive) as typeof policy;
        } catch {
          /* reported as is */
        }
        this.log.info({ queue: this.queueUrl, deadLetterQueue: policy.deadLetterTargetArn, maxReceiveCount: Number(policy.maxReceiveCount) }, 'consuming S3 notifications');
      }
      this.queueChecked = true;
    } catch (err) {
      if (signal.aborted) throw err;
      const info = s3ErrorInfo(err, this.secrets);
      if (isAccessError(info) && !isCredentialError(info)) {
        this.log.warn({ queue: this.queueUrl, err: `${info.code}: ${info.message}` }, 'cannot check the queue for a redrive policy (the reader needs sqs:GetQueueAttributes); going on');
        this.queueChecked = true;
        return;
      }
      throw sqsError(info, 'reading the attributes of', this.queueUrl, 'sqs:GetQueueAttributes');
    }
  }

  private async receive(max: number, waitSeconds: number, signal: AbortSignal): Promise<Message[]> {
    this.metrics.request('ReceiveMessage');
    try {
      const res = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: this.visibilitySeconds,
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
        }),
        { abortSignal: signal },
      );
      return res.Messages ?? [];
    } catch (err) {
      if (signal.aborted) throw err;
      throw sqsError(s3ErrorInfo(err, this.secrets), 'receiving from', this.queueUrl, 'sqs:ReceiveMessage');
    }
  }

  /** One received message: the objects to read now (none for a test event, an unknown body, objects already delivered). */
  private async accept(m: Message, checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    const id = m.MessageId ?? '';
    const receiptHandle = m.ReceiptHandle ?? '';
    const receiveCount = Number(m.Attributes?.ApproximateReceiveCount ?? 1);
    const known = this.held.get(id);
    if (known) {
      // received again while held (its visibility ran out): the newest receipt handle is the one that deletes it
      known.receiptHandle = receiptHandle;
      known.extendedAt = this.now();
      known.lost = false;
      return [];
    }
    const parsed = parseNotification(m.Body ?? '');
    if (parsed.kind === 'test') {
      this.log.info({ messageId: id, via: parsed.via }, 's3:TestEvent received: deleted');
      this.track(this.deleteMessage(id, receiptHandle));
      return [];
    }
    if (parsed.kind === 'invalid') {
      this.invalid(id, receiveCount, parsed.reason, m.Body ?? '');
      return [];
    }
    const wanted: NotifiedObject[] = [];
    for (const o of parsed.objects) {
      if (this.config.bucket && o.bucket !== this.config.bucket) {
        this.invalid(id, receiveCount, `names bucket ${o.bucket}, but this source reads bucket ${this.config.bucket}`, m.Body ?? '');
        return [];
      }
      if (this.prefix && !o.key.startsWith(this.prefix)) {
        this.log.debug({ messageId: id, object: o.key }, 'object outside the prefix: skipped');
        continue;
      }
      wanted.push(o);
    }
    if (parsed.ignored.length > 0) this.log.debug({ messageId: id, events: parsed.ignored }, 'events other than object creation: ignored');

    // every object gets its ETag first (a notification may lack one): nothing is registered unless all are known
    const resolved: Array<{ o: NotifiedObject; etag: string; size: number | undefined }> = [];
    try {
      for (const o of wanted) {
        if (o.etag) {
          resolved.push({ o, etag: o.etag, size: o.size });
          continue;
        }
        const head = await this.head(o, signal);
        if (head) resolved.push({ o, etag: head.etag, size: head.size ?? o.size });
      }
    } catch (err) {
      if (signal.aborted) return [];
      this.log.warn({ messageId: id, err: (err as Error).message }, 'cannot look up an object of the message: left on the queue, it is received again after the visibility timeout');
      return [];
    }

    const msg: HeldMessage = { id, receiptHandle, receiveCount, waiting: new Set(), objects: [], extendedAt: this.now(), extending: false, lost: false };
    const out: SourceObject[] = [];
    const position = (checkpoint.position ??= {});
    for (const { o, etag, size } of resolved) {
      const identity = `s3://${o.bucket}/${o.key}?etag=${etag}`;
      let held = this.inProgress.get(identity);
      if (held) {
        // the same object version named again (S3 may notify twice): read once, both messages wait for it
        held.messages.add(msg);
        msg.objects.push(held);
        if (!held.finished) msg.waiting.add(held);
        continue;
      }
      const progress = checkpoint.objects[o.key];
      const same = progress !== undefined && progress.version === etag;
      if (same && progress.done) {
        this.log.debug({ messageId: id, object: o.key }, 'object already delivered by this replica: its message is deleted');
        continue;
      }
      held = { identity, key: o.key, etag, finished: false, messages: new Set([msg]) };
      this.inProgress.set(identity, held);
      msg.objects.push(held);
      msg.waiting.add(held);
      position[RECEIVED + o.key] = this.now();
      const obj = this.sourceObject(o, identity, etag, size, same ? progress.line : 0);
      this.ofSource.set(obj, held);
      out.push(obj);
    }
    if (msg.waiting.size === 0) {
      this.track(this.deleteMessage(id, receiptHandle));
      this.cleanup(msg);
      return [];
    }
    this.held.set(id, msg);
    if (receiveCount > 1) this.log.info({ messageId: id, receiveCount, objects: out.map((o) => o.key) }, 'message received again (an earlier attempt did not finish): its objects are read');
    return out;
  }

  private invalid(id: string, receiveCount: number, reason: string, body: string): void {
    this.log.warn(
      { messageId: id, receiveCount, reason, body: body.length > 300 ? `${body.slice(0, 300)}…` : body },
      'message is not an S3 notification this source understands: left on the queue (after maxReceiveCount receives the queue moves it to its dead-letter queue)',
    );
  }

  /** The ETag (and size) of an object whose notification lacks one; undefined when the object is gone. */
  private async head(o: NotifiedObject, signal: AbortSignal): Promise<{ etag: string; size?: number } | undefined> {
    this.metrics.request('HeadObject');
    try {
      const res = await this.s3.send(new HeadObjectCommand({ Bucket: o.bucket, Key: o.key }), { abortSignal: signal });
      const etag = normalizeEtag(res.ETag);
      if (!etag) throw new Error(`s3://${o.bucket}/${o.key} has no ETag`);
      return { etag, ...(res.ContentLength !== undefined ? { size: res.ContentLength } : {}) };
    } catch (err) {
      if (signal.aborted) throw err;
      const info = s3ErrorInfo(err, this.secrets);
      if (info.code === 'NotFound' || info.code === 'NoSuchKey' || (info.status === 404 && info.code !== 'NoSuchBucket')) {
        this.log.warn({ object: o.key }, 'object deleted since its notification: skipped');
        return undefined;
      }
      throw s3ObjectError(o.bucket, o.key, info);
    }
  }

  private sourceObject(o: NotifiedObject, identity: string, etag: string, size: number | undefined, resumeAfterLine: number): SourceObject {
    return {
      key: o.key,
      identity,
      ...(size !== undefined ? { size } : {}),
      version: etag,
      resumeAfterLine,
      open: (signal) => {
        const hour = parseObjectKey(o.key).partitionHour;
        const ms = hour ? hourToMs(hour) : NaN;
        if (ms > this.newestOpened) {
          this.newestOpened = ms;
          this.metrics.newestPartition(ms / 1000);
        }
        return readS3Object(this.reader, { bucket: o.bucket, key: o.key, etag, size }, signal);
      },
    };
  }

  // -------------------------------------------------------------------------
  // finishing, giving up, state
  // -------------------------------------------------------------------------

  /** Every record of the object was accepted: messages that wait for nothing else are deleted. */
  private finish(held: HeldObject): void {
    if (held.finished) return;
    held.finished = true;
    for (const msg of held.messages) {
      msg.waiting.delete(held);
      if (msg.waiting.size === 0 && this.held.get(msg.id) === msg) {
        this.held.delete(msg.id);
        this.track(this.deleteMessage(msg.id, msg.receiptHandle).then(() => this.cleanup(msg)));
      }
    }
  }

  /**
   * Before each receive (the previous batch was read and acknowledged, or its reading stopped):
   * objects acknowledged whose `objectFinished` has not come yet are finished; objects that were
   * not (a read failed) are given up: their messages are no longer extended and become visible
   * again when their timeout runs out. Returns how many were given up.
   */
  private settleHeld(checkpoint: SourceCheckpoint, giveUp = true): number {
    let abandoned = 0;
    for (const held of [...this.inProgress.values()]) {
      if (held.finished) continue;
      const p = checkpoint.objects[held.key];
      if (p?.done && p.version === held.etag) this.finish(held);
    }
    if (!giveUp) return 0;
    for (const msg of [...this.held.values()]) {
      if (msg.waiting.size === 0) continue;
      abandoned += msg.waiting.size;
      this.held.delete(msg.id);
      this.log.warn(
        { messageId: msg.id, objects: [...msg.waiting].map((h) => h.key), receiveCount: msg.receiveCount },
        'objects of a message were not finished: the message is visible again after its timeout (after maxReceiveCount receives it goes to the dead-letter queue)',
      );
      for (const h of msg.objects) {
        h.messages.delete(msg);
        if (h.messages.size === 0) this.inProgress.delete(h.identity);
      }
    }
    return abandoned;
  }

  /** The message is deleted: forget its objects (unless another message still waits for one). */
  private cleanup(msg: HeldMessage): void {
    for (const h of msg.objects) {
      h.messages.delete(msg);
      if (h.messages.size > 0) continue;
      if (this.inProgress.get(h.identity) === h) this.inProgress.delete(h.identity);
      const cp = this.checkpoint;
      if (!cp) continue;
      const p = cp.objects[h.key];
      if (p && (p.version === undefined || p.version === h.etag) && !this.keyInProgress(h.key)) {
        delete cp.objects[h.key];
        if (cp.position) delete cp.position[RECEIVED + h.key];
      }
    }
  }

  private keyInProgress(key: string): boolean {
    for (const h of this.inProgress.values()) if (h.key === key) return true;
    return false;
  }

  /** Bounded state: entries of objects no message here waits for are dropped (delivered ones at once, others after STALE_MS). */
  private prune(checkpoint: SourceCheckpoint): void {
    const position = (checkpoint.position ??= {});
    const now = this.now();
    for (const [key, p] of Object.entries(checkpoint.objects)) {
      if (this.keyInProgress(key)) continue;
      const received = position[RECEIVED + key];
      if (p.done || typeof received !== 'number' || now - received > STALE_MS) {
        delete checkpoint.objects[key];
        delete position[RECEIVED + key];
      }
    }
    for (const k of Object.keys(position)) if (k.startsWith(RECEIVED) && !(k.slice(RECEIVED.length) in checkpoint.objects)) delete position[k];
  }

  // -------------------------------------------------------------------------
  // SQS calls on held messages
  // -------------------------------------------------------------------------

  private startHeartbeat(): void {
    if (this.timer || this.closed) return;
    const tick = Math.max(200, Math.floor((this.visibilitySeconds * 1000) / 6));
    this.timer = setInterval(() => this.heartbeat(), tick);
    this.timer.unref();
  }

  private stopHeartbeat(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Extends the visibility of every held message half a timeout after its last extension. */
  private heartbeat(): void {
    const now = this.now();
    const due = (this.visibilitySeconds * 1000) / 2;
    for (const msg of this.held.values()) {
      if (msg.extending || msg.lost || now - msg.extendedAt < due) continue;
      msg.extending = true;
      const sentAt = now;
      this.track(
        this.changeVisibility(msg, this.visibilitySeconds)
          .then(() => {
            msg.extendedAt = sentAt;
          })
          .catch((err: unknown) => {
            const info = s3ErrorInfo(err, this.secrets);
            if (/ReceiptHandleIsInvalid|MessageNotInflight/.test(info.code)) {
              msg.lost = true;
              this.log.warn(
                { messageId: msg.id, err: info.code },
                'the message became visible before its visibility could be extended: another replica may read its objects too (duplicates, same log.record.uid)',
              );
            } else {
              this.log.warn({ messageId: msg.id, err: `${info.code}: ${info.message}` }, 'cannot extend the visibility of a message; trying again');
            }
          })
          .finally(() => {
            msg.extending = false;
          }),
      );
    }
  }

  private async changeVisibility(msg: HeldMessage, seconds: number): Promise<void> {
    this.metrics.request('ChangeMessageVisibility');
    await this.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: msg.receiptHandle, VisibilityTimeout: seconds }));
  }

  private async deleteMessage(id: string, receiptHandle: string): Promise<void> {
    this.metrics.request('DeleteMessage');
    try {
      await this.sqs.send(new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle }));
      this.log.debug({ messageId: id }, 'message deleted');
    } catch (err) {
      const info = s3ErrorInfo(err, this.secrets);
      this.log.error(
        { messageId: id, err: `${info.code}: ${info.message}` },
        `cannot delete the message${isAccessError(info) ? ' (the reader needs sqs:DeleteMessage)' : ''}: it is received again and its objects read again (duplicates, same log.record.uid)`,
      );
    }
  }

  private track(p: Promise<unknown>): void {
    this.calls.add(p);
    void p.finally(() => this.calls.delete(p));
  }
}

/** An SQS failure as an error naming the queue and the permission it needs. */
function sqsError(info: S3ErrorInfo, doing: string, queueUrl: string, permission: string): Error {
  let text: string;
  if (/NonExistentQueue|QueueDoesNotExist/.test(info.code)) {
    text = `SQS queue ${queueUrl} does not exist (check queueUrl and region)`;
  } else if (info.code === 'CredentialsError') {
    text = `${doing} SQS queue ${queueUrl}: ${info.message}`;
  } else if (isKmsError(info)) {
    text = `cannot decrypt messages of SQS queue ${queueUrl} (${info.code}: ${info.message}); the reader needs kms:Decrypt on the queue's KMS key`;
  } else if (isCredentialError(info)) {
    text = `SQS rejected the credentials ${doing} ${queueUrl} (${info.code}: ${info.message})`;
  } else if (isAccessError(info)) {
    text = `access denied ${doing} SQS queue ${queueUrl} (${info.code}: ${info.message}); the reader needs ${permission}`;
  } else {
    text = `${doing} SQS queue ${queueUrl} failed: ${info.code}${info.status ? ` (HTTP ${info.status})` : ''}: ${info.message}`;
  }
  return Object.assign(new Error(text), { name: 'SqsError', code: info.code });
}
