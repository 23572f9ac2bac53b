/**
 * Per-tenant mapping overrides: the YAML file a tenant names with `mappings:` in the config,
 * applied after the default mapping, to that tenant's records only.
 *
 *   eventTypes: { drop: [vizql_http_request], keep: ["*"] }
 *   attributes:
 *     drop:   [tableau.licensing_role_name]
 *     redact: [url.query]                       # value becomes "[redacted]"
 *     hash:   [user.email, client.address]      # HMAC-SHA-256 (hex) with hashKey
 *     rename: { tableau.site_role_id: tableau.role }
 *   hashKey: ${PII_HASH_KEY}                    # from the environment; never logged
 *   static:  { deployment.environment.name: production, cost_center: "CC-1234" }
 *   severity: { "hist_delete_*": WARN }
 *
 * Attribute names are output names (after the default mapping); drop/redact/hash accept globs.
 * drop, redact and hash follow a record field wherever its value lands: a name matches the
 * attribute's output name, and also the field's Tableau name (`ipAddress`), the semantic-
 * convention name it maps to (`client.address`: also when another field of the record took
 * that name first and this one is emitted as `tableau.source_ip` or `tableau.raw.sourceIp`),
 * its generic name (`tableau.source_ip`) and the target attributes copied from it. So
 * `hash: [client.address]` hashes every address field of the record, not only the first.
 */
import { z } from 'zod';
import { createHmac } from 'node:crypto';
import { severitySchema, type SeverityName } from './mapping-file-schema.js';
import { globMatcher } from '../core/glob.js';
import { FileError, parseYaml, positionOf, readTextFile, validateYaml } from '../core/yaml-file.js';
import { substituteEnvInYaml } from '../core/env-substitution.js';
import type { AttrValue } from './log-record.js';
import { jsonText } from '../core/json-text.js';
import { outputNamesOf, type Catalog } from './catalog.js';
import { ATTR_EVENT_SUB_TYPE, DERIVED_ATTRIBUTES, RESERVED_RESOURCE_ATTRIBUTES } from './attribute-names.js';
import { ATTR_HTTP_REQUEST_METHOD_ORIGINAL, ATTR_USER_ROLES } from './semantic-conventions.js';

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

export const REDACTED = '[redacted]';

const NONE = 0;
const HASH = 1;
const REDACT = 2;
const DROP = 3;

/** The compiled overrides of one tenant. */
export class TenantOverrides {
  private readonly keepType: ((t: string) => boolean) | null;
  private readonly dropType: (t: string) => boolean;
  private readonly dropAttr: (n: string) => boolean;
  private readonly redactAttr: (n: string) => boolean;
  private readonly hashAttr: (n: string) => boolean;
  private readonly rename: ReadonlyArray<[string, string]>;
  private readonly staticAttrs: ReadonlyArray<[string, string | number | boolean]>;
  private readonly severity: ReadonlyArray<[(t: string) => boolean, SeverityName]>;
  private readonly typeCache = new Map<string, boolean>();
  private readonly actionCache = new Map<string, number>();
  readonly touchesAttributes: boolean;
  /** Anything to do per record at all (attribute operations; static attributes go on the resource). */
  readonly active: boolean;

  constructor(
    private readonly file: OverridesFile,
    /** Where the overrides came from, for errors found later (checks against the catalog). */
    readonly origin?: { file: string; position: (path: PropertyKey[]) => string },
  ) {
    this.keepType = file.eventTypes?.keep ? globMatcher(file.eventTypes.keep) : null;
    this.dropType = globMatcher(file.eventTypes?.drop ?? []);
    this.dropAttr = globMatcher(file.attributes?.drop ?? []);
    this.redactAttr = globMatcher(file.attributes?.redact ?? []);
    this.hashAttr = globMatcher(file.attributes?.hash ?? []);
    this.rename = Object.entries(file.attributes?.rename ?? {});
    this.staticAttrs = Object.entries(file.static ?? {});
    this.severity = Object.entries(file.severity ?? {}).map(([g, s]) => [globMatcher([g]), s]);
    const a = file.attributes;
    this.touchesAttributes = !!a && (a.drop.length + a.redact.length + a.hash.length + this.rename.length > 0);
    this.active = this.touchesAttributes;
  }

