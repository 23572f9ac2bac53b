/**
 * An SQS-compatible server for tests: node:http on 127.0.0.1, a random port, speaking the AWS
 * JSON 1.0 protocol the current `@aws-sdk/client-sqs` uses (`POST /`, `X-Amz-Target:
 * AmazonSQS.<Operation>`, `Content-Type: application/x-amz-json-1.0`, JSON in and out). It
 * implements what the `s3-sqs` source and the tests call:
 *
 *   SendMessage, ReceiveMessage (long polling, MaxNumberOfMessages, VisibilityTimeout,
 *   ApproximateReceiveCount), DeleteMessage, ChangeMessageVisibility, GetQueueAttributes
 *
 * with the semantics that matter: a received message is invisible until its visibility timeout
 * runs out; each receive gives a new receipt handle and counts; only the newest receipt handle
 * deletes (an older one "succeeds" without deleting, as on AWS); ChangeMessageVisibility on a
 * message no longer in flight fails with MessageNotInflight; a queue with a redrive policy moves
 * a message to its dead-letter queue when it would be received more than `maxReceiveCount`
 * times. Errors have AWS's JSON shape (`__type`, `message`) and the `x-amzn-query-error` header
 * the SDK reads the query-compatible code from. Signatures are not checked.
 *
 * Bodies carry `MD5OfBody` / `MD5OfMessageBody`: the SDK verifies them.
 */
import { createServer, type ServerResponse } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export const ACCOUNT = '000000000000';
export const REGION = 'us-east-1';

export interface SqsMessageState {
  id: string;
  body: string;
  sentAt: number;
  receiveCount: number;
  firstReceivedAt?: number;
  /** Epoch ms before which the message is not handed out. */
  visibleAt: number;
  /** The newest receipt handle (the one that deletes). */
  receiptHandle?: string;
  /** Every receipt handle it was ever given. */
  handles: Set<string>;
}

export interface SqsQueueState {
  name: string;
  url: string;
  arn: string;
  visibilityTimeoutSeconds: number;
  redrive?: { deadLetterQueue: string; maxReceiveCount: number };
  messages: SqsMessageState[];
  /** Messages deleted through DeleteMessage, in order. */
  deleted: SqsMessageState[];
}

export interface SqsRequest {
  op: string;
  queue?: string;
  input: Record<string, unknown>;
  at: number;
}

export interface SqsFault {
  status: number;
  code: string;
  /** The query-compatible code (`AWS.SimpleQueueService.NonExistentQueue`); defaults to `code`. */
  queryCode?: string;
  message: string;
}

export type SqsInterceptor = (req: SqsRequest) => SqsFault | undefined | void;

export interface SqsTestServer {
  endpoint: string;
  requests: SqsRequest[];
  /** Creates a queue (default visibility 30 s) and returns its URL. */
  createQueue(name: string, options?: { visibilityTimeoutSeconds?: number; redrive?: { deadLetterQueue: string; maxReceiveCount: number } }): string;
  queue(name: string): SqsQueueState;
  /** Sends a message without the SDK; returns its id. */
  send(queueName: string, body: string): string;
  /** Messages not deleted (visible or in flight). */
  count(queueName: string): { visible: number; inFlight: number; total: number };
  intercept(fn: SqsInterceptor | null): void;
  close(): Promise<void>;
}

const md5 = (s: string): string => createHash('md5').update(s, 'utf8').digest('hex');

const ERRORS: Record<string, { status: number; query: string; type: string }> = {
  QueueDoesNotExist: { status: 400, query: 'AWS.SimpleQueueService.NonExistentQueue', type: 'Sender' },
  ReceiptHandleIsInvalid: { status: 404, query: 'ReceiptHandleIsInvalid', type: 'Sender' },
  MessageNotInflight: { status: 400, query: 'AWS.SimpleQueueService.MessageNotInflight', type: 'Sender' },
  InvalidParameterValue: { status: 400, query: 'InvalidParameterValue', type: 'Sender' },
  InvalidAction: { status: 400, query: 'InvalidAction', type: 'Sender' },
};

