/**
 * `type: google-secops` options (zod, strict): the Chronicle API's `logs:import` on one SecOps
 * instance and log type. Credentials are never in the config: a credentials file (a
 * service-account key or a workload identity federation config), the name of a variable holding
 * one, or nothing (Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, GKE Workload
 * Identity through the metadata server).
 */
import { z } from 'zod';
import { compressionSchema, httpSettingsShape } from '../http/settings.js';

/** The Chronicle API versions that have `logs:import`. */
export const SECOPS_API_VERSIONS = ['v1alpha', 'v1beta'] as const;

/** An ImportLogs request: Chronicle's backend limit (4 MB, the Bindplane Chronicle exporter's default) and at most this many logs. */
export const SECOPS_MAX_REQUEST_BYTES = 4_000_000;
export const SECOPS_MAX_LOGS = 1000;

const labelKey = z.string().regex(/^[A-Za-z0-9_.-]{1,63}$/, 'a label key is 1 to 63 letters, digits, `_`, `.` or `-`');

export const googleSecOpsDestinationConfigSchema = z
  .object({
    type: z.literal('google-secops'),
    name: z.string().min(1).optional(),
    /** The Google Cloud project (id or number) the SecOps instance is bound to. */
    project: z.string().min(1),
    /** The instance's location (region): `us`, `eu`, `europe-west2`, … */
    location: z.string().regex(/^[a-z0-9-]+$/, 'a location such as us, eu or europe-west2'),
    /** The SecOps instance (customer) id, a UUID. */
    instance: z.string().min(1),
    /** The log type the logs are imported as (its parser turns them into UDM events). */
    logType: z.string().regex(/^[A-Z0-9_]+$/, 'a log type is upper case letters, digits and `_` (e.g. TABLEAU_ACTIVITY)'),
    /** Overrides the regional endpoint `https://chronicle.<location>.rep.googleapis.com` (a private endpoint, tests). */
    endpoint: z.string().url().optional(),
    apiVersion: z.enum(SECOPS_API_VERSIONS).default('v1beta'),
    /** The environment namespace of every log (SecOps' data domain for indexing and enrichment). */
    namespace: z.string().min(1).optional(),
    /** Ingestion labels of every log. */
    labels: z.record(labelKey, z.string()).default({}),
    /** The forwarder resource name (`projects/…/forwarders/…`) the logs are attributed to. */
    forwarder: z.string().min(1).optional(),
    /** A Google credentials JSON file: a service-account key, or a workload identity federation (external_account) config. */
    credentialsFile: z.string().min(1).optional(),
    /** Name of the environment variable holding such a credentials JSON (its content, not a path). */
    credentialsEnv: z.string().min(1).optional(),
    /** Service-account key: sign the access token ourselves (a self-signed JWT with the scope) instead of exchanging it at oauth2.googleapis.com. */
    selfSignedJwt: z.boolean().default(false),
    /** Name of the environment variable holding a ready OAuth access token (not refreshed: a token broker's, or short runs). */
    accessTokenEnv: z.string().min(1).optional(),
    /** Most bytes of one request body (uncompressed); the encoder splits to fit. */
    maxRequestBytes: z.number().int().min(10_000).max(SECOPS_MAX_REQUEST_BYTES).default(SECOPS_MAX_REQUEST_BYTES),
    compression: compressionSchema.default('none'),
    /** headers, timeout (default 30s), TLS. */
    ...httpSettingsShape,
  })
  .strict()
  .superRefine((c, ctx) => {
    const given = (['credentialsFile', 'credentialsEnv', 'accessTokenEnv'] as const).filter((k) => c[k] !== undefined);
    if (given.length > 1) ctx.addIssue({ code: 'custom', path: [given[1]!], message: `${given.join(' and ')} exclude each other: give one (or none, for Application Default Credentials)` });
    if (c.selfSignedJwt && c.accessTokenEnv !== undefined) ctx.addIssue({ code: 'custom', path: ['selfSignedJwt'], message: 'selfSignedJwt applies to a service-account key, not to accessTokenEnv' });
  });
export type GoogleSecOpsDestinationConfig = z.infer<typeof googleSecOpsDestinationConfigSchema>;

/** Per request, when `timeout` is not set. */
export const SECOPS_DEFAULT_TIMEOUT_MS = 30_000;
/** The OAuth scope of the Chronicle API (logs:import accepts it, and cloud-platform). */
export const CHRONICLE_SCOPE = 'https://www.googleapis.com/auth/chronicle';

/** The instance's parent path of the log type: `projects/{p}/locations/{l}/instances/{i}/logTypes/{t}`. */
export function secOpsLogTypeParent(c: Pick<GoogleSecOpsDestinationConfig, 'project' | 'location' | 'instance' | 'logType'>): string {
  return `projects/${encodeURIComponent(c.project)}/locations/${c.location}/instances/${encodeURIComponent(c.instance)}/logTypes/${c.logType}`;
}

/** `POST {endpoint}/{apiVersion}/{parent}/logs:import`. */
export function secOpsImportUrl(c: Pick<GoogleSecOpsDestinationConfig, 'project' | 'location' | 'instance' | 'logType' | 'endpoint' | 'apiVersion'>): URL {
  const base = c.endpoint ?? `https://chronicle.${c.location}.rep.googleapis.com`;
  const u = new URL(base);
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = `${path}/${c.apiVersion}/${secOpsLogTypeParent(c)}/logs:import`;
  return u;
}
