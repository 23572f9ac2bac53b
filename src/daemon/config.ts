/**
 * The daemon's configuration file (YAML, validated with zod, `${VAR}` from the environment):
 *
 *   state: { dir: ./.state }
 *   server: { address: 127.0.0.1:9464 }      # /healthz, /readyz, /metrics (or enabled: false)
 *   tenants:
 *     - id: acme
 *       sources:      [ { type: directory, path: ./examples/activity-log } ]
 *       destinations: [ { type: otlp, endpoint: http://127.0.0.1:4318 } ]
 *
 * Relative paths are resolved against the config file's directory.
 */
import { z } from 'zod';
import { dirname, resolve } from 'node:path';
import { sourceConfigSchema } from '../sources/source-registry.js';
import { destinationConfigSchema } from '../export/destination-registry.js';
import { parseYaml, readTextFile, validateYaml } from '../core/yaml-file.js';
import { substituteEnvInYaml } from '../core/env-substitution.js';
import { durationSchema } from '../core/duration.js';
import { parseListenAddress } from './http-server.js';
import { parseCidr } from './address-ranges.js';
import { enrichmentConfigSchema, enrichmentTcm } from './enrichment-config.js';
import { RESERVED_RESOURCE_ATTRIBUTES } from '../mapping/attribute-names.js';

/** Tenant ids name directories under the state dir: no path separators, no dot names. */
export const tenantIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, 'tenant ids are 1-63 letters, digits, dots, dashes and underscores, starting with a letter or digit');

/** A tenant's `resource:` block: `service.name`, Tableau's tenant id, further resource attributes. */
export const tenantResourceSchema = z
  .object({
    /** `service.name` of the tenant's records instead of the default (tableau-cloud for site events, tableau-cloud-manager for tenant events); a source that sets its own (tableau-server) keeps it. */
    serviceName: z.string().min(1).optional(),
    /** Tableau's tenant id (`tableau.tenant.id`) for records whose source does not know it (S3, directory); the tcm source sets its own tenantId. */
    tableauTenantId: z.string().min(1).optional(),
    /** Further resource attributes, e.g. deployment.environment.name: production. */
    attributes: z
      .record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()]))
      .superRefine((attrs, ctx) => {
        for (const name of Object.keys(attrs)) {
          if (RESERVED_RESOURCE_ATTRIBUTES.includes(name)) ctx.addIssue({ code: 'custom', path: [name], message: `'${name}' is set by the daemon${name === 'service.name' ? ' (use resource.serviceName)' : name === 'tableau.tenant.id' ? ' (use resource.tableauTenantId)' : ''}` });
        }
      })
      .optional(),
  })
  .strict();

export const tenantConfigSchema = z
  .object({
    id: tenantIdSchema,
    sources: z.array(sourceConfigSchema).min(1, 'a tenant needs at least one source'),
    destinations: z.array(destinationConfigSchema).min(1, 'a tenant needs at least one destination'),
    /** Per-tenant mapping overrides file. */
    mappings: z.string().min(1).optional(),
    /** Users and sites records are enriched with (docs/enrichment.md). */
    enrichment: enrichmentConfigSchema.optional(),
    /** What the OTel resource of the tenant's records carries besides what the mapping puts there. */
    resource: tenantResourceSchema.optional(),
  })
  .strict();
export type TenantConfig = z.infer<typeof tenantConfigSchema>;

