/**
 * The S3 side of `type: s3`: one S3Client per source (its own credentials, so two tenants in
 * one process can read two AWS accounts), the listing calls the partition walker needs, and
 * errors turned into messages that name the bucket, the prefix or the object (never a secret).
 *
 * Credentials, in order of precedence:
 *   - `roleArn` (+ `externalId`, `roleSessionName`): STS AssumeRole through
 *     `fromTemporaryCredentials`, refreshed before expiry; the credentials used to call STS are
 *     the static keys below when given, else the default chain;
 *   - `accessKeyIdEnv` / `secretAccessKeyEnv` (/ `sessionTokenEnv`): static keys read from the
 *     named environment variables;
 *   - otherwise the AWS default chain (`fromNodeProviderChain`: environment, shared profile,
 *     web identity, container and instance roles).
 */
import { S3Client, ListObjectsV2Command, type ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { fromNodeProviderChain, fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { SourceMetrics } from '../../core/metrics.js';

export { awsCredentialsShape, checkAwsCredentials } from './aws-credentials-config.js';

export interface S3ConnectionConfig {
  bucket: string;
  region: string;
  endpoint?: string | undefined;
  forcePathStyle?: boolean | undefined;
  roleArn?: string | undefined;
  externalId?: string | undefined;
  roleSessionName?: string | undefined;
  accessKeyIdEnv?: string | undefined;
  secretAccessKeyEnv?: string | undefined;
  sessionTokenEnv?: string | undefined;
}

/** Timeouts and retries of every S3 request a source makes. */
export const S3_REQUEST_SETTINGS = {
  /** SDK attempts per request (throttling 503 SlowDown, 5xx, timeouts, connection resets), with exponential backoff. */
  maxAttempts: 5,
  connectionTimeoutMs: 5_000,
  /** Until the response headers arrive. */
  requestTimeoutMs: 30_000,
  /** Idle socket while a body streams (a stalled read is resumed with a Range request). */
  socketTimeoutMs: 120_000,
};

/** A configuration problem found when the source is built (missing environment variable, …). */
export class S3ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'S3ConfigError';
  }
}

export interface BuiltS3Client {
  client: S3Client;
  /** Secret values to scrub from any error text, in case a server echoes one. */
  secrets: string[];
}

