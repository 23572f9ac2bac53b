/**
 * Synthetic Activity Log corpus for the benchmark, in Tableau's real S3 layout:
 *
 *   pod=<pod>/siteLuid=<site>/y=2026/m=11/d=29/h=HH/eventType=<type>/activity-log-….txt   (site)
 *   tenant=<tenant id>/y=2026/m=11/d=29/h=HH/eventType=<type>/activity-log-….txt          (tenant)
 *
 * - Mostly `vizql_http_request` records of about 1 KB each, in gzip objects of ~5 000 records
 *   (named `.txt`, as Tableau does: gzip is recognised by its magic bytes).
 * - At least one object for every other event type of the catalog (`mappings/site/*.yaml`,
 *   `mappings/tenant/*.yaml`), a handful of records each, with the type's documented attributes
 *   and the family's common attributes. Half of these objects are gzip, half plain text.
 * - `generateBigObject` streams one large gzip object (default ~1 GB uncompressed) of vizql
 *   records built from a few pre-serialised lines, never holding it in memory.
 *
 * Deterministic: seeded PRNG, fixed dates, no clock.
 *
 *   npx tsx scripts/bench/corpus.ts --out DIR [--events 200000] [--big-bytes 1000000000]
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { Rng } from './rng.js';

export { Rng };

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, '..', '..');
const MAPPINGS_DIR = path.join(REPO_ROOT, 'mappings');

const POD = 'prod-useast-b';
const POD_URI = `https://${POD}.online.tableau.com`;
const TENANT_ID = '5f0b6c1e-2a43-4c7e-9d1b-7e3f8a9c0d21';
/** 2026-11-29 00:00:00 UTC. */
const DAY_START_SEC = Date.UTC(2026, 10, 29) / 1000;
const OTHER_RECORDS_PER_TYPE = 5;

// ---------------------------------------------------------------------------
// Deterministic randomness
// ---------------------------------------------------------------------------

/** The corpus's default seed (its world of sites and users is made first from it). */
export const CORPUS_SEED = 0x7ab1e5;


// ---------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------

/** ISO 8601 UTC with `digits` fractional digits, from whole seconds + nanoseconds. */
export function isoTime(sec: number, nanos: number, digits: 0 | 3 | 6 | 9): string {
  const base = new Date(sec * 1000).toISOString().slice(0, 19);
  if (digits === 0) return `${base}Z`;
  return `${base}.${String(nanos).padStart(9, '0').slice(0, digits)}Z`;
}

// ---------------------------------------------------------------------------
// The synthetic world
// ---------------------------------------------------------------------------

type Rec = Record<string, unknown>;

