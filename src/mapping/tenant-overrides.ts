/**
 * A tenant's mapping overrides, compiled (the file, its schema and its loading:
 * tenant-overrides-file.ts): applied after the default mapping, to that tenant's records only.
 * This module runs in the encode workers, which get the file's validated content from the main
 * thread; it needs neither the YAML parser nor the schema library.
 *
 * The file, for reference:
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
import { createHmac } from 'node:crypto';
import type { SeverityName } from './mapping-file-schema.js';
import type { OverridesFile } from './tenant-overrides-file.js';
import { globMatcher } from '../core/glob.js';
import type { AttrValue } from './log-record.js';
import { jsonText } from '../core/json-text.js';

export type { OverridesFile };

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
    /** The file's content, validated (plain data: what the main thread hands the encode workers). */
    readonly file: OverridesFile,
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

  /** Whether drop, redact or hash apply to an attribute of this name (its value does not leave as it is). */
  alters(name: string): boolean {
    return this.touchesAttributes && this.actionOf(name) !== NONE;
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