class SqsError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function startSqsServer(): Promise<SqsTestServer> {
  const queues = new Map<string, SqsQueueState>();
  const requests: SqsRequest[] = [];
  let interceptor: SqsInterceptor | null = null;
  let endpoint = '';
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of [...waiters]) w();
  };

  function queueOf(input: Record<string, unknown>): SqsQueueState {
    const url = String(input['QueueUrl'] ?? '');
    const name = url.split('/').filter(Boolean).pop() ?? '';
    const q = queues.get(name);
    if (!q) throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
    return q;
  }

  function createQueue(name: string, options: { visibilityTimeoutSeconds?: number; redrive?: { deadLetterQueue: string; maxReceiveCount: number } } = {}): string {
    const url = `${endpoint}/${ACCOUNT}/${name}`;
    queues.set(name, {
      name,
      url,
      arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
      ...(options.redrive ? { redrive: options.redrive } : {}),
      messages: [],
      deleted: [],
    });
    return url;
  }

  function enqueue(q: SqsQueueState, body: string, delaySeconds = 0): SqsMessageState {
    const now = Date.now();
    const m: SqsMessageState = { id: randomUUID(), body, sentAt: now, receiveCount: 0, visibleAt: now + delaySeconds * 1000, handles: new Set() };
    q.messages.push(m);
    wake();
    return m;
  }

  /** Hands out up to `max` visible messages, moving those past maxReceiveCount to the dead-letter queue. */
  function take(q: SqsQueueState, max: number, visibilitySeconds: number): SqsMessageState[] {
    const now = Date.now();
    const out: SqsMessageState[] = [];
    for (const m of [...q.messages]) {
      if (out.length >= max) break;
      if (m.visibleAt > now) continue;
      if (q.redrive && m.receiveCount >= q.redrive.maxReceiveCount) {
        const dlq = queues.get(q.redrive.deadLetterQueue);
        q.messages.splice(q.messages.indexOf(m), 1);
        if (dlq) {
          dlq.messages.push({ ...m, receiveCount: 0, visibleAt: now, handles: new Set() });
          delete dlq.messages[dlq.messages.length - 1]!.receiptHandle;
        }
        continue;
      }
      m.receiveCount++;
      m.firstReceivedAt ??= now;
      m.visibleAt = now + visibilitySeconds * 1000;
      m.receiptHandle = `${m.id}#${randomUUID()}`;
      m.handles.add(m.receiptHandle);
      out.push(m);
    }
    return out;
  }

  function findByHandle(q: SqsQueueState, handle: string): SqsMessageState | undefined {
    return q.messages.find((m) => m.handles.has(handle));
  }

  async function handle(op: string, input: Record<string, unknown>, res: ServerResponse): Promise<Record<string, unknown>> {
    switch (op) {
      case 'SendMessage': {
        const q = queueOf(input);
        const body = String(input['MessageBody'] ?? '');
        const m = enqueue(q, body, Number(input['DelaySeconds'] ?? 0));
        return { MessageId: m.id, MD5OfMessageBody: md5(body) };
      }
      case 'ReceiveMessage': {
        const q = queueOf(input);
        const max = Number(input['MaxNumberOfMessages'] ?? 1);
        if (!(max >= 1 && max <= 10)) throw new SqsError('InvalidParameterValue', `Value ${max} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.`);
        const wait = Number(input['WaitTimeSeconds'] ?? 0);
        const visibility = input['VisibilityTimeout'] !== undefined ? Number(input['VisibilityTimeout']) : q.visibilityTimeoutSeconds;
        const names = new Set([...((input['MessageSystemAttributeNames'] as string[] | undefined) ?? []), ...((input['AttributeNames'] as string[] | undefined) ?? [])]);
        const deadline = Date.now() + wait * 1000;
        let got = take(q, max, visibility);
        let gone = false;
        res.on('close', () => (gone = !res.writableFinished));
        while (got.length === 0 && Date.now() < deadline && !gone) {
          // until a message is sent, one becomes visible, or the wait is over
          await new Promise<void>((resolve) => {
            const done = (): void => {
              clearTimeout(t);
              waiters.delete(done);
              resolve();
            };
            const t = setTimeout(done, Math.min(100, Math.max(1, deadline - Date.now())));
            waiters.add(done);
          });
          if (!gone) got = take(q, max, visibility);
        }
        if (gone) {
          // the client went away: what was taken becomes visible again at once, as if never received
          for (const m of got) {
            m.receiveCount--;
            m.visibleAt = 0;
          }
          return {};
        }
        if (got.length === 0) return {};
        return {
          Messages: got.map((m) => {
            const attrs: Record<string, string> = {};
            const all = names.has('All');
            if (all || names.has('ApproximateReceiveCount')) attrs['ApproximateReceiveCount'] = String(m.receiveCount);
            if (all || names.has('SentTimestamp')) attrs['SentTimestamp'] = String(m.sentAt);
            if (all || names.has('ApproximateFirstReceiveTimestamp')) attrs['ApproximateFirstReceiveTimestamp'] = String(m.firstReceivedAt);
            return { MessageId: m.id, ReceiptHandle: m.receiptHandle, MD5OfBody: md5(m.body), Body: m.body, ...(Object.keys(attrs).length ? { Attributes: attrs } : {}) };
          }),
        };
      }
      case 'DeleteMessage': {
        const q = queueOf(input);
        const h = String(input['ReceiptHandle'] ?? '');
        const m = findByHandle(q, h);
        if (!m) {
          if (q.deleted.some((d) => d.handles.has(h))) return {}; // already deleted: AWS answers success
          throw new SqsError('ReceiptHandleIsInvalid', `The input receipt handle "${h}" is not a valid receipt handle.`);
        }
        // only the newest receipt handle deletes; an older one succeeds without deleting
        if (m.receiptHandle === h) {
          q.messages.splice(q.messages.indexOf(m), 1);
          q.deleted.push(m);
        }
        return {};
      }
      case 'ChangeMessageVisibility': {
        const q = queueOf(input);
        const h = String(input['ReceiptHandle'] ?? '');
        const m = findByHandle(q, h);
        if (!m || m.receiptHandle !== h) throw new SqsError('ReceiptHandleIsInvalid', `The input receipt handle "${h}" is not a valid receipt handle.`);
        const seconds = Number(input['VisibilityTimeout'] ?? 0);
        if (!(seconds >= 0 && seconds <= 43_200)) throw new SqsError('InvalidParameterValue', `Value ${seconds} for parameter VisibilityTimeout is invalid.`);
        if (m.visibleAt <= Date.now()) throw new SqsError('MessageNotInflight', 'The message referred to is not in flight.');
        m.visibleAt = Date.now() + seconds * 1000;
        if (seconds === 0) wake();
        return {};
      }
      case 'GetQueueAttributes': {
        const q = queueOf(input);
        const names = new Set((input['AttributeNames'] as string[] | undefined) ?? []);
        const now = Date.now();
        const all: Record<string, string> = {
          QueueArn: q.arn,
          ApproximateNumberOfMessages: String(q.messages.filter((m) => m.visibleAt <= now).length),
          ApproximateNumberOfMessagesNotVisible: String(q.messages.filter((m) => m.visibleAt > now).length),
          VisibilityTimeout: String(q.visibilityTimeoutSeconds),
          ...(q.redrive ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queues.get(q.redrive.deadLetterQueue)?.arn ?? `arn:aws:sqs:${REGION}:${ACCOUNT}:${q.redrive.deadLetterQueue}`, maxReceiveCount: q.redrive.maxReceiveCount }) } : {}),
        };
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(all)) if (names.has('All') || names.has(k)) out[k] = v;
        return Object.keys(out).length ? { Attributes: out } : {};
      }
      default:
        throw new SqsError('InvalidAction', `The action ${op} is not valid for this endpoint.`);
    }
  }

  function sendError(res: ServerResponse, code: string, message: string, status?: number, queryCode?: string): void {
    const e = ERRORS[code] ?? { status: status ?? 400, query: code, type: 'Sender' };
    res.writeHead(status ?? e.status, {
      'Content-Type': 'application/x-amz-json-1.0',
      'x-amzn-RequestId': randomUUID(),
      'x-amzn-query-error': `${queryCode ?? e.query};${e.type}`,
    });
    res.end(JSON.stringify({ __type: `com.amazonaws.sqs#${code}`, message }));
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const target = String(req.headers['x-amz-target'] ?? '');
        const op = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : '';
        let input: Record<string, unknown> = {};
        try {
          input = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
        } catch {
          return sendError(res, 'InvalidParameterValue', 'body is not JSON');
        }
        const queue = typeof input['QueueUrl'] === 'string' ? (input['QueueUrl'] as string).split('/').filter(Boolean).pop() : undefined;
        const r: SqsRequest = { op, ...(queue ? { queue } : {}), input, at: Date.now() };
        requests.push(r);
        const fault = interceptor?.(r);
        if (fault) return sendError(res, fault.code, fault.message, fault.status, fault.queryCode);
        try {
          const out = await handle(op, input, res);
          if (res.destroyed) return;
          res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': randomUUID() });
          res.end(JSON.stringify(out));
        } catch (err) {
          if (err instanceof SqsError) return sendError(res, err.code, err.message);
          sendError(res, 'InternalError', (err as Error).message, 500);
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    endpoint,
    requests,
    createQueue,
    queue: (name) => {
      const q = queues.get(name);
      if (!q) throw new Error(`no queue ${name}`);
      return q;
    },
    send: (name, body) => {
      const q = queues.get(name);
      if (!q) throw new Error(`no queue ${name}`);
      return enqueue(q, body).id;
    },
    count: (name) => {
      const q = queues.get(name);
      if (!q) throw new Error(`no queue ${name}`);
      const now = Date.now();
      const visible = q.messages.filter((m) => m.visibleAt <= now).length;
      return { visible, inFlight: q.messages.length - visible, total: q.messages.length };
    },
    intercept: (fn) => {
      interceptor = fn;
    },
    close: async () => {
      wake();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
