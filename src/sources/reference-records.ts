/**
 * Reference records (a tenant's users and sites, for enrichment) from whatever shape they come
 * in: TCM's `users` / `sites` items, or the rows of a lookup file (CSV or NDJSON). TCM does not
 * publish the exact user fields, so every field is looked for under the names public clients
 * and Tableau's own APIs use, in this order; what is missing is simply absent.
 *
 * - user id (the LUID): `userId`, `userLuid`, `userUUID`, `userUuid`, `luid`, `id`
 * - user name: `userName`, `username`, `name`
 * - e-mail: `email`, `emailAddress`, `mail`
 * - full name: `fullName`, `displayName`, `userDisplayName`, else `firstName`/`givenName` +
 *   `lastName`/`familyName`
 * - site roles: `siteRoles` as `[{siteId|siteUUID|siteLuid, siteRole|role}]`, as an object
 *   `{<site LUID>: <role>}`, or as text `<site LUID>=<role>;…` (lookup files); or one
 *   `siteId` + `siteRole` pair (a CSV row per user and site)
 * - site id (the LUID): `siteUUID`, `siteUuid`, `siteLuid`, `luid`, `siteId`, `id`
 * - site name: `name`, `siteName`, `displayName`; content URL: `contentUrl`, `urlName`,
 *   `siteContentUrl`, `siteUri`
 *
 * {@link FieldCensus} counts which top-level fields the items had (bounded), so the daemon can log
 * once what a tenant's answers really contain.
 */
import type { SiteReference, UserReference } from '../mapping/reference-data.js';

export type ReferenceKind = 'users' | 'sites';

/** The fields enrichment can add; `fields:` of the tenant's `enrichment:` picks from these. */
export const USER_FIELDS = ['name', 'email', 'fullName', 'siteRole'] as const;
export const SITE_FIELDS = ['siteName', 'siteContentUrl'] as const;
export const ENRICHMENT_FIELDS = [...USER_FIELDS, ...SITE_FIELDS] as const;
export type EnrichmentField = (typeof ENRICHMENT_FIELDS)[number];

const USER_ID_KEYS = ['userId', 'userLuid', 'userUUID', 'userUuid', 'luid', 'id'];
const USER_NAME_KEYS = ['userName', 'username', 'name'];
const EMAIL_KEYS = ['email', 'emailAddress', 'mail'];
const FULL_NAME_KEYS = ['fullName', 'displayName', 'userDisplayName'];
const FIRST_NAME_KEYS = ['firstName', 'givenName'];
const LAST_NAME_KEYS = ['lastName', 'familyName'];
const ROLE_SITE_KEYS = ['siteId', 'siteUUID', 'siteUuid', 'siteLuid', 'id'];
const ROLE_KEYS = ['siteRole', 'role'];
const SITE_ID_KEYS = ['siteUUID', 'siteUuid', 'siteLuid', 'luid', 'siteId', 'id'];
const SITE_NAME_KEYS = ['name', 'siteName', 'displayName'];
const CONTENT_URL_KEYS = ['contentUrl', 'urlName', 'siteContentUrl', 'siteUri'];

