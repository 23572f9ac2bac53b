/**
 * The settings block every HTTP destination's config shares (spread into its zod object):
 * extra `headers`, the per-request `timeout` (a duration: `30s`, `500ms`, or seconds), the TLS
 * options, and `compression`. `timeoutMs` (milliseconds, the earlier key) is still read, with a
 * deprecation warning logged once.
 */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';
import type { DestinationSettings } from '../destination-type.js';
import type { TlsOptions } from '../../core/http/client.js';

export const tlsConfigShape = {
  /** PEM file with the CA certificate(s) to trust (instead of Node's bundled roots). */
  caFile: z.string().min(1).optional(),
  /** Turn certificate verification off (self-signed test setups only). Default false. */
  insecureSkipVerify: z.boolean().default(false),
} as const;

export const compressionSchema = z.enum(['gzip', 'none']);

export const httpSettingsShape = {
  /** Extra request headers (a proxy's, a tenant header). The destination's own auth header wins over one of the same name. */
  headers: z.record(z.string(), z.string()).optional(),
  /** Per request: a duration (`30s`, `500ms`; a number is seconds). */
  timeout: durationSchema.optional(),
  /** Deprecated: per request, milliseconds. Use `timeout`. */
  timeoutMs: z.number().int().positive().optional(),
  ...tlsConfigShape,
} as const;

export interface HttpSettingsConfig {
  type: string;
  headers?: Record<string, string> | undefined;
  timeout?: number | undefined;
  timeoutMs?: number | undefined;
  caFile?: string | undefined;
  insecureSkipVerify?: boolean | undefined;
}

export interface ResolvedHttpSettings {
  /** Per request, milliseconds; undefined when not configured and no default given. */
  timeoutMs: number | undefined;
  tls: TlsOptions;
  headers: Record<string, string>;
}

const warned = new Set<string>();

/** The shared block of a parsed config, the deprecated `timeoutMs` mapped to `timeout` (warned about once per type). */
export function resolveHttpSettings(config: HttpSettingsConfig, settings: Pick<DestinationSettings, 'log'>, defaultTimeoutMs?: number): ResolvedHttpSettings {
  let timeoutMs = config.timeout;
  if (config.timeoutMs !== undefined) {
    const key = `${config.type}.timeoutMs`;
    if (!warned.has(key)) {
      warned.add(key);
      settings.log.warn(
        { destinationType: config.type, option: 'timeoutMs' },
        config.timeout !== undefined
          ? `${config.type} destination: timeoutMs is deprecated and ignored since timeout is set; remove it`
          : `${config.type} destination: timeoutMs is deprecated; write timeout: ${config.timeoutMs}ms (a duration) instead`,
      );
    }
    timeoutMs ??= config.timeoutMs;
  }
  return {
    timeoutMs: timeoutMs ?? defaultTimeoutMs,
    tls: { caFile: config.caFile, insecureSkipVerify: config.insecureSkipVerify },
    headers: { ...config.headers },
  };
}
