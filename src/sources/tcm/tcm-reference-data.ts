/**
 * A tenant's reference lists from Tableau Cloud Manager, for enrichment (docs/enrichment.md):
 *
 * - `GET /api/v1/tenants/{tenantId}/users` → `{"users": [...]}` (`userId` = the user LUID, user
 *   attributes, `idpType`, `siteRoles[]` of `{siteId, siteRole}`),
 * - `GET /api/v1/tenants/{tenantId}/sites` → `{"sites": [...]}` (`siteUUID` = the site LUID,
 *   `name`, `contentUrl`, `status`),
 *
 * both paged with `maxResults` (500; a page larger than the client's `maxResponseBytes` is asked
 * for again with half as many) and `pageToken`; the next page's token is read from
 * `nextPageToken` or `pageToken` (both are seen in clients), and an echo of the token just sent
 * ends the list. A plain array answer is accepted too. Every request goes through the TCM
 * client (tcm-client.ts): the same sign-in, session renewal on 401, rate limit, retries of 429
 * and 5xx with `Retry-After`, no redirects followed, secrets redacted from errors.
 *
 * The exact user fields are not published: items are read through reference-records.ts
 * (whatever names are there; an item without an id is skipped and counted), and the answer's
 * field names are counted so the caller can log what this tenant's TCM really returns.
 */
import type { SiteReference, UserReference } from '../../mapping/reference-data.js';
import { FieldCensus, siteReferenceOf, userReferenceOf, type ReferenceKind } from '../reference-records.js';
import type { ReferenceCollector } from '../reference-copy.js';
import { TcmResponseTooLargeError, type TcmClient } from './tcm-client.js';

export const TCM_USERS_PATH = (tenantId: string): string => `/api/v1/tenants/${encodeURIComponent(tenantId)}/users`;
export const TCM_REFERENCE_SITES_PATH = (tenantId: string): string => `/api/v1/tenants/${encodeURIComponent(tenantId)}/sites`;

/** Items asked for per page (`maxResults`; the server may return fewer). A page larger than the client's maxResponseBytes is asked for again with half as many, down to MIN_REFERENCE_PAGE_SIZE. */
export const REFERENCE_PAGE_SIZE = 500;
export const MIN_REFERENCE_PAGE_SIZE = 25;

export interface ReferenceListStats {
  /** The top-level fields the items had. */
  census: FieldCensus;
  /** Items with an id (before duplicates were merged and entries with nothing to add left out). */
  entries: number;
  /** Items without an id (not kept). */
  skipped: number;
  pages: number;
}

export interface ReferenceListOptions {
  /** More entries than this: an error (memory stays bounded); the last good copy is kept by the caller. */
  maxItems: number;
  pageSize?: number;
}

/** Every user of the tenant, into `into` page by page (so only the compact copy is kept). */
export function fetchTcmUsers(client: TcmClient, tenantId: string, into: ReferenceCollector<UserReference>, options: ReferenceListOptions, signal: AbortSignal): Promise<ReferenceListStats> {
  return fetchList(client, 'users', TCM_USERS_PATH(tenantId), userReferenceOf, into, options, signal);
}

/** Every site of the tenant. */
export function fetchTcmSites(client: TcmClient, tenantId: string, into: ReferenceCollector<SiteReference>, options: ReferenceListOptions, signal: AbortSignal): Promise<ReferenceListStats> {
  return fetchList(client, 'sites', TCM_REFERENCE_SITES_PATH(tenantId), siteReferenceOf, into, options, signal);
}

async function fetchList<T extends { id: string }>(
  client: TcmClient,
  kind: ReferenceKind,
  path: string,
  read: (item: Record<string, unknown>) => T | undefined,
  into: ReferenceCollector<T>,
  options: ReferenceListOptions,
  signal: AbortSignal,
): Promise<ReferenceListStats> {
  let pageSize = options.pageSize ?? REFERENCE_PAGE_SIZE;
  const census = new FieldCensus();
  const tokens = new Set<string>();
  let skipped = 0;
  let entries = 0;
  let token: string | undefined;
  let pages = 0;
  for (;;) {
    const query: Record<string, string> = { maxResults: String(pageSize) };
    if (token !== undefined) query.pageToken = token;
    let body: unknown;
    try {
      body = await client.getJson(kind, path, query, signal);
    } catch (err) {
      // users with many site roles: the same page again, with fewer items
      if (err instanceof TcmResponseTooLargeError && pageSize > MIN_REFERENCE_PAGE_SIZE) {
        pageSize = Math.max(MIN_REFERENCE_PAGE_SIZE, Math.floor(pageSize / 2));
        continue;
      }
      throw err;
    }
    pages++;
    const page = parsePage(body, kind, pages > 1);
    // the first page without the list is not "no users": the last good copy is kept
    if (page === undefined) throw new Error(`tcm ${kind} ${path}: page ${pages} has no "${kind}" list`);
    for (const item of page.items) {
      if (!isRecord(item)) {
        skipped++;
        continue;
      }
      census.add(item);
      const ref = read(item);
      if (ref === undefined) {
        skipped++;
        continue;
      }
      entries++;
      into.add(ref);
      if (into.size > options.maxItems) {
        throw new Error(`tcm ${kind}: the tenant has more than ${options.maxItems} ${kind} (maxUsers / maxSites of enrichment); not read on`);
      }
    }
    const next = page.next;
    if (next === undefined || next === token) break; // an echo of the token just sent is not a next page
    if (tokens.has(next)) throw new Error(`tcm ${kind}: page ${pages} repeats an earlier page token; paging stopped`);
    tokens.add(next);
    token = next;
  }
  return { census, entries, skipped, pages };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `{"<kind>": [...], "nextPageToken"|"pageToken"?}`, or a plain array (one page). `empty`: an answer without the list is an empty page (allowed after the first). */
export function parsePage(body: unknown, kind: ReferenceKind, empty = false): { items: unknown[]; next: string | undefined } | undefined {
  if (Array.isArray(body)) return { items: body, next: undefined };
  if (!isRecord(body)) return undefined;
  const list = body[kind];
  let items: unknown[] | undefined;
  if (Array.isArray(list)) items = list;
  else if (isRecord(list)) {
    // the Tableau REST API's shape: {"users": {"user": [...]}}
    const inner = list[kind.slice(0, -1)];
    if (Array.isArray(inner)) items = inner;
  } else if ((list === undefined || list === null) && empty) items = []; // an empty later page may leave the list out
  if (items === undefined) return undefined;
  let next: string | undefined;
  for (const k of ['nextPageToken', 'pageToken']) {
    const v = body[k];
    if (typeof v === 'string' && v !== '') {
      next = v;
      break;
    }
  }
  return { items, next };
}
