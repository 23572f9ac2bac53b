/**
 * `type: datadog` options (zod, strict). The API key is never in the config itself:
 * `apiKeyEnv` names the environment variable that holds it.
 */
import { z } from 'zod';
import { compressionSchema, httpSettingsShape } from '../http/settings.js';

export const DATADOG_SITES = ['datadoghq.com', 'datadoghq.eu', 'us3.datadoghq.com', 'us5.datadoghq.com', 'ap1.datadoghq.com', 'ddog-gov.com'] as const;

export const datadogDestinationConfigSchema = z
  .object({
    type: z.literal('datadog'),
    name: z.string().min(1).optional(),
    site: z.enum(DATADOG_SITES).default('datadoghq.com'),
    /** Overrides the intake URL the site gives (tests, proxies): a base URL (`/api/v2/logs` is appended) or the full URL. */
    url: z.string().url().optional(),
    /** Name of the environment variable holding the Datadog API key. */
    apiKeyEnv: z.string().min(1),
    /** The `service` of every entry; unset: the record's resource `service.name` (`tableau-cloud`, `tableau-cloud-manager`). */
    service: z.string().min(1).optional(),
    hostname: z.string().min(1).optional(),
    /** `key:value` or `value`; a comma would split a tag. */
    tags: z.array(z.string().regex(/^[^,]+$/, 'a tag cannot contain a comma')).default([]),
    compression: compressionSchema.default('gzip'),
    /** headers, timeout (default 30s), TLS. */
    ...httpSettingsShape,
  })
  .strict();
export type DatadogDestinationConfig = z.infer<typeof datadogDestinationConfigSchema>;

const LOGS_PATH = '/api/v2/logs';
/** Per request, when `timeout` is not set. */
export const DATADOG_DEFAULT_TIMEOUT_MS = 30_000;

export function datadogLogsUrl(config: Pick<DatadogDestinationConfig, 'site' | 'url'>): URL {
  if (!config.url) return new URL(`https://http-intake.logs.${config.site}${LOGS_PATH}`);
  const u = new URL(config.url);
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = path === '' ? LOGS_PATH : path;
  return u;
}