const FIRST_NAMES = ['Ada', 'Alan', 'Grace', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'John', 'Radia', 'Niklaus', 'Hedy', 'Tim', 'Katherine', 'Dennis', 'Shafi', 'Leslie', 'Sophie', 'Vint'];
const LAST_NAMES = ['Lovelace', 'Turing', 'Hopper', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'McCarthy', 'Perlman', 'Wirth', 'Lamarr', 'Berners-Lee', 'Johnson', 'Ritchie', 'Goldwasser', 'Lamport', 'Wilson', 'Cerf'];
const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Tableau Desktop 2025.3.1 (20253.25.1104.1517) Windows 10',
];
const ROLES = [
  { siteRoleId: 11, licensingRoleName: 'Creator' },
  { siteRoleId: 10, licensingRoleName: 'Creator' },
  { siteRoleId: 2, licensingRoleName: 'Explorer' },
  { siteRoleId: 3, licensingRoleName: 'Explorer' },
  { siteRoleId: 9, licensingRoleName: 'Viewer' },
  { siteRoleId: 9, licensingRoleName: 'Viewer' },
] as const;
const WORKBOOK_NAMES = ['Sales Overview', 'Regional Performance', 'Customer Churn Analysis', 'Supply Chain Dashboard', 'Marketing Funnel', 'Finance Close Tracker', 'HR Headcount', 'Support Ticket Trends', 'Inventory Health', 'Executive KPI Summary', 'Web Traffic Insights', 'Quarterly Forecast'];
const VIEW_NAMES = ['Overview', 'By Region', 'By Product', 'Trend', 'Details', 'Top Customers', 'Map', 'Forecast', 'Cohorts', 'Scorecard'];
const ENDPOINTS: ReadonlyArray<{ name: string; method: 'GET' | 'POST'; path: (s: string) => string }> = [
  { name: 'startSession', method: 'GET', path: () => 'startSession/viewing' },
  { name: 'bootstrapSession', method: 'POST', path: (s) => `bootstrapSession/sessions/${s}` },
  { name: 'categorical-filter-by-index', method: 'POST', path: (s) => `sessions/${s}/commands/tabdoc/categorical-filter-by-index` },
  { name: 'render-tooltip-server', method: 'POST', path: (s) => `sessions/${s}/commands/tabsrv/render-tooltip-server` },
  { name: 'select', method: 'POST', path: (s) => `sessions/${s}/commands/tabdoc/select` },
  { name: 'set-parameter-value', method: 'POST', path: (s) => `sessions/${s}/commands/tabdoc/set-parameter-value` },
  { name: 'get-world-update', method: 'POST', path: (s) => `sessions/${s}/commands/tabsrv/get-world-update` },
  { name: 'ensure-layout-for-sheet', method: 'POST', path: (s) => `sessions/${s}/commands/tabsrv/ensure-layout-for-sheet` },
  { name: 'export-image-server', method: 'GET', path: (s) => `sessions/${s}/commands/tabsrv/export-image-server` },
  { name: 'keepalive', method: 'GET', path: (s) => `sessions/${s}/commands/tabsrv/keep-alive` },
];
const QUERY_PARTS = [':embed=y', ':showVizHome=no', ':toolbar=yes', ':tabs=no', ':render=false', ':language=en-US', ':device=desktop', ':display_count=n', ':origin=viz_share_link', ':refresh=yes', ':showAppBanner=false', ':jsdebug=n'];
const OUTCOMES = [
  { outcome: 'client_error', reason: 'Invalid request parameters', w: 0.02 },
  { outcome: 'unauthorized', reason: 'User is not authorized to access the view', w: 0.01 },
  { outcome: 'internal_error', reason: 'VizQL server process restarted', w: 0.005 },
] as const;

interface User {
  id: number;
  luid: string;
  email: string;
  displayName: string;
  role: (typeof ROLES)[number];
  ip: string;
  userAgent: string;
  sessionId: string;
  vizqlSessionId: string;
}
interface View {
  luid: string;
  name: string;
  repo: string;
}
interface Workbook {
  luid: string;
  name: string;
  repo: string;
  revision: number;
  views: View[];
}
export interface Site {
  luid: string;
  name: string;
  uri: string;
  users: User[];
  workbooks: Workbook[];
}

export function makeWorld(rng: Rng): Site[] {
  const sites: Site[] = [];
  const defs = [
    { name: 'Acme Analytics', uri: 'acmeanalytics' },
    { name: 'Acme Finance', uri: 'acmefinance' },
  ];
  let userId = 1000;
  for (const def of defs) {
    const users: User[] = [];
    for (let i = 0; i < 60; i++) {
      const first = rng.pick(FIRST_NAMES);
      const last = rng.pick(LAST_NAMES);
      users.push({
        id: userId++,
        luid: rng.uuid(),
        email: `${first.toLowerCase()}.${last.toLowerCase().replace(/[^a-z]/g, '')}@acme.example`,
        displayName: `${first} ${last}`,
        role: rng.pick(ROLES),
        ip: `${rng.pick(['192.0.2', '198.51.100', '203.0.113'])}.${rng.int(1, 254)}`,
        userAgent: rng.pick(USER_AGENTS),
        sessionId: rng.hex(32).toUpperCase(),
        vizqlSessionId: `${rng.hex(32).toUpperCase()}-0:0`,
      });
    }
    const workbooks: Workbook[] = WORKBOOK_NAMES.map((name) => {
      const repo = name.replace(/[^A-Za-z0-9]/g, '');
      const views: View[] = [];
      const nViews = rng.int(3, 6);
      for (let v = 0; v < nViews; v++) {
        const vname = VIEW_NAMES[v]!;
        views.push({ luid: rng.uuid(), name: vname, repo: `${repo}/${vname.replace(/[^A-Za-z0-9]/g, '')}` });
      }
      return { luid: rng.uuid(), name, repo, revision: rng.int(1, 40), views };
    });
    sites.push({ luid: rng.uuid(), name: def.name, uri: def.uri, users, workbooks });
  }
  return sites;
}

