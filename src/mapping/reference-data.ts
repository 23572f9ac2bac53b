/**
 * A tenant's reference lists (users, sites) that enrichment joins records with: loaded by the
 * daemon (TCM or a lookup file), published to the encode workers, read by the record mapper.
 */

/** One user of a tenant's reference list; `id` is the user LUID (TCM `userId`). Fields are optional: TCM does not publish them all. */
export interface UserReference { id: string; name?: string; email?: string; fullName?: string; /** site LUID → site role */ siteRoles?: Readonly<Record<string, string>> }
/** One site; `id` is the site LUID (TCM `siteUUID`). */
export interface SiteReference { id: string; name?: string; contentUrl?: string }
export interface ReferenceData {
  /** 'pending': enrichment is configured but the first load has not finished; 'loaded': users/sites are the last good copy. */
  status: 'pending' | 'loaded';
  /**
   * The users: any iterable (iterated once, by the one building the workers' table), so a big
   * list need not exist as objects all at once; the daemon's copy is a UserSection
   * (reference-table-builder.ts), the users already in the table's form, used as they are.
   */
  users: Iterable<UserReference>;
  sites: Iterable<SiteReference>;
  /** When this copy was loaded (ms since epoch; 0 when pending). */
  loadedAtMs: number;
}
/** What publishes a tenant's reference data to the encode workers (implemented by EncodeWorkerPool). */
export interface ReferenceDataSink {
  /** Replace the tenant's data for the tasks that start after this call; `undefined` withdraws it (tenant removed: memory freed). */
  publishReferenceData(tenantId: string, data: ReferenceData | undefined): void;
}
