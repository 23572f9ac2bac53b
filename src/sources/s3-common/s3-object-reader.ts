/**
 * Reading one S3 object as a stream, shared by `type: s3` (objects found by listing) and
 * `type: s3-sqs` (objects named by event notifications):
 *
 *   - GetObject pinned to the ETag the object was found with (`If-Match`): an object replaced
 *     since then is not read half old, half new. Before any byte it is skipped with a warning
 *     (its new version is found again: next listing, or its own notification); after some bytes
 *     the read fails and the pipeline's retry hits the skip;
 *   - an object deleted in between is skipped with a warning;
 *   - a body cut mid-way (timeout, reset) is resumed with a Range request at the byte where it
 *     stopped, still pinned to the same ETag;
 *   - access denied, a KMS refusal or an archived object are permanent (`permanent: true`): the
 *     pipeline dead-letters the rest of the object at once. Anything else is transient.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { SourceMetrics } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { Backoff, BACKOFF_DEFAULTS } from '../../core/backoff.js';
import { sleep } from '../../core/sleep.js';
import { isAccessError, isCredentialError, isKmsError, kmsKeyIn, s3ErrorInfo, type S3ErrorInfo } from './s3-client.js';

/** A GetObject failure that retrying will not fix (access denied, KMS): the pipeline dead-letters the object's rest at once. */
export class PermanentObjectError extends Error {
  readonly permanent = true;
  readonly code = 'EACCES';
  constructor(message: string, readonly s3Code: string) {
    super(message);
    this.name = 'PermanentObjectError';
  }
}

export interface S3ObjectRef {
  bucket: string;
  key: string;
  /** ETag without quotes: the version the read is pinned to. */
  etag?: string | undefined;
  size?: number | undefined;
}

export interface S3ObjectReaderOptions {
  client: S3Client;
  /** Secret values to scrub from error text. */
  secrets: string[];
  metrics: SourceMetrics;
  log: Logger;
  /** First pause before resuming an interrupted body (tests); BACKOFF_DEFAULTS.objectResume's otherwise (doubling on each failure without progress). */
  resumeDelayMs?: number;
  /** Warnings when an object is skipped: how it was found decides what happens to its new version. */
  skipped?: { deleted: string; replaced: string };
}

const MAX_RESUMES_WITHOUT_PROGRESS = 4;

const LISTING_WORDS = {
  deleted: 'object deleted since it was listed: skipped',
  replaced: 'object replaced since it was listed: skipped now, its new version is read from the start on the next poll',
};

/** The object's bytes, pinned to its ETag, resuming with a Range request after an interruption. */
export async function* readS3Object(opts: S3ObjectReaderOptions, o: S3ObjectRef, signal: AbortSignal): AsyncGenerator<Buffer> {
  const words = opts.skipped ?? LISTING_WORDS;
  const where = `s3://${o.bucket}/${o.key}`;
  let offset = 0;
  const resumes = new Backoff(opts.resumeDelayMs === undefined ? BACKOFF_DEFAULTS.objectResume : { ...BACKOFF_DEFAULTS.objectResume, initialMs: opts.resumeDelayMs });
  for (;;) {
    let body: Readable;
    try {
      opts.metrics.request('GetObject');
      const res = await opts.client.send(
        new GetObjectCommand({
          Bucket: o.bucket,
          Key: o.key,
          ...(o.etag ? { IfMatch: `"${o.etag}"` } : {}),
          ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}),
        }),
        { abortSignal: signal },
      );
      body = res.Body as Readable;
      if (!body) return;
    } catch (err) {
      if (signal.aborted) throw err;
      const info = s3ErrorInfo(err, opts.secrets);
      if (info.code === 'NoSuchKey' || (info.status === 404 && info.code !== 'NoSuchBucket')) {
        if (offset === 0) {
          opts.log.warn({ object: o.key }, words.deleted);
          return;
        }
        throw new Error(`${where} was deleted while being read`);
      }
      if (info.code === 'PreconditionFailed' || info.status === 412) {
        if (offset === 0) {
          opts.log.warn({ object: o.key, etag: o.etag }, words.replaced);
          return;
        }
        // the pipeline retries the object; that attempt gets the 412 above, before any byte
        throw new Error(`${where} was replaced while being read (ETag ${o.etag} no longer current)`);
      }
      if (info.code === 'InvalidRange' || info.status === 416) return; // the interruption was at the very end
      throw s3ObjectError(o.bucket, o.key, info);
    }
    try {
      for await (const chunk of body) {
        offset += (chunk as Buffer).length;
        resumes.reset();
        yield chunk as Buffer;
      }
      if (o.size === undefined || offset >= o.size) return;
      throw new Error(`body ended after ${offset} of ${o.size} bytes`);
    } catch (err) {
      if (signal.aborted) throw err;
      const info = s3ErrorInfo(err, opts.secrets);
      if (resumes.attempts >= MAX_RESUMES_WITHOUT_PROGRESS) throw new Error(`reading ${where} failed at byte ${offset}: ${info.code}: ${info.message}`);
      opts.log.warn({ object: o.key, byte: offset, err: `${info.code}: ${info.message}` }, 'object stream interrupted; resuming at the same byte');
      if (await sleep(resumes.next(), signal)) throw abortError(signal);
    } finally {
      body.destroy();
    }
  }
}

/** A failed GetObject/HeadObject as an error naming the object and what the reader needs; permanent when retrying cannot help. */
export function s3ObjectError(bucket: string, key: string, info: S3ErrorInfo): Error {
  const where = `s3://${bucket}/${key}`;
  if (isKmsError(info)) {
    const kmsKey = kmsKeyIn(info.message);
    return new PermanentObjectError(
      `cannot decrypt ${where}${kmsKey ? ` with KMS key ${kmsKey}` : ''} (${info.code}: ${info.message}); the reader needs kms:Decrypt on the bucket's KMS key`,
      info.code,
    );
  }
  if (isCredentialError(info)) {
    // not the object's fault: not marked permanent
    return Object.assign(new Error(`credentials failed reading ${where} (${info.code}: ${info.message})`), { s3Code: info.code });
  }
  if (isAccessError(info)) {
    return new PermanentObjectError(`access denied reading ${where} (${info.code}: ${info.message}); the reader needs s3:GetObject (and kms:Decrypt for SSE-KMS)`, info.code);
  }
  if (info.code === 'InvalidObjectState') {
    return new PermanentObjectError(`cannot read ${where} (${info.code}: ${info.message})`, info.code);
  }
  return Object.assign(new Error(`reading ${where} failed: ${info.code}${info.status ? ` (HTTP ${info.status})` : ''}: ${info.message}`), { s3Code: info.code });
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason as unknown;
  return reason instanceof Error ? reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
}
