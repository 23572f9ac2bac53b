/** The `s3` source's configuration (apart from the source, so that a configuration loads without the AWS SDK). */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';
import { awsCredentialsShape, checkAwsCredentials } from '../s3-common/aws-credentials-config.js';
import { normalizedPrefix, parseTimeBound } from '../s3-common/s3-partitions.js';

const timeBound = z.string().refine((v) => parseTimeBound(v, Date.now()) !== undefined, {
  message: 'expected YYYY-MM-DD, YYYY-MM-DDTHH, an ISO 8601 time, or a duration back from now such as 36h or 14d',
});

export const s3SourceConfigSchema = z
  .object({
    type: z.literal('s3'),
    /** Checkpoint key; defaults to `s3://<bucket>/<prefix>`. */
    name: z.string().min(1).optional(),
    bucket: z.string().min(3).max(63).regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'not a valid S3 bucket name'),
    /** The folder above `pod=…/` (a trailing '/' is added when missing). */
    prefix: z.string().default(''),
    region: z.string().min(1),
    /** An S3-compatible endpoint (MinIO, …) instead of AWS. */
    endpoint: z.string().url().optional(),
    forcePathStyle: z.boolean().default(false),
    /** Backfill window on the hour partitions. */
    since: timeBound.optional(),
    until: timeBound.optional(),
    pollInterval: durationSchema.default(60_000),
    /** How far behind the newest hour partition read the source re-lists for late objects. */
    lookbackHours: z.number().int().min(0).max(24 * 31).default(3),
    /** Objects read at once. */
    concurrency: z.number().int().min(1).max(64).default(4),
    ...awsCredentialsShape,
  })
  .strict()
  .superRefine((c, ctx) => {
    checkAwsCredentials(c, ctx);
    if (c.forcePathStyle && !c.endpoint) ctx.addIssue({ code: 'custom', path: ['forcePathStyle'], message: 'only used with endpoint' });
    if (c.since && c.until) {
      const now = Date.now();
      if (parseTimeBound(c.since, now)! >= parseTimeBound(c.until, now)!) ctx.addIssue({ code: 'custom', path: ['until'], message: 'until must be after since' });
    }
  });
export type S3SourceConfig = z.infer<typeof s3SourceConfigSchema>;

/** The source's id (its checkpoint key): `name`, else `s3://<bucket>/<prefix>`. */
export function s3SourceId(config: Pick<S3SourceConfig, 'name' | 'bucket' | 'prefix'>): string {
  return config.name ?? `s3://${config.bucket}/${normalizedPrefix(config.prefix)}`;
}