  static none(): TenantOverrides {
    return new TenantOverrides({});
  }

  /** Names this file renames to or adds (for the duplicate-name check against the catalog). */
  emittedNames(): Array<{ name: string; path: PropertyKey[] }> {
    return [
      ...this.rename.map(([from, to]) => ({ name: to, path: ['attributes', 'rename', from] as PropertyKey[] })),
      ...this.staticAttrs.map(([k]) => ({ name: k, path: ['static', k] as PropertyKey[] })),
    ];
  }

  /** The name an attribute leaves with, after a rename. */
  outputName(name: string): string {
    for (const [from, to] of this.rename) if (from === name) return to;
    return name;
  }

  keeps(eventType: string): boolean {
    let v = this.typeCache.get(eventType);
    if (v === undefined) {
      v = (this.keepType ? this.keepType(eventType) : true) && !this.dropType(eventType);
      if (this.typeCache.size < 10_000) this.typeCache.set(eventType, v);
    }
    return v;
  }

  severityFor(eventType: string): SeverityName | undefined {
    for (const [m, s] of this.severity) if (m(eventType)) return s;
    return undefined;
  }

  /** What drop/redact/hash say about one name (NONE, HASH, REDACT, DROP: the strongest wins). */
  private actionOf(name: string): number {
    let a = this.actionCache.get(name);
    if (a === undefined) {
      a = this.dropAttr(name) ? DROP : this.redactAttr(name) ? REDACT : this.hashAttr(name) ? HASH : NONE;
      if (this.actionCache.size < 10_000) this.actionCache.set(name, a);
    }
    return a;
  }

  /**
   * Applies drop, redact, hash, rename; mutates `attrs`.
   * `namesOf(outputName)` gives the other names the attribute answers to (the Tableau, semantic
   * convention and generic names of the field it came from), if any.
   */
  applyToAttributes(attrs: Record<string, AttrValue>, namesOf?: (outputName: string) => readonly string[] | undefined): void {
    if (this.touchesAttributes) {
      for (const name of Object.keys(attrs)) {
        let action = this.actionOf(name);
        if (action !== DROP && namesOf !== undefined) {
          for (const other of namesOf(name) ?? []) action = Math.max(action, this.actionOf(other));
        }
        if (action === DROP) delete attrs[name];
        else if (action === REDACT) attrs[name] = REDACTED;
        else if (action === HASH) attrs[name] = this.hmac(attrs[name]!);
      }
      for (const [from, to] of this.rename) {
        if (Object.hasOwn(attrs, from)) {
          attrs[to] = attrs[from]!;
          delete attrs[from];
        }
      }
    }
  }

  /** The `static:` attributes, for the resource of the tenant's records. */
  get staticAttributes(): ReadonlyArray<readonly [string, string | number | boolean]> {
    return this.staticAttrs;
  }

  private hmac(value: AttrValue): string {
    const text = typeof value === 'string' ? value : jsonText(value);
    return createHmac('sha256', this.file.hashKey!).update(text).digest('hex');
  }
}

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
  const emitted = new Set<string>([...DERIVED_ATTRIBUTES, ATTR_HTTP_REQUEST_METHOD_ORIGINAL, ATTR_USER_ROLES, ATTR_EVENT_SUB_TYPE]);
  for (const family of ['site', 'tenant'] as const) for (const target of Object.values(catalog.defaults[family].semanticConventions)) emitted.add(target);
  for (const entry of catalog.eventTypes.values()) for (const out of outputNamesOf(entry, entry.allAttributes, catalog.defaults).values()) emitted.add(out);
  const problems: string[] = [];
  for (const { name, path } of overrides.emittedNames()) {
    if (emitted.has(name)) problems.push(`${overrides.origin?.position(path) ?? '1:1'}: ${path.join('.')}: '${name}' is already emitted by the mapping: one attribute name would be emitted twice`);
  }
  if (problems.length > 0) throw new FileError(overrides.origin?.file ?? '<overrides>', problems);
}
