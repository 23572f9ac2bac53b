/**
 * A tenant's users and sites as the daemon keeps them between loads: only the configured fields,
 * entries with nothing to add left out, rows of the same id merged (the first value of a field
 * wins, site roles are merged), and the users in the workers' table form.
 *
 * 200 000 users as objects (`{id, name, email, fullName, siteRoles: {<site>: <role>}}`) take
 * about 100 MB of heap. A {@link UserTable} holds them as the users' part of the encode workers'
 * table instead (mapping/reference-table-builder.ts): written user by user into a
 * SharedArrayBuffer as a load reads them, the LUID hash slots filled as they come, and made the
 * workers' table in place (the sites added behind them), so a load never holds the users as
 * objects, as one string each, or twice as bytes.
 */
import type { SiteReference, UserReference } from '../mapping/reference-data.js';
import { UserSection, UserSectionBuilder } from '../mapping/reference-table-builder.js';
import { mergeUsers, selectSiteFields, selectUserFields, type EnrichmentField } from './reference-records.js';

/** What the loaders put entries into. */
export interface ReferenceCollector<T> {
  add(item: T): void;
  /** Distinct ids so far. */
  readonly size: number;
}

/** The users of one load, in table form. */
export class UserTable {
  constructor(
    /** What the encode pool builds the workers' table from (reference-table-builder.ts). */
    readonly section: UserSection,
  ) {}

  get length(): number {
    return this.section.count;
  }

  /** The users as objects (a fresh array each call: tests, small lists). */
  toReferences(): UserReference[] {
    return [...this.section];
  }

  /** The users as objects one at a time. */
  references(): Iterator<UserReference> {
    return this.section[Symbol.iterator]();
  }
}

/** Builds a {@link UserTable} entry by entry (selecting the fields as they come). */
export class UserTableBuilder implements ReferenceCollector<UserReference> {
  private readonly into = new UserSectionBuilder(mergeUsers);

  constructor(private readonly fields: ReadonlySet<EnrichmentField>) {}

  get size(): number {
    return this.into.size;
  }

  add(item: UserReference): void {
    const selected = selectUserFields(item, this.fields);
    if (selected) this.into.add(selected);
  }

  /** The table (once: the builder is spent). */
  build(): UserTable {
    return new UserTable(this.into.finish());
  }
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
