/**
 * The join of a record with its tenant's reference data (users and sites, reference-table.ts):
 * names, e-mail, full name and site role of the acting, target and initiating users, where the
 * record lacks them (a record's own values are never overwritten), and the site's name and
 * content URL for the resource. Run by the mapper on both of its paths, before the tenant's
 * overrides, so that drop, redact and hash apply to what the lookup added too.
 */
import type { AttrValue } from './log-record.js';
import type { FoundUser, ReferenceTable } from './reference-table.js';
import { NamedUser } from './body-template.js';
import { ATTR_TARGET_NAME, RESOURCE_SITE_CONTENT_URL, RESOURCE_SITE_NAME } from './attribute-names.js';
import { ATTR_USER_EMAIL, ATTR_USER_FULL_NAME, ATTR_USER_NAME, ATTR_USER_ROLES } from './semantic-conventions.js';

/** A tenant's reference data as a mapper sees it: none configured, configured but not loaded yet, or loaded. */
export type TenantReference = { status: 'pending' } | { status: 'loaded'; table: ReferenceTable };

/** Where a user's facts go. */
export interface UserAttributeNames {
  /** Which kind of user (0 actor, 1 target, 2 initiating): where a writer keeps what it made of a user's attributes (FoundUser.encoded). */
  kind: 0 | 1 | 2;
  name: string;
  email: string;
  fullName: string;
  roles: string;
}

/** The acting user (`user.id`). */
export const ACTOR_USER: UserAttributeNames = { kind: 0, name: ATTR_USER_NAME, email: ATTR_USER_EMAIL, fullName: ATTR_USER_FULL_NAME, roles: ATTR_USER_ROLES };
/** The user the action was done to (`tableau.target.user.id`). */
export const TARGET_USER: UserAttributeNames = {
  kind: 1,
  name: 'tableau.target.user.name',
  email: 'tableau.target.user.email',
  fullName: 'tableau.target.user.full_name',
  roles: 'tableau.target.user.roles',
};
/** The initiating user of a site record, when not the actor (`tableau.initiating_user_luid`, impersonation). */
export const INITIATING_USER: UserAttributeNames = {
  kind: 2,
  name: 'tableau.initiating_user.name',
  email: 'tableau.initiating_user.email',
  fullName: 'tableau.initiating_user.full_name',
  roles: 'tableau.initiating_user.roles',
};
/** Resource attributes from the site's reference entry. */
export { RESOURCE_SITE_CONTENT_URL, RESOURCE_SITE_NAME };
/** The field of a site record that names its initiating user. */
export const INITIATING_USER_FIELD = 'initiatingUserLuid';

/** Attribute names the join adds to records (for the overrides' duplicate-name check and the docs). */
export const ENRICHED_ATTRIBUTES: readonly string[] = [TARGET_USER, INITIATING_USER].flatMap((n) => [n.name, n.email, n.fullName, n.roles]);

/**
 * The name of the acting user's attribute each target / initiating user attribute answers to in
 * the tenant's overrides: `hash: [user.email]` hashes every e-mail the lookup adds, not only the
 * actor's (name `tableau.target.user.email` to hash only that one).
 */
export const ENRICHED_ALIASES: ReadonlyMap<string, readonly string[]> = new Map([
  ...[TARGET_USER, INITIATING_USER].flatMap((n): Array<[string, readonly string[]]> => [
    [n.name, [ACTOR_USER.name]],
    [n.email, [ACTOR_USER.email]],
    [n.fullName, [ACTOR_USER.fullName]],
    [n.roles, [ACTOR_USER.roles]],
  ]),
  // a user target's name, when the lookup gave it: the target user's name
  [ATTR_TARGET_NAME, [TARGET_USER.name, ACTOR_USER.name]],
]);

/** Where the join writes (the mapper's attribute sink). */
export interface EnrichmentSink {
  has(name: string): boolean;
  set(name: string, value: AttrValue): void;
  /**
   * A user's name, e-mail and full name under `names` at once, as the sets below would write
   * them, when the record has none of them yet (the direct sink: encoded once per user and
   * kept); false when it cannot, and nothing is set (then they are set one by one).
   */
  setUser?(names: UserAttributeNames, u: FoundUser): boolean;
  /**
   * The user's roles on `siteLuid` under `names.roles`, as the set below would write them, when
   * the record has none yet (the direct sink: encoded once per user and site, kept with the
   * user); false when it cannot, and nothing is set.
   */
  setUserRoles?(names: UserAttributeNames, u: FoundUser, siteLuid: string): boolean;
}

