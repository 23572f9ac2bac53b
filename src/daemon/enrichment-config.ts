/**
 * A tenant's `enrichment:` block (docs/enrichment.md): where its users and sites come from, how
 * often they are refreshed, how long the sources wait for the first load, which fields records
 * gain.
 *
 *   enrichment:
 *     users: tcm                    # or { file: ./lookup/users.csv }  (CSV or NDJSON)
 *     sites: tcm                    # or { file: ./lookup/sites.ndjson }
 *     tcm: { source: tcm-main }     # the TCM connection: a tcm source of this tenant (its url,
 *                                   # tenantId, PAT, session and rate limit), or its own
 *                                   # url / tenantId / patEnv | patFile; default: the tenant's only tcm source
 *     refreshInterval: 4h           # TCM lists fetched again
 *     fileCheckInterval: 30s        # lookup files checked for changes
 *     initialWait: 30s              # records are mapped after the first load, or after this
 *     fields: [name, email, fullName, siteRole, siteName, siteContentUrl]   # default: all
 */
import { z } from 'zod';
import { durationSchema } from '../core/duration.js';
import { sourceId, type SourceConfig } from '../sources/source-registry.js';
import { DEFAULT_TCM_URL } from '../sources/tcm/config.js';
import { DEFAULT_TCM_MAX_RESPONSE_BYTES } from '../sources/tcm/tcm-client.js';
import { ENRICHMENT_FIELDS, SITE_FIELDS, USER_FIELDS, type EnrichmentField } from '../sources/reference-records.js';
import { lookupFormatOf, type LookupFormat } from '../sources/reference-lookup-file.js';

export const DEFAULT_REFRESH_INTERVAL_MS = 4 * 3_600_000;
export const DEFAULT_FILE_CHECK_INTERVAL_MS = 30_000;
export const DEFAULT_INITIAL_WAIT_MS = 30_000;
export const DEFAULT_MAX_USERS = 500_000;
export const DEFAULT_MAX_SITES = 50_000;

const lookupFileSchema = z
  .object({
    /** Relative to the config file. */
    file: z.string().min(1),
    /** Default: from the extension (.csv; .ndjson, .jsonl, .json). */
    format: z.enum(['csv', 'ndjson']).optional(),
  })
  .strict();

export type ReferenceFrom = { from: 'tcm' } | { from: 'file'; file: string; format: LookupFormat };

/** `tcm`, or `{ file, format? }`. */
const referenceFromSchema = z.unknown().transform((v, ctx): ReferenceFrom => {
  if (v === 'tcm') return { from: 'tcm' };
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const r = lookupFileSchema.safeParse(v);
    if (r.success) {
      const format = r.data.format ?? lookupFormatOf(r.data.file);
      if (format) return { from: 'file', file: r.data.file, format };
      ctx.addIssue({ code: 'custom', path: ['format'], message: `cannot tell the format of ${r.data.file} from its name: give format: csv or format: ndjson` });
      return z.NEVER;
    }
    for (const issue of r.error.issues) {
      const message = issue.code === 'unrecognized_keys' ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')} (a lookup file is { file, format? })` : issue.message;
      ctx.addIssue({ code: 'custom', path: issue.path as PropertyKey[] as (string | number)[], message });
    }
    return z.NEVER;
  }
  ctx.addIssue({ code: 'custom', message: `expected tcm or { file: <path> }, got ${JSON.stringify(v)}` });
  return z.NEVER;
});

const tcmConnectionSchema = z
  .object({
    /** A tcm source of the same tenant, by id (its `name`, else `tcm:<tenantId>:<scope>`): its connection is shared. */
    source: z.string().min(1).optional(),
    url: z.string().regex(/^https?:\/\/[^\s/]+/i, 'an http(s) URL').optional(),
    tenantId: z.string().min(1).optional(),
    patEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name').optional(),
    patFile: z.string().min(1).optional(),
    maxRequestsPerSecond: z.number().positive().max(1000).optional(),
    maxResponseBytes: z.number().int().min(1024).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const own = (['url', 'tenantId', 'patEnv', 'patFile', 'maxRequestsPerSecond', 'maxResponseBytes'] as const).filter((k) => c[k] !== undefined);
    if (c.source !== undefined) {
      if (own.length > 0) ctx.addIssue({ code: 'custom', path: [own[0]!], message: `tcm.source shares that source's connection: ${own.join(', ')} cannot be given with it` });
      return;
    }
    if (c.tenantId === undefined) ctx.addIssue({ code: 'custom', path: ['tenantId'], message: 'give source (a tcm source of this tenant) or tenantId with patEnv or patFile' });
    if ((c.patEnv === undefined) === (c.patFile === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['patEnv'], message: 'give exactly one of patEnv (environment variable name) or patFile (file path) for the TCM personal access token' });
    }
  });

