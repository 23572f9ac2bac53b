/**
 * `type: sentinel` options (zod, strict): the Azure Monitor Logs Ingestion API (which Microsoft
 * Sentinel reads), a data collection rule (DCR) and its stream, and the Microsoft Entra ID
 * credential. Secrets are never options: a client secret or an access token is read from the
 * environment variable or the file an option names.
 *
 *   POST {endpoint}/dataCollectionRules/{dcrImmutableId}/streams/{stream}?api-version=2023-01-01
 */
import { z } from 'zod';
import { compressionSchema, httpSettingsShape } from '../http/settings.js';

export const SENTINEL_API_VERSION = '2023-01-01';
/** The token scope of the Logs Ingestion API in Azure's public cloud (the double slash is Microsoft's). */
export const SENTINEL_DEFAULT_SCOPE = 'https://monitor.azure.com//.default';
/** Per request, when `timeout` is not set. */
export const SENTINEL_DEFAULT_TIMEOUT_MS = 30_000;
/** The API's limit of one call: 1 MB (we count the uncompressed JSON, so the compressed body fits too). */
export const SENTINEL_MAX_REQUEST_BYTES = 1_000_000;

export const SENTINEL_CREDENTIAL_TYPES = ['client-secret', 'workload-identity', 'managed-identity', 'access-token'] as const;

/** Hosts a plain-http endpoint or authority may name (tests, a local proxy): a bearer token never travels in clear text elsewhere. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]' || hostname === '::1';
}

const httpsOrLoopback = (what: string) =>
  z
    .string()
    .url()
    .refine(
      (v) => {
        const u = new URL(v);
        return u.protocol === 'https:' || (u.protocol === 'http:' && isLoopbackHost(u.hostname));
      },
      { message: `${what} must be an https URL (plain http only to 127.0.0.1 / localhost)` },
    );

export const sentinelCredentialSchema = z
  .object({
    type: z.enum(SENTINEL_CREDENTIAL_TYPES),
    /** Directory (tenant) id; workload identity: default AZURE_TENANT_ID. */
    tenantId: z.string().min(1).optional(),
    /** Application (client) id; workload identity: default AZURE_CLIENT_ID; managed identity: a user-assigned identity's client id. */
    clientId: z.string().min(1).optional(),
    /** client-secret: the variable holding the client secret. */
    clientSecretEnv: z.string().min(1).optional(),
    /** client-secret: a file holding the client secret (a mounted secret). */
    clientSecretFile: z.string().min(1).optional(),
    /** workload-identity: the projected service-account token; default AZURE_FEDERATED_TOKEN_FILE. */
    tokenFile: z.string().min(1).optional(),
    /** managed-identity: a user-assigned identity by its ARM resource id (instead of clientId). */
    resourceId: z.string().min(1).optional(),
    /** client-secret, workload-identity: Microsoft Entra ID's host (sovereign clouds); default AZURE_AUTHORITY_HOST, else https://login.microsoftonline.com. */
    authorityHost: z.string().url().optional(),
    /** PEM file with the CA certificate(s) the authority's TLS certificate must chain to (a proxy's own CA). */
    caFile: z.string().min(1).optional(),
    /** access-token: the variable holding a bearer token got by other means. */
    accessTokenEnv: z.string().min(1).optional(),
    /** access-token: a file holding it, read again when the ingestion API refuses the one in use. */
    accessTokenFile: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const allowed: Record<(typeof SENTINEL_CREDENTIAL_TYPES)[number], readonly string[]> = {
      'client-secret': ['tenantId', 'clientId', 'clientSecretEnv', 'clientSecretFile', 'authorityHost', 'caFile'],
      'workload-identity': ['tenantId', 'clientId', 'tokenFile', 'authorityHost', 'caFile'],
      'managed-identity': ['clientId', 'resourceId'],
      'access-token': ['accessTokenEnv', 'accessTokenFile'],
    };
    for (const k of Object.keys(c)) {
      if (k !== 'type' && !allowed[c.type].includes(k)) ctx.addIssue({ code: 'custom', path: [k], message: `credential.${k} does not apply to credential type ${c.type}` });
    }
    if (c.type === 'client-secret') {
      if (!c.tenantId) ctx.addIssue({ code: 'custom', path: ['tenantId'], message: 'credential type client-secret needs tenantId' });
      if (!c.clientId) ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'credential type client-secret needs clientId' });
      if ((c.clientSecretEnv === undefined) === (c.clientSecretFile === undefined)) {
        ctx.addIssue({ code: 'custom', path: ['clientSecretEnv'], message: 'credential type client-secret needs exactly one of clientSecretEnv and clientSecretFile' });
      }
    }
    if (c.type === 'managed-identity' && c.clientId && c.resourceId) ctx.addIssue({ code: 'custom', path: ['resourceId'], message: 'credential type managed-identity takes clientId or resourceId, not both' });
    if (c.type === 'access-token' && (c.accessTokenEnv === undefined) === (c.accessTokenFile === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['accessTokenEnv'], message: 'credential type access-token needs exactly one of accessTokenEnv and accessTokenFile' });
    }
    if (c.authorityHost !== undefined) {
      const u = new URL(c.authorityHost);
      if (u.protocol !== 'https:') ctx.addIssue({ code: 'custom', path: ['authorityHost'], message: 'credential.authorityHost must be an https URL (@azure/identity accepts no other)' });
    }
  });