function siteCommon(site: Site, user: User, eventTime: string, processedTime: string): Rec {
  return {
    eventTime,
    actorUserId: user.id,
    actorUserLuid: user.luid,
    initiatingUserId: user.id,
    initiatingUserLuid: user.luid,
    siteLuid: site.luid,
    licensingRoleName: user.role.licensingRoleName,
    siteRoleId: user.role.siteRoleId,
    systemAdminLevel: 0,
    eventProcessedTime: processedTime,
  };
}

/** One vizql_http_request record (~1 KB serialised). */
export function vizqlRecord(rng: Rng, site: Site, sec: number, nanos: number): Rec {
  const user = rng.pick(site.users);
  const wb = rng.pick(site.workbooks);
  const view = rng.pick(wb.views);
  const ep = rng.pick(ENDPOINTS);
  const parts = new Set<string>();
  const nq = rng.int(1, 3);
  for (let i = 0; i < nq; i++) parts.add(rng.pick(QUERY_PARTS));
  const query = `?${[...parts].join('&')}&:iid=${rng.int(1, 12)}`;
  const requestUri = `/vizql/t/${site.uri}/w/${wb.repo.replace(/\s/g, '')}/v/${view.repo.split('/')[1]}/${ep.path(user.vizqlSessionId)}${query}`;
  let outcome: string = 'success';
  let reason: string | null = null;
  const r = rng.next();
  let acc = 0;
  for (const o of OUTCOMES) {
    acc += o.w;
    if (r < acc) {
      outcome = o.outcome;
      reason = o.reason;
      break;
    }
  }
  const eventTime = isoTime(sec, nanos, 6);
  const processedTime = isoTime(sec + rng.int(60, 900), rng.int(0, 999_999_999), 3);
  return {
    ...siteCommon(site, user, eventTime, processedTime),
    eventOutcome: outcome,
    ...(reason ? { eventOutcomeReason: reason } : {}),
    method: ep.method,
    requestUri,
    endpointName: ep.name,
    duration: rng.chance(0.9) ? rng.int(4, 900) : rng.int(900, 45_000),
    ipAddress: user.ip,
    userAgent: user.userAgent,
    referrer: rng.chance(0.4) ? null : `${POD_URI}/#/site/${site.uri}/views/${view.repo}?:iid=${rng.int(1, 12)}`,
    requestId: rng.alnum(24),
    sessionId: user.sessionId,
    vizqlSessionId: user.vizqlSessionId,
    siteName: site.name,
    siteUri: site.uri,
    viewLuid: view.luid,
    viewName: view.name,
    viewRepoUrl: view.repo,
    workbookLuid: wb.luid,
    workbookName: wb.name,
    workbookRevision: wb.revision,
  };
}

// ---------------------------------------------------------------------------
// Other event types: documented attributes from the catalog
// ---------------------------------------------------------------------------

interface CatalogType {
  family: 'site' | 'tenant';
  eventType: string;
  attributes: Record<string, { type: string }>;
}

export function readCatalogTypes(mappingsDir = MAPPINGS_DIR): CatalogType[] {
  const out: CatalogType[] = [];
  for (const family of ['site', 'tenant'] as const) {
    const dir = path.join(mappingsDir, family);
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
      const doc = parseYaml(fs.readFileSync(path.join(dir, file), 'utf8')) as { attributes?: Record<string, { type?: string }> | null } | null;
      const attributes: Record<string, { type: string }> = {};
      for (const [name, def] of Object.entries(doc?.attributes ?? {})) attributes[name] = { type: def?.type ?? 'string' };
      out.push({ family, eventType: file.replace(/\.yaml$/, ''), attributes });
    }
  }
  return out;
}