export const enrichmentConfigSchema = z
  .object({
    users: referenceFromSchema.optional(),
    sites: referenceFromSchema.optional(),
    tcm: tcmConnectionSchema.optional(),
    refreshInterval: durationSchema.default(DEFAULT_REFRESH_INTERVAL_MS),
    fileCheckInterval: durationSchema.default(DEFAULT_FILE_CHECK_INTERVAL_MS),
    initialWait: durationSchema.default(DEFAULT_INITIAL_WAIT_MS),
    fields: z.array(z.enum(ENRICHMENT_FIELDS)).min(1).optional(),
    maxUsers: z.number().int().min(1).max(10_000_000).default(DEFAULT_MAX_USERS),
    maxSites: z.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_SITES),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.users === undefined && c.sites === undefined) ctx.addIssue({ code: 'custom', path: ['users'], message: 'enrichment needs users, sites or both (tcm or { file })' });
    if (c.refreshInterval < 1000 || c.refreshInterval > 7 * 86_400_000) ctx.addIssue({ code: 'custom', path: ['refreshInterval'], message: 'from 1s to 7d' });
    if (c.fileCheckInterval < 100 || c.fileCheckInterval > 86_400_000) ctx.addIssue({ code: 'custom', path: ['fileCheckInterval'], message: 'from 100ms to 1d' });
    if (c.initialWait > 3_600_000) ctx.addIssue({ code: 'custom', path: ['initialWait'], message: 'at most 1h (the sources wait that long for the first load)' });
    const fields = new Set<EnrichmentField>(c.fields ?? ENRICHMENT_FIELDS);
    if (c.users !== undefined && !USER_FIELDS.some((f) => fields.has(f))) ctx.addIssue({ code: 'custom', path: ['fields'], message: `users are loaded but fields names none of ${USER_FIELDS.join(', ')}` });
    if (c.sites !== undefined && !SITE_FIELDS.some((f) => fields.has(f))) ctx.addIssue({ code: 'custom', path: ['fields'], message: `sites are loaded but fields names none of ${SITE_FIELDS.join(', ')}` });
    const usesTcm = c.users?.from === 'tcm' || c.sites?.from === 'tcm';
    if (c.tcm !== undefined && !usesTcm) ctx.addIssue({ code: 'custom', path: ['tcm'], message: 'tcm applies when users or sites is tcm' });
  });
export type EnrichmentConfig = z.infer<typeof enrichmentConfigSchema>;

/** The TCM connection enrichment uses: a tcm source of the tenant (by id), or its own. */
export type EnrichmentTcm =
  | { kind: 'source'; sourceId: string; tenantId: string }
  | { kind: 'own'; url: string; tenantId: string; patEnv?: string; patFile?: string; maxRequestsPerSecond: number; maxResponseBytes: number };

/** Own connections are slower than a source by default: reference lists are a few pages every few hours. */
export const ENRICHMENT_TCM_REQUESTS_PER_SECOND = 2;

/**
 * Which TCM connection the tenant's enrichment uses, or an error message: `tcm.source` names a
 * tcm source of the tenant; no `tcm:` block means the tenant's only tcm source.
 */
export function enrichmentTcm(config: EnrichmentConfig, sources: readonly SourceConfig[]): EnrichmentTcm | string | undefined {
  if (config.users?.from !== 'tcm' && config.sites?.from !== 'tcm') return undefined;
  const tcmSources = sources.filter((s): s is Extract<SourceConfig, { type: 'tcm' }> => s.type === 'tcm');
  const c = config.tcm;
  if (c && c.source === undefined) {
    return {
      kind: 'own',
      url: c.url ?? DEFAULT_TCM_URL,
      tenantId: c.tenantId!,
      ...(c.patEnv !== undefined ? { patEnv: c.patEnv } : {}),
      ...(c.patFile !== undefined ? { patFile: c.patFile } : {}),
      maxRequestsPerSecond: c.maxRequestsPerSecond ?? ENRICHMENT_TCM_REQUESTS_PER_SECOND,
      maxResponseBytes: c.maxResponseBytes ?? DEFAULT_TCM_MAX_RESPONSE_BYTES,
    };
  }
  const ids = tcmSources.map((s) => sourceId(s));
  if (c?.source !== undefined) {
    const i = ids.indexOf(c.source);
    if (i < 0) return `tcm.source '${c.source}' is not a tcm source of this tenant${ids.length ? ` (its tcm sources: ${ids.join(', ')})` : ' (it has none)'}`;
    return { kind: 'source', sourceId: c.source, tenantId: tcmSources[i]!.tenantId };
  }
  if (tcmSources.length === 1) return { kind: 'source', sourceId: ids[0]!, tenantId: tcmSources[0]!.tenantId };
  if (tcmSources.length === 0) return 'users or sites is tcm but the tenant has no tcm source: give tcm: { url, tenantId, patEnv | patFile }, or use a lookup file';
  return `the tenant has ${tcmSources.length} tcm sources (${ids.join(', ')}): name one with tcm: { source: <id> }`;
}

/** The fields records gain (all when `fields` is not given). */
export function enrichmentFields(config: EnrichmentConfig): ReadonlySet<EnrichmentField> {
  return new Set(config.fields ?? ENRICHMENT_FIELDS);
}