export type SentinelCredentialConfig = z.infer<typeof sentinelCredentialSchema>;

export const sentinelDestinationConfigSchema = z
  .object({
    type: z.literal('sentinel'),
    name: z.string().min(1).optional(),
    /** The DCR's logs ingestion endpoint or a data collection endpoint (DCE), e.g. https://my-dce-abcd.westeurope-1.ingest.monitor.azure.com. */
    endpoint: httpsOrLoopback('endpoint'),
    /** The DCR's immutable id (`dcr-…`). */
    dcrImmutableId: z.string().regex(/^[A-Za-z0-9-]+$/, 'dcrImmutableId is the DCR immutable id, e.g. dcr-0123456789abcdef0123456789abcdef'),
    /** The DCR's input stream (`Custom-TableauActivity_CL`). */
    stream: z.string().regex(/^[A-Za-z0-9_-]+$/, 'stream is the name of one of the DCR stream declarations, e.g. Custom-TableauActivity_CL').default('Custom-TableauActivity_CL'),
    credential: sentinelCredentialSchema,
    /** The token scope (sovereign clouds: https://monitor.azure.us//.default, https://monitor.azure.cn//.default). */
    scope: z.string().min(1).default(SENTINEL_DEFAULT_SCOPE),
    /** Most bytes of uncompressed JSON in one call (the API takes at most 1 MB). */
    maxRequestBytes: z.number().int().min(10_000).max(SENTINEL_MAX_REQUEST_BYTES).default(SENTINEL_MAX_REQUEST_BYTES),
    compression: compressionSchema.default('gzip'),
    /** headers, timeout (default 30s), TLS of the ingestion endpoint. */
    ...httpSettingsShape,
  })
  .strict();
export type SentinelDestinationConfig = z.infer<typeof sentinelDestinationConfigSchema>;

/** The URL of the stream's upload call. */
export function sentinelUploadUrl(config: Pick<SentinelDestinationConfig, 'endpoint' | 'dcrImmutableId' | 'stream'>): URL {
  const u = new URL(config.endpoint);
  const base = u.pathname.replace(/\/+$/, '');
  u.pathname = `${base}/dataCollectionRules/${encodeURIComponent(config.dcrImmutableId)}/streams/${encodeURIComponent(config.stream)}`;
  u.search = `?api-version=${SENTINEL_API_VERSION}`;
  return u;
}