/**
 * Add what the table knows of the record's users; returns whether any user was found. What it
 * reads of the record (positional: no object per record): `actor` and `target`, `user.id` and
 * `tableau.target.user.id` as mapped; `targetIsUser`, the type's target is that user (a record
 * without `tableau.target.name` gets the user's name there); `initiating`, the record's
 * `initiatingUserLuid` (site records); `siteLuid`, the record's site (its resource's
 * `tableau.site_luid`).
 */
export function enrichRecord(
  table: ReferenceTable,
  sink: EnrichmentSink,
  actor: AttrValue | undefined,
  target: AttrValue | undefined,
  targetIsUser: boolean,
  initiating: unknown,
  siteLuid: string | undefined,
): boolean {
  let found = false;
  if (typeof actor === 'string' && actor !== '') {
    const u = table.user(actor);
    if (u) {
      addUser(sink, ACTOR_USER, u, siteLuid);
      found = true;
    }
  }
  if (typeof target === 'string' && target !== '') {
    const u = table.user(target);
    if (u) {
      addUser(sink, TARGET_USER, u, siteLuid);
      if (targetIsUser && u.name !== undefined && !sink.has(ATTR_TARGET_NAME)) sink.set(ATTR_TARGET_NAME, u.name);
      found = true;
    }
  }
  // the initiating user is the actor except under impersonation: only then is it named apart
  if (typeof initiating === 'string' && initiating !== '' && initiating !== actor) {
    const u = table.user(initiating);
    if (u) {
      addUser(sink, INITIATING_USER, u, siteLuid);
      found = true;
    }
  }
  return found;
}

function addUser(sink: EnrichmentSink, names: UserAttributeNames, u: FoundUser, siteLuid: string | undefined): void {
  if (sink.setUser === undefined || !sink.setUser(names, u)) setUserEach(sink, names, u);
  if (siteLuid === undefined || (sink.setUserRoles !== undefined && sink.setUserRoles(names, u, siteLuid))) return;
  if (!sink.has(names.roles)) {
    const roles = u.rolesOn(siteLuid);
    if (roles !== undefined) sink.set(names.roles, roles as string[]);
  }
}

/** The user's name, e-mail and full name, each where the record lacks it. */
function setUserEach(sink: EnrichmentSink, names: UserAttributeNames, u: FoundUser): void {
  if (u.name !== undefined && !sink.has(names.name)) sink.set(names.name, u.name);
  if (u.email !== undefined && !sink.has(names.email)) sink.set(names.email, u.email);
  if (u.fullName !== undefined && !sink.has(names.fullName)) sink.set(names.fullName, u.fullName);
}

/** The resource attributes of a site the table knows (empty when it does not). */
export function siteResourceAttributes(table: ReferenceTable, siteLuid: string | undefined): Record<string, string> {
  if (siteLuid === undefined || siteLuid === '') return {};
  const s = table.site(siteLuid);
  if (!s) return {};
  const out: Record<string, string> = {};
  if (s.name !== undefined) out[RESOURCE_SITE_NAME] = s.name;
  if (s.contentUrl !== undefined) out[RESOURCE_SITE_CONTENT_URL] = s.contentUrl;
  return out;
}

/**
 * How a body names a user the table knows: by full name, else by name, each only when the
 * tenant's overrides leave that attribute alone (a name they drop, redact or hash must not reach
 * the body either); else by LUID, as without enrichment.
 */
export interface BodyNaming {
  fullName: boolean;
  name: boolean;
}

export function bodyNamingOf(alters: (name: string) => boolean): BodyNaming {
  const all = [ACTOR_USER, TARGET_USER, INITIATING_USER];
  return { fullName: !all.some((n) => alters(n.fullName)), name: !all.some((n) => alters(n.name)) };
}

/**
 * Whether a body placeholder can name a user: `{user}` (the actor), `initiatingUserLuid`, and
 * the fields of users, owners and contacts (`userLuid`, `newOwnerLuid`, `targetUserId`, …).
 * Only these are looked up (the others are never a user's LUID).
 */
export function namesAUser(placeholder: string): boolean {
  return placeholder === 'user' || /^(user|owner|contact)(Luid|Id)$/i.test(placeholder) || /(User|Owner|Contact)(Luid|Id)$/.test(placeholder);
}

/**
 * A body placeholder's value: the user's name when it is the LUID of a user the table knows (one
 * NamedUser per user and way of naming, kept with the user: not one per record).
 */
export function nameInBody(table: ReferenceTable, naming: BodyNaming, value: unknown): unknown {
  if (typeof value !== 'string' || value.length < 8 || value.length > 64 || !(naming.fullName || naming.name)) return value;
  const u = table.user(value);
  if (!u) return value;
  if (naming.fullName && u.fullName !== undefined) return (u.named[0] ??= new NamedUser(u.fullName));
  if (naming.name && u.name !== undefined) return (u.named[1] ??= new NamedUser(u.name));
  return value;
}
