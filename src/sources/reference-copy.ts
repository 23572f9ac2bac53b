/**
 * A tenant's users and sites as the daemon keeps them between loads: only the configured fields,
 * entries with nothing to add left out, rows of the same id merged (the first value of a field
 * wins, site roles are merged), and the users in a compact form.
 *
 * 200 000 users as objects (`{id, name, email, fullName, siteRoles: {<site>: <role>}}`) take
 * about 100 MB of heap: every user's own object, four strings, and a site-roles object whose keys
 * differ from user to user (so V8 builds a hidden class for almost each of them). A
 * {@link UserTable} keeps one string per user instead, with the site LUIDs and role names as
 * indexes into two shared lists (about a third of that), and builds the objects only when they
 * are handed on ({@link UserTable.toReferences}: to the encode pool, which keeps its own copy).
 */
import type { SiteReference, UserReference } from '../mapping/reference-data.js';
import { mergeUsers, selectSiteFields, selectUserFields, type EnrichmentField } from './reference-records.js';

/** What the loaders put entries into. */
export interface ReferenceCollector<T> {
  add(item: T): void;
  /** Distinct ids so far. */
  readonly size: number;
}

const SEP = '\u001f';
const SEP_RE = /\u001f/g;

/** The users of one load, compact. */
export class UserTable {
  constructor(
    private readonly rows: readonly string[],
    private readonly sites: readonly string[],
    private readonly roles: readonly string[],
  ) {}

  get length(): number {
    return this.rows.length;
  }

  /** The users as objects (a fresh array each call; users with the same site roles share one frozen roles object). */
  toReferences(): UserReference[] {
    const shared = new Map<string, Readonly<Record<string, string>>>();
    return this.rows.map((row) => decodeUser(row, this.sites, this.roles, shared));
  }

  /** The users as objects one at a time (the one iterating keeps what it needs; no array of them all). */
  *references(): Generator<UserReference> {
    const shared = new Map<string, Readonly<Record<string, string>>>();
    for (const row of this.rows) yield decodeUser(row, this.sites, this.roles, shared);
  }

}

/** One user from its row; `shared` (when given) hands out one frozen roles object per distinct set of site roles. */
function decodeUser(row: string, sites: readonly string[], roles: readonly string[], shared?: Map<string, Readonly<Record<string, string>>>): UserReference {
  const [id, name, email, fullName, siteRoles] = row.split(SEP) as [string, string, string, string, string];
  const u: { -readonly [K in keyof UserReference]: UserReference[K] } = { id };
  if (name) u.name = name;
  if (email) u.email = email;
  if (fullName) u.fullName = fullName;
  if (siteRoles) {
    let r = shared?.get(siteRoles);
    if (!r) {
      const built: Record<string, string> = {};
      for (const pair of siteRoles.split(',')) {
        const at = pair.indexOf(':');
        built[sites[parseInt(pair.slice(0, at), 36)]!] = roles[parseInt(pair.slice(at + 1), 36)]!;
      }
      r = shared ? Object.freeze(built) : built;
      shared?.set(siteRoles, r);
    }
    u.siteRoles = r;
  }
  return u;
}

/** Builds a {@link UserTable} entry by entry (selecting the fields as they come). */
export class UserTableBuilder implements ReferenceCollector<UserReference> {
  private readonly byId = new Map<string, string>();
  private readonly siteIndex = new Map<string, number>();
  private readonly roleIndex = new Map<string, number>();
  private readonly sites: string[] = [];
  private readonly roles: string[] = [];

  constructor(private readonly fields: ReadonlySet<EnrichmentField>) {}

  get size(): number {
    return this.byId.size;
  }

  add(item: UserReference): void {
    const selected = selectUserFields(item, this.fields);
    if (!selected) return;
    const had = this.byId.get(selected.id);
    const user = had === undefined ? selected : mergeUsers(decodeUser(had, this.sites, this.roles), selected);
    this.byId.set(user.id, this.encode(user));
  }

  build(): UserTable {
    return new UserTable([...this.byId.values()], this.sites, this.roles);
  }

  private encode(u: UserReference): string {
    let roles = '';
    if (u.siteRoles) {
      const pairs: string[] = [];
      for (const [site, role] of Object.entries(u.siteRoles)) pairs.push(`${index(this.siteIndex, this.sites, site).toString(36)}:${index(this.roleIndex, this.roles, role).toString(36)}`);
      roles = pairs.join(',');
    }
    return [u.id, u.name ?? '', u.email ?? '', u.fullName ?? '', roles].map((v) => v.replace(SEP_RE, ' ')).join(SEP);
  }
}

function index(map: Map<string, number>, list: string[], value: string): number {
  let i = map.get(value);
  if (i === undefined) {
    i = list.length;
    list.push(value);
    map.set(value, i);
  }
  return i;
}

/** Builds the sites of one load (a few thousand at most: kept as objects). */
export class SiteListBuilder implements ReferenceCollector<SiteReference> {
  private readonly byId = new Map<string, SiteReference>();

  constructor(private readonly fields: ReadonlySet<EnrichmentField>) {}

  get size(): number {
    return this.byId.size;
  }

  add(item: SiteReference): void {
    const selected = selectSiteFields(item, this.fields);
    if (!selected) return;
    const had = this.byId.get(selected.id);
    this.byId.set(selected.id, had ? { ...selected, ...had } : selected);
  }

  build(): SiteReference[] {
    return [...this.byId.values()];
  }
}

/** One load's copy: the users (compact) or the sites. */
export type ReferenceCopy = { kind: 'users'; users: UserTable; length: number } | { kind: 'sites'; sites: readonly SiteReference[]; length: number };

/** A collector for one kind, and the copy it builds. */
export interface ReferenceBuilder extends ReferenceCollector<UserReference | SiteReference> {
  build(): ReferenceCopy;
}

export function referenceBuilder(kind: 'users' | 'sites', fields: ReadonlySet<EnrichmentField>): ReferenceBuilder {
  if (kind === 'users') {
    const b = new UserTableBuilder(fields);
    return {
      add: (item) => b.add(item as UserReference),
      get size() {
        return b.size;
      },
      build: () => {
        const users = b.build();
        return { kind, users, length: users.length };
      },
    };
  }
  const b = new SiteListBuilder(fields);
  return {
    add: (item) => b.add(item as SiteReference),
    get size() {
      return b.size;
    },
    build: () => {
      const sites = b.build();
      return { kind, sites, length: sites.length };
    },
  };
}