/** A plausible value for a documented attribute, from its type and name. */
function valueFor(rng: Rng, name: string, type: string, site: Site, user: User, sec: number): unknown {
  if (rng.chance(0.08)) return null; // every documented attribute may be null
  const n = name.toLowerCase();
  switch (type) {
    case 'boolean':
      return rng.chance(0.3);
    case 'float':
      return Math.round(rng.next() * 10_000) / 100;
    case 'long':
      return /size|bytes/.test(n) ? rng.int(10_000, 2_000_000_000) : rng.int(1, 600_000);
    case 'integer':
      if (/id$/.test(n)) return rng.int(1000, 99_999);
      if (/count|number|rows/.test(n)) return rng.int(0, 5000);
      if (/size|bytes/.test(n)) return rng.int(1024, 200_000_000);
      return rng.int(0, 100);
  }
  if (/luid$|uuid$|guid$/.test(n)) return rng.uuid();
  if (/email/.test(n)) return user.email;
  if (/ipaddress|^sourceip$|ip$/.test(n)) return user.ip;
  if (/useragent/.test(n)) return user.userAgent;
  if (n === 'sitename') return site.name;
  if (n === 'siteuri') return site.uri;
  if (/(Time|At|Date)$/.test(name) || /timestamp/.test(n)) return isoTime(sec - rng.int(0, 30 * 86400), 0, 0);
  if (/(url|uri|link)$/.test(n)) return `${POD_URI}/#/site/${site.uri}/${rng.pick(['views', 'workbooks', 'datasources', 'projects'])}/${rng.int(1000, 99999)}`;
  if (/id$/.test(n)) return rng.uuid();
  if (/displayname|fullname|username|ownername|^ownername$/.test(n)) return user.displayName;
  if (/name$|^name$|title|caption/.test(n)) return `${rng.pick(WORKBOOK_NAMES)} ${rng.pick(VIEW_NAMES)}`;
  if (/status|state/.test(n)) return rng.pick(['success', 'completed', 'failure', 'pending']);
  if (/type$|kind$|mode$/.test(n)) return rng.pick(['Workbook', 'Datasource', 'Flow', 'Project', 'View']);
  if (/role/.test(n)) return user.role.licensingRoleName;
  if (/revision|version/.test(n)) return `${rng.int(1, 20)}.${rng.int(0, 9)}`;
  return rng.pick(['updated by scheduled task', 'manual change from the web UI', 'changed through the REST API', 'default', 'inherited from project']);
}

function otherRecord(rng: Rng, t: CatalogType, site: Site, sec: number, nanos: number): Rec {
  const user = rng.pick(site.users);
  const eventTime = isoTime(sec, nanos, rng.pick([0, 3, 6, 9] as const));
  const processedTime = isoTime(sec + rng.int(60, 900), rng.int(0, 999_999_999), 3);
  const attrs: Rec = {};
  for (const [name, def] of Object.entries(t.attributes)) attrs[name] = valueFor(rng, name, def.type, site, user, sec);
  const outcome = t.eventType.startsWith('login') || t.eventType.startsWith('hist_login') ? null : rng.chance(0.9) ? 'success' : rng.pick(['client_error', 'unauthorized', 'internal_error']);
  if (t.family === 'tenant') {
    return {
      eventId: rng.uuid(),
      eventType: t.eventType,
      eventVersion: '1.0',
      eventTime,
      eventProcessedTime: processedTime,
      eventOutcome: outcome,
      eventOutcomeReason: outcome === 'success' ? null : outcome && 'request rejected',
      traceUuid: rng.uuid(),
      tenantId: TENANT_ID,
      tenantName: 'Acme Corporation',
      tenantUri: 'acmecorp',
      initiatingUserId: rng.uuid(),
      initiatingUserEmail: user.email,
      initiatingUserDisplayName: user.displayName,
      initiatingUserRole: rng.pick(['TenantAdmin', 'SiteAdmin', 'User']),
      initiatingUserIpAddress: user.ip,
      initiatingUserAgent: user.userAgent,
      initiatingUrl: `https://cloudmanager.tableau.com/api/v1/tenants/${TENANT_ID}/${t.eventType.replace(/_/g, '-')}`,
      initiatingSessionId: rng.uuid(),
      ...attrs,
    };
  }
  return { ...attrs, ...siteCommon(site, user, eventTime, processedTime), eventOutcome: outcome };
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

function objectKey(rng: Rng, family: 'site' | 'tenant', siteLuid: string, hour: number, eventType: string, sec: number): string {
  const hh = String(hour).padStart(2, '0');
  const prefix = family === 'site' ? `pod=${POD}/siteLuid=${siteLuid}` : `tenant=${TENANT_ID}`;
  const stamp = new Date(sec * 1000).toISOString().slice(0, 19).replace(/[T:]/g, '-');
  return `${prefix}/y=2026/m=11/d=29/h=${hh}/eventType=${eventType}/activity-log-1-${stamp}-${rng.uuid()}.txt`;
}

export interface CorpusOptions {
  dir: string;
  /** Total records (vizql + the handful for every other type). */
  events: number;
  recordsPerObject?: number;
  seed?: number;
  onProgress?: (msg: string) => void;
}

export interface CorpusSummary {
  dir: string;
  events: number;
  vizqlEvents: number;
  otherEvents: number;
  objects: number;
  gzipObjects: number;
  eventTypes: number;
  uncompressedBytes: number;
  compressedBytes: number;
  avgVizqlRecordBytes: number;
}

async function writeObject(file: string, text: string, gzip: boolean): Promise<number> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const bytes = gzip ? zlib.gzipSync(text) : Buffer.from(text);
  await fsp.writeFile(file, bytes);
  return bytes.length;
}

