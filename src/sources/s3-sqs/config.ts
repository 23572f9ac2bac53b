/** The `s3-sqs` source's configuration (apart from the source, so that a configuration loads without the AWS SDK). */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';
import { awsCredentialsShape, checkAwsCredentials } from '../s3-common/aws-credentials-config.js';

const bucketName = z.string().min(3).max(63).regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'not a valid S3 bucket name');

export const s3SqsSourceConfigSchema = z
  .object({
    type: z.literal('s3-sqs'),
    /** Checkpoint key; defaults to `s3-sqs:<queueUrl>`. */
    name: z.string().min(1).optional(),
    queueUrl: z.string().url(),
    region: z.string().min(1),
    /** An SQS-compatible endpoint instead of the queue URL's host. */
    endpoint: z.string().url().optional(),
    /** An S3-compatible endpoint (MinIO, …) instead of AWS. */
    s3Endpoint: z.string().url().optional(),
    forcePathStyle: z.boolean().default(false),
    /** Only objects of this bucket are read (a notification naming another one is left for the dead-letter queue). */
    bucket: bucketName.optional(),
    /** Only keys under this prefix are read; others are acknowledged and skipped (a trailing '/' is added when missing). */
    prefix: z.string().default(''),
    visibilityTimeout: durationSchema.default(60_000),
    /** Messages per ReceiveMessage call (SQS allows 10). */
    maxMessages: z.number().int().min(1).max(10).default(10),
    /** Objects in progress at once (received, being fetched or read). */
    concurrency: z.number().int().min(1).max(64).default(10),
    /** Long-polling wait of an idle receive (SQS allows 20 s). */
    waitTime: durationSchema.default(10_000),
    ...awsCredentialsShape,
  })
  .strict()
  .superRefine((c, ctx) => {
    checkAwsCredentials(c, ctx);
    if (c.forcePathStyle && !c.s3Endpoint) ctx.addIssue({ code: 'custom', path: ['forcePathStyle'], message: 'only used with s3Endpoint' });
    if (c.visibilityTimeout < 2_000 || c.visibilityTimeout > 43_200_000) ctx.addIssue({ code: 'custom', path: ['visibilityTimeout'], message: 'between 2s and 12h' });
    if (c.waitTime < 1_000 || c.waitTime > 20_000) ctx.addIssue({ code: 'custom', path: ['waitTime'], message: 'between 1s and 20s (the longest SQS long poll)' });
  });
export type S3SqsSourceConfig = z.infer<typeof s3SqsSourceConfigSchema>;

/** The source's id (its checkpoint key): `name`, else `s3-sqs:<queueUrl>`. */
export function s3SqsSourceId(config: Pick<S3SqsSourceConfig, 'name' | 'queueUrl'>): string {
  return config.name ?? `s3-sqs:${config.queueUrl}`;
}