export function createS3Client(config: S3ConnectionConfig, env: NodeJS.ProcessEnv): BuiltS3Client {
  const secrets: string[] = [];
  // Static keys are read from the environment when credentials are first needed: a missing
  // variable fails this source's polls with a clear error, not the whole process.
  let staticKeys: AwsCredentialIdentityProvider | undefined;
  if (config.accessKeyIdEnv || config.secretAccessKeyEnv) {
    for (const name of [config.secretAccessKeyEnv, config.sessionTokenEnv]) if (name && env[name]) secrets.push(env[name]!);
    staticKeys = async () => {
      const accessKeyId = requiredEnv(env, config.accessKeyIdEnv, 'accessKeyIdEnv');
      const secretAccessKey = requiredEnv(env, config.secretAccessKeyEnv, 'secretAccessKeyEnv');
      const sessionToken = config.sessionTokenEnv ? requiredEnv(env, config.sessionTokenEnv, 'sessionTokenEnv') : undefined;
      return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
    };
  }

  let provider: AwsCredentialIdentityProvider;
  let what: string;
  if (config.roleArn) {
    provider = fromTemporaryCredentials({
      params: {
        RoleArn: config.roleArn,
        RoleSessionName: config.roleSessionName ?? 'tableau-activity-otel',
        DurationSeconds: 3600,
        ...(config.externalId ? { ExternalId: config.externalId } : {}),
      },
      masterCredentials: staticKeys ?? fromNodeProviderChain(),
      clientConfig: { region: config.region, maxAttempts: S3_REQUEST_SETTINGS.maxAttempts },
    }) as AwsCredentialIdentityProvider;
    what = `assuming role ${config.roleArn}`;
  } else if (staticKeys) {
    provider = staticKeys;
    what = `static keys from ${config.accessKeyIdEnv}/${config.secretAccessKeyEnv}`;
  } else {
    provider = fromNodeProviderChain();
    what = 'the AWS default credential chain';
  }
  // Name the credential source in errors (STS refusals, no credentials found), without the error's own fields.
  const credentials: AwsCredentialIdentityProvider = async (props?: Record<string, unknown>) => {
    try {
      return await (provider as (p?: Record<string, unknown>) => Promise<AwsCredentialIdentity>)(props);
    } catch (err) {
      const info = s3ErrorInfo(err, secrets);
      const reason = err instanceof S3ConfigError ? info.message : `${info.code}: ${info.message}`;
      throw Object.assign(new Error(`cannot get AWS credentials (${what}): ${reason}`), { name: 'CredentialsError' });
    }
  };

  const client = new S3Client({
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    forcePathStyle: config.forcePathStyle ?? false,
    credentials,
    maxAttempts: S3_REQUEST_SETTINGS.maxAttempts,
    retryMode: 'standard',
    // S3-compatible stores rarely return the flexible checksums; AWS S3 keeps the SDK default.
    ...(config.endpoint ? { responseChecksumValidation: 'WHEN_REQUIRED' as const, requestChecksumCalculation: 'WHEN_REQUIRED' as const } : {}),
    requestHandler: new NodeHttpHandler({
      connectionTimeout: S3_REQUEST_SETTINGS.connectionTimeoutMs,
      requestTimeout: S3_REQUEST_SETTINGS.requestTimeoutMs,
      throwOnRequestTimeout: true,
      socketTimeout: S3_REQUEST_SETTINGS.socketTimeoutMs,
      httpAgent: { keepAlive: true, maxSockets: 50 },
      httpsAgent: { keepAlive: true, maxSockets: 50 },
    }),
  });
  return { client, secrets };
}