export async function generateCorpus(opts: CorpusOptions): Promise<CorpusSummary> {
  const rng = new Rng(opts.seed ?? CORPUS_SEED);
  const perObject = opts.recordsPerObject ?? 5000;
  const sites = makeWorld(rng);
  const types = readCatalogTypes().filter((t) => t.eventType !== 'vizql_http_request');
  const summary: CorpusSummary = {
    dir: opts.dir, events: 0, vizqlEvents: 0, otherEvents: 0, objects: 0, gzipObjects: 0,
    eventTypes: types.length + 1, uncompressedBytes: 0, compressedBytes: 0, avgVizqlRecordBytes: 0,
  };

  // Every other event type: one object, a handful of records, spread over the day's hours.
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    const site = sites[i % sites.length]!;
    const hour = i % 24;
    let sec = DAY_START_SEC + hour * 3600 + rng.int(0, 3000);
    const lines: string[] = [];
    for (let r = 0; r < OTHER_RECORDS_PER_TYPE; r++) {
      sec += rng.int(1, 60);
      lines.push(JSON.stringify(otherRecord(rng, t, site, sec, rng.int(0, 999_999_999))));
    }
    const text = lines.join('\n') + '\n';
    const gzip = i % 2 === 0;
    const file = path.join(opts.dir, objectKey(rng, t.family, site.luid, hour, t.eventType, sec));
    summary.compressedBytes += await writeObject(file, text, gzip);
    summary.uncompressedBytes += Buffer.byteLength(text);
    summary.objects++;
    if (gzip) summary.gzipObjects++;
    summary.otherEvents += lines.length;
  }

  // vizql_http_request: the bulk, gzip objects of `perObject` records.
  const vizqlTotal = Math.max(0, opts.events - summary.otherEvents);
  const nObjects = Math.ceil(vizqlTotal / perObject);
  let vizqlBytes = 0;
  for (let o = 0; o < nObjects; o++) {
    const count = Math.min(perObject, vizqlTotal - o * perObject);
    const site = sites[o % sites.length]!;
    const hour = Math.floor((o * 24) / Math.max(1, nObjects));
    let sec = DAY_START_SEC + hour * 3600;
    const step = Math.max(1, Math.floor(3000 / count * 1e6)); // microseconds between records
    let micros = 0;
    const lines: string[] = new Array(count);
    for (let r = 0; r < count; r++) {
      micros += rng.int(1, 2 * step);
      const line = JSON.stringify(vizqlRecord(rng, site, sec + Math.floor(micros / 1e6), (micros % 1e6) * 1000 + rng.int(0, 999)));
      lines[r] = line;
      vizqlBytes += line.length + 1;
    }
    sec += Math.floor(micros / 1e6);
    const text = lines.join('\n') + '\n';
    const file = path.join(opts.dir, objectKey(rng, 'site', site.luid, hour, 'vizql_http_request', sec));
    summary.compressedBytes += await writeObject(file, text, true);
    summary.uncompressedBytes += Buffer.byteLength(text);
    summary.objects++;
    summary.gzipObjects++;
    summary.vizqlEvents += count;
    opts.onProgress?.(`corpus: vizql object ${o + 1}/${nObjects}`);
  }
  summary.events = summary.vizqlEvents + summary.otherEvents;
  summary.avgVizqlRecordBytes = summary.vizqlEvents ? Math.round(vizqlBytes / summary.vizqlEvents) : 0;
  return summary;
}