export const pipelineConfigSchema = z
  .object({
    batchSize: z.number().int().min(1).max(100_000).default(1000),
    maxBatchBytes: z.number().int().min(1024).default(2 * 1024 * 1024),
    maxInFlightBatches: z.number().int().min(1).max(64).default(8),
    /** Raw bytes of the batches in flight together (16 MiB: eight full batches of the default size); a larger batch goes alone. */
    maxInFlightBytes: z.number().int().min(1024).default(16 * 1024 * 1024),
    maxLineBytes: z.number().int().min(1024).default(16 * 1024 * 1024),
    /** Decompressed bytes one object may have (default 16 GiB); the rest of a bigger one is dead-lettered. */
    maxObjectBytes: z.number().int().min(1024).default(16 * 1024 ** 3),
    /** Lines one object may have, blank lines included (default 50 000 000); the rest is dead-lettered. */
    maxObjectLines: z.number().int().min(1).default(50_000_000),
    /** How long one batch is retried before the destination counts as unreachable (default: forever in the daemon, 5m with --once). */
    retryFor: durationSchema.optional(),
    checkpointInterval: durationSchema.default(0),
    /** Encode worker threads (parse, map, encode); 0 runs them in the main thread. Default: one fewer than the cores the process may use, a cgroup CPU quota counting (at least 1, at most 4). */
    workers: z.number().int().min(0).max(16).optional(),
    /** A record with more fields than this (nested ones and array items count) is dead-lettered. */
    maxAttributesPerRecord: z.number().int().min(16).max(1_000_000).default(5000),
  })
  .strict();

/** `host:port` the HTTP endpoints (/healthz, /readyz, /metrics) listen on. */
export const listenAddressSchema = z.string().refine((v) => parseListenAddress(v) !== undefined, {
  message: 'an address is host:port, e.g. 127.0.0.1:9464, 0.0.0.0:9464, [::]:9464 or :9464 (every interface)',
});

export const serverConfigSchema = z
  .object({
    /** false: no HTTP endpoints. */
    enabled: z.boolean().default(true),
    /** Default: the TAO_LISTEN environment variable, else 127.0.0.1:9464. `--listen` overrides it. */
    address: listenAddressSchema.optional(),
    /** Who gets /readyz's detail (tenant ids, source names, error excerpts): callers in readyDetailFrom (`loopback`, the default), all, none; others get the status only. */
    readyDetail: z.enum(['loopback', 'all', 'none']).default('loopback'),
    /** The caller ranges (CIDR) of `readyDetail: loopback`; default 127.0.0.0/8 and ::1/128. */
    readyDetailFrom: z
      .array(
        z.string().superRefine((v, ctx) => {
          const c = parseCidr(v);
          if (typeof c === 'string') ctx.addIssue({ code: 'custom', message: c });
        }),
      )
      .min(1, 'at least one range (or readyDetail: none)')
      .optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.readyDetailFrom !== undefined && s.readyDetail !== 'loopback') ctx.addIssue({ code: 'custom', path: ['readyDetailFrom'], message: `readyDetailFrom applies to readyDetail: loopback only, not ${s.readyDetail}` });
  });
export type ServerConfig = z.infer<typeof serverConfigSchema>;

export const configSchema = z
  .object({
    state: z.object({ dir: z.string().min(1).default('./.state') }).strict().default({ dir: './.state' }),
    /** A directory of mapping files to use instead of the bundled `mappings/`. */
    mappingsDir: z.string().min(1).optional(),
    pipeline: pipelineConfigSchema.default(() => pipelineConfigSchema.parse({})),
    /** The HTTP endpoints of `run` (not of `run --once`, unless `--listen` is given). */
    server: serverConfigSchema.default({ enabled: true, readyDetail: 'loopback' }),
    tenants: z.array(tenantConfigSchema).min(1, 'at least one tenant is needed'),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.tenants.forEach((t, i) => {
      if (seen.has(t.id)) ctx.addIssue({ code: 'custom', path: ['tenants', i, 'id'], message: `duplicate tenant id '${t.id}'` });
      seen.add(t.id);
      const tcm = t.enrichment ? enrichmentTcm(t.enrichment, t.sources) : undefined;
      if (typeof tcm === 'string') ctx.addIssue({ code: 'custom', path: ['tenants', i, 'enrichment', ...(t.enrichment?.tcm ? ['tcm'] : [])], message: tcm });
    });
  });
export type DaemonConfig = z.infer<typeof configSchema>;

export interface LoadedConfig {
  file: string;
  baseDir: string;
  config: DaemonConfig;
}

export function parseConfig(file: string, text: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const parsed = parseYaml(file, text);
  const config = validateYaml(parsed, configSchema, substituteEnvInYaml(parsed, env));
  return { file, baseDir: dirname(resolve(file)), config };
}

export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return parseConfig(file, readTextFile(file), env);
}
