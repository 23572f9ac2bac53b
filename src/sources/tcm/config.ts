/** The `tcm` source's configuration: its options, their defaults and rules, and its id. */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';
import { DEFAULT_TCM_MAX_RESPONSE_BYTES } from './tcm-client.js';
import { DOWNLOAD_HOST_PATTERN } from './download-guard.js';

export const DEFAULT_TCM_URL = 'https://cloudmanager.tableau.com';

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/** An ISO 8601 time with a zone (or a date, taken as UTC midnight); parsed to epoch milliseconds. */
const isoTimeSchema = z.union([z.string(), z.date()]).transform((v, ctx) => {
  const t = v instanceof Date ? v.getTime() : ISO_TIME.test(v.trim()) ? Date.parse(v.trim()) : NaN;
  if (!Number.isFinite(t)) {
    ctx.addIssue({ code: 'custom', message: `not an ISO 8601 time with a zone: ${JSON.stringify(v)} (e.g. 2026-01-31T00:00:00Z)` });
    return z.NEVER;
  }
  return t;
});

export const tcmSourceConfigSchema = z
  .object({
    type: z.literal('tcm'),
    /** Checkpoint key; defaults to `tcm:<tenantId>:<scope>`. */
    name: z.string().min(1).optional(),
    url: z.string().regex(/^https?:\/\/[^\s/]+/i, 'an http(s) URL').default(DEFAULT_TCM_URL),
    tenantId: z.string().min(1),
    /** Name of the environment variable holding the TCM PAT secret. */
    patEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name').optional(),
    /** File holding the TCM PAT secret (relative to the config file). */
    patFile: z.string().min(1).optional(),
    scope: z.enum(['tenant', 'sites', 'both']).default('tenant'),
    /** Site ids to read (default: every site the tenant lists). */
    sites: z.array(z.string().min(1)).min(1).optional(),
    /** Event types to list (one listing per type); default: all. */
    eventTypes: z.array(z.string().min(1)).min(1).optional(),
    /** First start: list files available since then (default 24 hours before the first start). */
    since: isoTimeSchema.optional(),
    /** Stop listing at this availability time. */
    until: isoTimeSchema.optional(),
    pollInterval: durationSchema.default(5 * 60_000),
    maxRequestsPerSecond: z.number().positive().max(1000).default(5),
    /** How late the API may list a file after its availability time: each poll re-lists this much before the position. */
    overlap: durationSchema.default(15 * 60_000),
    /** Listing stops after the window in which this many files were listed (a backlog is read in parts). */
    maxFilesPerPoll: z.number().int().positive().default(10_000),
    /**
     * Download hosts trusted although they resolve to non-public addresses (loopback, private,
     * link-local…), e.g. an S3 VPC endpoint: `host`, `host:port` or `*.suffix`. Default none.
     */
    downloadHosts: z.array(z.string().regex(DOWNLOAD_HOST_PATTERN, 'a host, host:port or *.suffix')).default([]),
    /** Largest TCM API response read (listings, URL batches, sign-in), in bytes. */
    maxResponseBytes: z.number().int().min(1024).default(DEFAULT_TCM_MAX_RESPONSE_BYTES),
  })
  .strict()
  .superRefine((c, ctx) => {
    if ((c.patEnv === undefined) === (c.patFile === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['patEnv'], message: 'give exactly one of patEnv (environment variable name) or patFile (file path) for the TCM personal access token' });
    }
    if (c.sites && c.scope === 'tenant') {
      ctx.addIssue({ code: 'custom', path: ['sites'], message: "sites applies to scope 'sites' or 'both'" });
    }
    if (c.since !== undefined && c.until !== undefined && c.until <= c.since) {
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'until must be after since' });
    }
  });
export type TcmSourceConfig = z.infer<typeof tcmSourceConfigSchema>;

/** The source's id (its checkpoint key): `name`, else `tcm:<tenantId>:<scope>`. */
export function tcmSourceId(config: Pick<TcmSourceConfig, 'name' | 'tenantId' | 'scope'>): string {
  return config.name ?? `tcm:${config.tenantId}:${config.scope}`;
}