/** Our field → the names it is read from (for the "fields found" log line). */
export const USER_FIELD_SOURCES: Readonly<Record<string, readonly string[]>> = {
  id: USER_ID_KEYS,
  name: USER_NAME_KEYS,
  email: EMAIL_KEYS,
  fullName: [...FULL_NAME_KEYS, ...FIRST_NAME_KEYS, ...LAST_NAME_KEYS],
  siteRole: ['siteRoles', 'siteRole'],
};
export const SITE_FIELD_SOURCES: Readonly<Record<string, readonly string[]>> = {
  id: SITE_ID_KEYS,
  siteName: SITE_NAME_KEYS,
  siteContentUrl: CONTENT_URL_KEYS,
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A non-empty string (numbers and booleans as text), trimmed; undefined otherwise. */
function text(v: unknown): string | undefined {
  if (typeof v === 'string') {
    const t = v.trim();
    return t === '' ? undefined : t;
  }
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

function first(item: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const k of keys) {
    const v = text(item[k]);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** At least one entry, and every site and role already what {@link text} makes of it (a trimmed, non-empty string). */
function cleanRoles(raw: Record<string, unknown>): boolean {
  let any = false;
  for (const site in raw) {
    if (!Object.hasOwn(raw, site) || text(site) !== site || text(raw[site]) !== raw[site]) return false;
    any = true;
  }
  return any;
}

function siteRolesOf(item: Record<string, unknown>): Record<string, string> | undefined {
  const roles: Record<string, string> = {};
  let any = false;
  const put = (site: string | undefined, role: string | undefined): void => {
    if (site === undefined || role === undefined) return;
    roles[site] = role;
    any = true;
  };
  const raw = item.siteRoles;
  if (Array.isArray(raw)) {
    for (const r of raw) if (isRecord(r)) put(first(r, ROLE_SITE_KEYS), first(r, ROLE_KEYS));
  } else if (isRecord(raw)) {
    // as a parsed line has it (every site and role a trimmed, non-empty string): that object
    // itself, not a copy (a copy adds its site LUIDs as properties one by one, a hidden class
    // step each: a tenth of a 200 000-user load)
    if (cleanRoles(raw)) return raw as Record<string, string>;
    for (const [site, role] of Object.entries(raw)) put(text(site), text(role));
  } else if (typeof raw === 'string') {
    for (const part of raw.split(/[;|]/)) {
      const at = part.indexOf('=');
      if (at > 0) put(text(part.slice(0, at)), text(part.slice(at + 1)));
    }
  }
  if (!any) put(first(item, ['siteId', 'siteUUID', 'siteLuid']), first(item, ['siteRole']));
  return any ? roles : undefined;
}

/** A user from one item; undefined when it has no id. */
export function userReferenceOf(item: Record<string, unknown>): UserReference | undefined {
  const id = first(item, USER_ID_KEYS);
  if (id === undefined) return undefined;
  const user: { -readonly [K in keyof UserReference]: UserReference[K] } = { id };
  const name = first(item, USER_NAME_KEYS);
  if (name !== undefined) user.name = name;
  const email = first(item, EMAIL_KEYS);
  if (email !== undefined) user.email = email;
  let fullName = first(item, FULL_NAME_KEYS);
  if (fullName === undefined) {
    const parts = [first(item, FIRST_NAME_KEYS), first(item, LAST_NAME_KEYS)].filter((p): p is string => p !== undefined);
    if (parts.length > 0) fullName = parts.join(' ');
  }
  if (fullName !== undefined) user.fullName = fullName;
  const roles = siteRolesOf(item);
  if (roles) user.siteRoles = roles;
  return user;
}

/** A site from one item; undefined when it has no id. */
export function siteReferenceOf(item: Record<string, unknown>): SiteReference | undefined {
  const id = first(item, SITE_ID_KEYS);
  if (id === undefined) return undefined;
  const site: { -readonly [K in keyof SiteReference]: SiteReference[K] } = { id };
  const name = first(item, SITE_NAME_KEYS);
  if (name !== undefined) site.name = name;
  const contentUrl = first(item, CONTENT_URL_KEYS);
  if (contentUrl !== undefined) site.contentUrl = contentUrl;
  return site;
}

/** Two rows of the same user (a lookup file with a row per user and site): the first value of each field wins, site roles are merged. */
export function mergeUsers(a: UserReference, b: UserReference): UserReference {
  const merged: { -readonly [K in keyof UserReference]: UserReference[K] } = { ...b, ...a };
  if (a.siteRoles || b.siteRoles) merged.siteRoles = { ...b.siteRoles, ...a.siteRoles };
  return merged;
}

/** Only the configured fields; undefined when nothing is left to add (the entry is not kept). */
export function selectUserFields(u: UserReference, fields: ReadonlySet<EnrichmentField>): UserReference | undefined {
  const out: { -readonly [K in keyof UserReference]: UserReference[K] } = { id: u.id };
  if (fields.has('name') && u.name !== undefined) out.name = u.name;
  if (fields.has('email') && u.email !== undefined) out.email = u.email;
  if (fields.has('fullName') && u.fullName !== undefined) out.fullName = u.fullName;
  if (fields.has('siteRole') && u.siteRoles !== undefined) out.siteRoles = u.siteRoles;
  return Object.keys(out).length > 1 ? out : undefined;
}

export function selectSiteFields(s: SiteReference, fields: ReadonlySet<EnrichmentField>): SiteReference | undefined {
  const out: { -readonly [K in keyof SiteReference]: SiteReference[K] } = { id: s.id };
  if (fields.has('siteName') && s.name !== undefined) out.name = s.name;
  if (fields.has('siteContentUrl') && s.contentUrl !== undefined) out.contentUrl = s.contentUrl;
  return Object.keys(out).length > 1 ? out : undefined;
}

/** Distinct top-level field names tracked at most (answers with more are not listed further). */
const MAX_CENSUS_FIELDS = 200;

/** Which top-level fields the items of one load had, and how many items had each. */
export class FieldCensus {
  private readonly counts = new Map<string, number>();
  items = 0;

  /** The census as plain data (to cross to another thread), and back. */
  toData(): { items: number; counts: Array<[string, number]> } {
    return { items: this.items, counts: [...this.counts] };
  }

  static fromData(data: { items: number; counts: Array<[string, number]> }): FieldCensus {
    const c = new FieldCensus();
    c.items = data.items;
    for (const [k, n] of data.counts) c.counts.set(k, n);
    return c;
  }

  add(item: Record<string, unknown>): void {
    this.items++;
    // for…in, not Object.entries: no pair arrays per item (a tenth of a 200 000-user load)
    for (const k in item) {
      if (!Object.hasOwn(item, k)) continue;
      const v = item[k];
      if (v === null || v === undefined || v === '') continue;
      const n = this.counts.get(k);
      if (n !== undefined) this.counts.set(k, n + 1);
      else if (this.counts.size < MAX_CENSUS_FIELDS) this.counts.set(k, 1);
    }
  }

  /** Field names seen, sorted. */
  names(): string[] {
    return [...this.counts.keys()].sort();
  }

  /** Of our fields (USER_FIELD_SOURCES or SITE_FIELD_SOURCES): those no item had under any of their names. */
  missing(sources: Readonly<Record<string, readonly string[]>>): string[] {
    return Object.entries(sources)
      .filter(([, names]) => !names.some((n) => this.counts.has(n)))
      .map(([field]) => field);
  }
}
