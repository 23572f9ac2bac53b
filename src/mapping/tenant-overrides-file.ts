/**
 * A tenant's overrides file (`mappings:` in the config): its schema, its loading (YAML, with
 * `${VAR}` from the environment, errors naming file and line) and its check against the catalog.
 * Runs in the main thread only; the encode workers get the validated content (`TenantOverrides.file`)
 * and compile it (tenant-overrides.ts).
 */
import { z } from 'zod';
import { severitySchema } from './mapping-file-schema.js';
import { FileError, parseYaml, positionOf, readTextFile, validateYaml } from '../core/yaml-file.js';
import { substituteEnvInYaml } from '../core/env-substitution.js';
import { outputNamesOf, type Catalog } from './catalog.js';
import { ATTR_EVENT_SUB_TYPE, DERIVED_ATTRIBUTES, RESERVED_RESOURCE_ATTRIBUTES } from './attribute-names.js';
import { ATTR_HTTP_REQUEST_METHOD_ORIGINAL, ATTR_USER_ROLES } from './semantic-conventions.js';
import { ENRICHED_ATTRIBUTES } from './enrichment.js';
import { TenantOverrides } from './tenant-overrides.js';

const nameList = z.array(z.string().min(1)).default([]);

export const overridesFileSchema = z
  .object({
    eventTypes: z
      .object({
        /** Only these event types (globs) are exported; default all. */
        keep: z.array(z.string().min(1)).optional(),
        /** These event types (globs) are dropped (counted as dropped-by-override). */
        drop: nameList,
      })
      .strict()
      .optional(),
    attributes: z
      .object({
        drop: nameList,
        redact: nameList,
        hash: nameList,
        rename: z.record(z.string().min(1), z.string().min(1)).default({}),
      })
      .strict()
      .optional(),
    hashKey: z.string().min(16, 'use a key of at least 16 characters').optional(),
    static: z.record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()])).optional(),
    severity: z.record(z.string().min(1), severitySchema).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    for (const name of Object.keys(o.static ?? {})) {
      if (RESERVED_RESOURCE_ATTRIBUTES.includes(name)) ctx.addIssue({ code: 'custom', path: ['static', name], message: `'${name}' is a resource attribute the daemon sets (service.name and Tableau's tenant id come from the tenant's resource: block)` });
    }
    if ((o.attributes?.hash.length ?? 0) > 0 && !o.hashKey) {
      ctx.addIssue({ code: 'custom', path: ['hashKey'], message: 'attributes.hash needs a hashKey (e.g. hashKey: ${PII_HASH_KEY})' });
    }
    const targets = new Map<string, string>();
    for (const [from, to] of Object.entries(o.attributes?.rename ?? {})) {
      const previous = targets.get(to);
      if (previous) ctx.addIssue({ code: 'custom', path: ['attributes', 'rename', from], message: `'${from}' and '${previous}' would both be emitted as '${to}'` });
      targets.set(to, from);
      if (o.static && to in o.static) ctx.addIssue({ code: 'custom', path: ['attributes', 'rename', from], message: `'${to}' is also a static attribute: one name emitted twice` });
    }
  });
export type OverridesFile = z.infer<typeof overridesFileSchema>;

export function loadOverrides(file: string, env: NodeJS.ProcessEnv = process.env): TenantOverrides {
  const parsed = parseYaml(file, readTextFile(file));
  const value = substituteEnvInYaml(parsed, env, parsed.value ?? {});
  return new TenantOverrides(validateYaml(parsed, overridesFileSchema, value), { file, position: (p) => positionOf(parsed, p) });
}

/**
 * A rename target or static attribute must not be a name the mapping already emits: the
 * record would carry one attribute name twice. Throws a FileError naming the overrides file.
 */
export function checkOverridesAgainstCatalog(overrides: TenantOverrides, catalog: Catalog): void {
  const emitted = new Set<string>([...DERIVED_ATTRIBUTES, ATTR_HTTP_REQUEST_METHOD_ORIGINAL, ATTR_USER_ROLES, ATTR_EVENT_SUB_TYPE, ...ENRICHED_ATTRIBUTES]);
  for (const family of ['site', 'tenant'] as const) for (const target of Object.values(catalog.defaults[family].semanticConventions)) emitted.add(target);
  for (const entry of catalog.eventTypes.values()) for (const out of outputNamesOf(entry, entry.allAttributes, catalog.defaults).values()) emitted.add(out);
  const problems: string[] = [];
  for (const { name, path } of overrides.emittedNames()) {
    if (emitted.has(name)) problems.push(`${overrides.origin?.position(path) ?? '1:1'}: ${path.join('.')}: '${name}' is already emitted by the mapping: one attribute name would be emitted twice`);
  }
  if (problems.length > 0) throw new FileError(overrides.origin?.file ?? '<overrides>', problems);
}
