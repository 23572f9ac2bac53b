/**
 * The bodies of SQS messages that announce new S3 objects, in the three shapes AWS delivers:
 *
 *   - an S3 event notification, sent by the bucket straight to the queue (or through SNS with raw
 *     message delivery): `{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:Put",
 *     "s3":{"bucket":{"name"},"object":{"key","size","eTag","versionId"}}}]}`. One notification
 *     may list several records. Keys are URL-encoded the way HTML forms are (`+` for a space,
 *     `%3D` for `=`): they are decoded here;
 *   - the same wrapped in an SNS envelope: `{"Type":"Notification","Message":"<the JSON as a string>"}`;
 *   - an EventBridge event (a rule on the bucket's events targeting the queue):
 *     `{"source":"aws.s3","detail-type":"Object Created","detail":{"bucket":{"name"},
 *     "object":{"key","size","etag","version-id"}}}`. Its keys are not URL-encoded.
 *
 * Plus the `s3:TestEvent` S3 sends when notifications are configured (to be deleted, nothing
 * else). Only object-created events name work; other S3 events (removals, restores, …) are
 * understood and ignored. Anything else is `invalid`: the caller leaves such a message on the
 * queue so that the queue's redrive policy moves it to the dead-letter queue, where someone can
 * look at it.
 */

export interface NotifiedObject {
  bucket: string;
  /** The object key, decoded. */
  key: string;
  /** ETag without quotes (absent in some notifications). */
  etag?: string;
  size?: number;
  versionId?: string;
  /** `ObjectCreated:Put`, `Object Created` (EventBridge), … */
  eventName: string;
}

export type ParsedNotification =
  /** Zero or more created objects; `ignored` names the events that are not object creations. */
  | { kind: 'objects'; via: 's3' | 'sns' | 'eventbridge'; objects: NotifiedObject[]; ignored: string[] }
  | { kind: 'test'; via: 's3' | 'sns' }
  | { kind: 'invalid'; reason: string };

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return undefined;
}

/** ETags as S3 prints them in listings (`"abc"`), notifications (`abc`) or weak (`W/"abc"`), without quotes. */
export function normalizeEtag(etag: string | undefined): string | undefined {
  if (etag === undefined) return undefined;
  const e = etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
  return e === '' ? undefined : e;
}

/** An S3 event notification's key: form-encoded (`+` is a space, `%2B` a plus). Undefined when the escapes are broken. */
export function decodeS3EventKey(key: string): string | undefined {
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** The inverse, as S3 writes keys into notifications (for tests and tools). */
export function encodeS3EventKey(key: string): string {
  return key
    .split('/')
    .map((part) => encodeURIComponent(part).replace(/%20/g, '+').replace(/[!'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
}

export function parseNotification(body: string): ParsedNotification {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return { kind: 'invalid', reason: 'body is not JSON' };
  }
  if (!isObject(doc)) return { kind: 'invalid', reason: 'body is not a JSON object' };

  // SNS envelope (not raw delivery)
  if (doc['Type'] !== undefined && (doc['TopicArn'] !== undefined || doc['Message'] !== undefined)) {
    if (doc['Type'] !== 'Notification') {
      return { kind: 'invalid', reason: `SNS ${String(doc['Type'])} message, not a notification${doc['Type'] === 'SubscriptionConfirmation' ? ' (confirm the subscription of the queue to the topic)' : ''}` };
    }
    const inner = str(doc['Message']);
    if (inner === undefined) return { kind: 'invalid', reason: 'SNS notification without a Message' };
    const parsed = parseNotification(inner);
    if (parsed.kind === 'invalid') return { kind: 'invalid', reason: `SNS message: ${parsed.reason}` };
    if (parsed.kind === 'test') return { kind: 'test', via: 'sns' };
    return { ...parsed, via: parsed.via === 'eventbridge' ? 'eventbridge' : 'sns' };
  }

  if (doc['Event'] === 's3:TestEvent') return { kind: 'test', via: 's3' };

  if (doc['source'] !== undefined && doc['detail-type'] !== undefined) return parseEventBridge(doc);

  if (Array.isArray(doc['Records'])) return parseS3Records(doc['Records']);

  return { kind: 'invalid', reason: 'not an S3 event notification (no Records, no S3 test event, not an S3 EventBridge event)' };
}

function parseS3Records(records: unknown[]): ParsedNotification {
  if (records.length === 0) return { kind: 'invalid', reason: 'S3 notification with no records' };
  const objects: NotifiedObject[] = [];
  const ignored: string[] = [];
  for (const [i, r] of records.entries()) {
    if (!isObject(r)) return { kind: 'invalid', reason: `record ${i} is not an object` };
    if (r['eventSource'] !== 'aws:s3') return { kind: 'invalid', reason: `record ${i} is not an S3 event (eventSource ${JSON.stringify(r['eventSource'] ?? null)})` };
    const eventName = str(r['eventName']) ?? '';
    if (!eventName.startsWith('ObjectCreated:')) {
      ignored.push(eventName || '(no eventName)');
      continue;
    }
    const s3 = r['s3'];
    const bucket = isObject(s3) && isObject(s3['bucket']) ? str(s3['bucket']['name']) : undefined;
    const object = isObject(s3) && isObject(s3['object']) ? s3['object'] : undefined;
    const rawKey = object ? str(object['key']) : undefined;
    if (!bucket || !object || rawKey === undefined) return { kind: 'invalid', reason: `record ${i} (${eventName}) has no s3.bucket.name or s3.object.key` };
    const key = decodeS3EventKey(rawKey);
    if (key === undefined) return { kind: 'invalid', reason: `record ${i} has a key with broken URL escapes: ${JSON.stringify(rawKey.slice(0, 200))}` };
    objects.push(notified(bucket, key, eventName, object['eTag'] ?? object['etag'], object['size'], object['versionId']));
  }
  return { kind: 'objects', via: 's3', objects, ignored };
}

function parseEventBridge(doc: Json): ParsedNotification {
  if (doc['source'] !== 'aws.s3') return { kind: 'invalid', reason: `EventBridge event from ${JSON.stringify(doc['source'])}, not aws.s3` };
  const type = String(doc['detail-type']);
  if (type !== 'Object Created') return { kind: 'objects', via: 'eventbridge', objects: [], ignored: [type] };
  const detail = doc['detail'];
  const bucket = isObject(detail) && isObject(detail['bucket']) ? str(detail['bucket']['name']) : undefined;
  const object = isObject(detail) && isObject(detail['object']) ? detail['object'] : undefined;
  const key = object ? str(object['key']) : undefined;
  if (!bucket || !object || key === undefined) return { kind: 'invalid', reason: 'EventBridge Object Created event without detail.bucket.name or detail.object.key' };
  return { kind: 'objects', via: 'eventbridge', objects: [notified(bucket, key, type, object['etag'], object['size'], object['version-id'])], ignored: [] };
}

function notified(bucket: string, key: string, eventName: string, etag: unknown, size: unknown, versionId: unknown): NotifiedObject {
  const e = normalizeEtag(str(etag));
  const s = num(size);
  const v = str(versionId);
  return { bucket, key, eventName, ...(e ? { etag: e } : {}), ...(s !== undefined ? { size: s } : {}), ...(v ? { versionId: v } : {}) };
}