function requiredEnv(env: NodeJS.ProcessEnv, name: string | undefined, option: string): string {
  if (!name) throw new S3ConfigError(`${option} is required with accessKeyIdEnv/secretAccessKeyEnv`);
  const value = env[name];
  if (value === undefined || value === '') throw new S3ConfigError(`environment variable ${name} (named by ${option}) is not set`);
  return value;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

export interface S3ErrorInfo {
  /** S3 error code (`NoSuchBucket`, `AccessDenied`, `SlowDown`, …) or the Node error code. */
  code: string;
  status?: number;
  /** The server's message, shortened, secrets scrubbed. */
  message: string;
}

export function s3ErrorInfo(err: unknown, secrets: string[] = []): S3ErrorInfo {
  const e = (err ?? {}) as { name?: string; Code?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  let code = e.Code ?? (e.name && e.name !== 'Error' && e.name !== 'Unknown' && e.name !== 'UnknownError' ? e.name : undefined) ?? e.code;
  if (!code || /^\d+$/.test(code)) {
    code = status === 403 ? 'AccessDenied' : status === 404 ? 'NotFound' : status === 412 ? 'PreconditionFailed' : status === 503 ? 'ServiceUnavailable' : code ?? 'Error';
  }
  let message = String(e.message ?? '').replace(/\s+/g, ' ').trim();
  for (const s of secrets) if (s) message = message.split(s).join('[redacted]');
  if (message.length > 400) message = `${message.slice(0, 400)}…`;
  if (!message || message === code || message === 'UnknownError') message = status ? `HTTP ${status}` : 'no message';
  return { code, ...(status !== undefined ? { status } : {}), message };
}

const CREDENTIAL_CODES = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken', 'TokenRefreshRequired', 'InvalidClientTokenId', 'CredentialsError', 'CredentialsProviderError']);

/** Credentials missing, unknown, expired or badly signed (may be fixed by a refresh or an operator). */
export function isCredentialError(info: S3ErrorInfo): boolean {
  return CREDENTIAL_CODES.has(info.code);
}

export function isAccessError(info: S3ErrorInfo): boolean {
  return info.status === 403 || info.code === 'AccessDenied' || info.code === 'AllAccessDisabled' || CREDENTIAL_CODES.has(info.code);
}

/** The KMS key named in an error message, if any. */
export function kmsKeyIn(message: string): string | undefined {
  return /arn:aws[\w-]*:kms:[\w-]+:\d{12}:(?:key|alias)\/[\w/+=,.@-]+/.exec(message)?.[0];
}

export function isKmsError(info: S3ErrorInfo): boolean {
  return info.code.startsWith('KMS.') || /\bkms\b|kms:/i.test(info.message);
}

/** A listing failed: the message names the bucket, the prefix and what to check. */
export function listError(err: unknown, bucket: string, prefix: string, secrets: string[]): Error {
  const info = s3ErrorInfo(err, secrets);
  const where = `s3://${bucket}/${prefix}`;
  let text: string;
  if (info.code === 'CredentialsError') {
    text = `cannot list ${where}: ${info.message}`;
  } else if (info.code === 'NoSuchBucket') {
    text = `S3 bucket "${bucket}" does not exist (NoSuchBucket; check the bucket name, region and endpoint)`;
  } else if (CREDENTIAL_CODES.has(info.code)) {
    text = `S3 rejected the credentials listing ${where} (${info.code}: ${info.message})`;
  } else if (isAccessError(info)) {
    text = `access denied listing ${where} (${info.code}: ${info.message}); the reader needs s3:ListBucket on bucket "${bucket}"`;
  } else {
    text = `listing ${where} failed: ${info.code}${info.status ? ` (HTTP ${info.status})` : ''}: ${info.message}`;
  }
  return Object.assign(new Error(text), { name: 'S3ListError', code: info.code, ...(info.status !== undefined ? { status: info.status } : {}) });
}

// ---------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------

export interface ListedObject {
  key: string;
  /** ETag without quotes. */
  etag?: string;
  size?: number;
  lastModified?: Date;
}

/** The two listing shapes the partition walker uses. */
export interface S3Lister {
  /** Child prefixes of `prefix` (Delimiter '/'), every page. */
  prefixes(prefix: string, signal: AbortSignal): Promise<string[]>;
  /** Every object under `prefix` (no delimiter), keys after `startAfter` when given. */
  objects(prefix: string, startAfter: string | undefined, signal: AbortSignal): Promise<ListedObject[]>;
}

export class SdkS3Lister implements S3Lister {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly metrics: SourceMetrics,
    private readonly secrets: string[],
  ) {}

  private async page(input: { Prefix: string; Delimiter?: string; StartAfter?: string; ContinuationToken?: string }, signal: AbortSignal): Promise<ListObjectsV2CommandOutput> {
    this.metrics.request('ListObjectsV2');
    try {
      return await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, ...input }), { abortSignal: signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw listError(err, this.bucket, input.Prefix, this.secrets);
    }
  }

  async prefixes(prefix: string, signal: AbortSignal): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.page({ Prefix: prefix, Delimiter: '/', ...(token ? { ContinuationToken: token } : {}) }, signal);
      for (const p of res.CommonPrefixes ?? []) if (p.Prefix) out.push(p.Prefix);
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async objects(prefix: string, startAfter: string | undefined, signal: AbortSignal): Promise<ListedObject[]> {
    const out: ListedObject[] = [];
    let token: string | undefined;
    do {
      const res = await this.page({ Prefix: prefix, ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}) }, signal);
      for (const o of res.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue; // folder markers
        const etag = o.ETag ? o.ETag.replace(/^(W\/)?"|"$/g, '') : undefined;
        out.push({ key: o.Key, ...(etag ? { etag } : {}), ...(o.Size !== undefined ? { size: o.Size } : {}), ...(o.LastModified ? { lastModified: o.LastModified } : {}) });
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return out;
  }
}