export interface BigObjectOptions {
  dir: string;
  /** Uncompressed size to reach (the object ends at the first line boundary past it). */
  targetBytes: number;
  seed?: number;
  /** Distinct pre-serialised lines to cycle through. */
  templates?: number;
  gzipLevel?: number;
  onProgress?: (msg: string) => void;
}

export interface BigObjectSummary {
  dir: string;
  file: string;
  events: number;
  uncompressedBytes: number;
  compressedBytes: number;
}

/**
 * One big gzip object of vizql records, streamed: a few pre-serialised lines whose eventTime and
 * requestId are filled in per record, written through zlib with backpressure.
 */
export async function generateBigObject(opts: BigObjectOptions): Promise<BigObjectSummary> {
  const rng = new Rng(opts.seed ?? 0xb16b16);
  const sites = makeWorld(rng);
  const site = sites[0]!;
  const hour = 13;
  const T = '@@EVENT_TIME@@';
  const R = '@@REQUEST_ID@@';
  const templates: Array<[string, string, string]> = [];
  for (let i = 0; i < (opts.templates ?? 64); i++) {
    const rec = vizqlRecord(rng, site, DAY_START_SEC + hour * 3600, 0);
    rec.eventTime = T;
    rec.requestId = R;
    const s = JSON.stringify(rec);
    const [a, rest] = s.split(`"${T}"`) as [string, string];
    const [b, c] = rest.split(`"${R}"`) as [string, string];
    templates.push([a, b, c]);
  }
  const file = path.join(opts.dir, objectKey(rng, 'site', site.luid, hour, 'vizql_http_request', DAY_START_SEC + hour * 3600 + 3599));
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const out = fs.createWriteStream(file);
  const gz = zlib.createGzip({ level: opts.gzipLevel ?? 6 });
  gz.pipe(out);
  const done = once(out, 'close');

  let bytes = 0;
  let events = 0;
  let micros = 0;
  const hourStartMs = (DAY_START_SEC + hour * 3600) * 1000;
  let lastReport = 0;
  let seq = 0;
  while (bytes < opts.targetBytes) {
    let chunk = '';
    for (let i = 0; i < 1000 && bytes + chunk.length < opts.targetBytes; i++) {
      micros += 1 + ((seq * 2654435761) >>> 0) % 5000; // ~2.5 ms apart: ~1.4 M records per hour
      const sec = Math.floor(hourStartMs / 1000) + Math.floor(micros / 1e6);
      const frac = String(micros % 1e6).padStart(6, '0');
      const eventTime = `${new Date(sec * 1000).toISOString().slice(0, 19)}.${frac}Z`;
      const requestId = `Rq${seq.toString(36).padStart(10, '0')}Xb${(seq % 9973).toString(36).padStart(3, '0')}Zk7mQ2p`; // 24 characters
      const [a, b, c] = templates[seq % templates.length]!;
      chunk += `${a}"${eventTime}"${b}"${requestId}"${c}\n`;
      seq++;
      events++;
    }
    bytes += Buffer.byteLength(chunk);
    if (!gz.write(chunk)) await once(gz, 'drain');
    if (bytes - lastReport > 100_000_000) {
      lastReport = bytes;
      opts.onProgress?.(`big object: ${Math.round(bytes / 1e6)} MB written`);
    }
  }
  gz.end();
  await done;
  const compressedBytes = (await fsp.stat(file)).size;
  return { dir: opts.dir, file, events, uncompressedBytes: bytes, compressedBytes };
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const get = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const out = get('--out');
  if (!out) {
    process.stderr.write('usage: tsx scripts/bench/corpus.ts --out DIR [--events N] [--big-bytes N]\n');
    process.exitCode = 2;
    return;
  }
  const events = Number(get('--events') ?? 200_000);
  const progress = (m: string): void => void process.stderr.write(`${m}\n`);
  const summary = await generateCorpus({ dir: path.join(out, 'corpus'), events, onProgress: progress });
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  const bigBytes = get('--big-bytes');
  if (bigBytes) {
    const big = await generateBigObject({ dir: path.join(out, 'big'), targetBytes: Number(bigBytes), onProgress: progress });
    process.stdout.write(JSON.stringify(big, null, 2) + '\n');
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  await main();
}
