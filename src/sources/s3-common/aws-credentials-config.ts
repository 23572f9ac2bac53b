/**
 * The credential options shared by the AWS-reading sources (s3, s3-sqs), as configuration:
 * kept apart from the AWS SDK so that loading a configuration does not load the SDK.
 */
import { z } from 'zod';

/** The credential options of every AWS-reading source (s3, s3-sqs). */
export const awsCredentialsShape = {
  roleArn: z.string().regex(/^arn:aws[\w-]*:iam::\d{12}:role\/.+$/, 'expected arn:aws:iam::<account>:role/<name>').optional(),
  externalId: z.string().min(2).max(1224).optional(),
  roleSessionName: z.string().regex(/^[\w+=,.@-]{2,64}$/).optional(),
  /** Names of environment variables holding static keys (never the keys themselves). */
  accessKeyIdEnv: z.string().min(1).optional(),
  secretAccessKeyEnv: z.string().min(1).optional(),
  sessionTokenEnv: z.string().min(1).optional(),
} as const;

type AwsCredentialOptions = { [K in keyof typeof awsCredentialsShape]?: string | undefined };

/** The rules between the credential options, for a schema's superRefine. */
export function checkAwsCredentials(c: AwsCredentialOptions, ctx: z.RefinementCtx): void {
  if (Boolean(c.accessKeyIdEnv) !== Boolean(c.secretAccessKeyEnv)) {
    ctx.addIssue({ code: 'custom', path: [c.accessKeyIdEnv ? 'secretAccessKeyEnv' : 'accessKeyIdEnv'], message: 'accessKeyIdEnv and secretAccessKeyEnv go together' });
  }
  if (c.sessionTokenEnv && !c.accessKeyIdEnv) ctx.addIssue({ code: 'custom', path: ['sessionTokenEnv'], message: 'sessionTokenEnv needs accessKeyIdEnv and secretAccessKeyEnv' });
  if ((c.externalId || c.roleSessionName) && !c.roleArn) ctx.addIssue({ code: 'custom', path: [c.externalId ? 'externalId' : 'roleSessionName'], message: 'only used with roleArn' });
}
