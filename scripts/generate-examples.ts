/**
 * Generates the bundled example Activity Log tree in examples/activity-log/.
 *
 *   npx tsx scripts/generate-examples.ts
 *
 * The data is synthetic but shaped like Tableau Cloud's real S3 replication:
 *
 *   pod=<pod>/siteLuid=<site LUID>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>.txt   (site events)
 *   tenant=<tenant id>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>.txt               (tenant events)
 *
 * Each file is NDJSON: one flat JSON object per line, every attribute at the top level. Attribute
 * names are the real (English) ones from the Activity Log schema pages.
 *
 * Deterministic: a fixed-seed PRNG, fixed dates and no clock or Math.random, so a rerun writes
 * identical bytes (the gzip files included: zlib with fixed options, header mtime 0, OS byte pinned).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const OUT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'activity-log');
const POD = 'prod-useast-b';
const POD_URI = `https://${POD}.online.tableau.com`;
const TCM_URL = 'https://cloudmanager.tableau.com';
const SEED = 0x7ab1e4;
/** First hour of data: 2026-11-24 22:00 UTC; three hours, crossing midnight into 2026-11-25. */
const START_SEC = Date.UTC(2026, 10, 24, 22, 0, 0) / 1000;
const HOURS = 3;

// ---------------------------------------------------------------------------
// Deterministic randomness
// ---------------------------------------------------------------------------

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(SEED);
const int = (min: number, max: number): number => min + Math.floor(rand() * (max - min + 1));
const chance = (p: number): boolean => rand() < p;
function pick<T>(items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from empty list');
  return items[Math.floor(rand() * items.length)]!;
}
const hex = (n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
};
const alnum = (n: number): string => {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < n; i++) s += abc[Math.floor(rand() * abc.length)];
  return s;
};
function uuid(): string {
  const h = hex(32).split('');
  h[12] = '4';
  h[16] = '89ab'[parseInt(h[16]!, 16) & 3]!;
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

// ---------------------------------------------------------------------------
// Time: seconds + nanoseconds, written with 0, 3, 6 or 9 fractional digits
// ---------------------------------------------------------------------------

interface Instant {
  sec: number;
  nanos: number;
}
const at = (sec: number, nanos = int(0, 999_999_999)): Instant => ({ sec, nanos });
const plus = (t: Instant, seconds: number): Instant => at(t.sec + Math.floor(seconds), int(0, 999_999_999));
const cmp = (a: Instant, b: Instant): number => a.sec - b.sec || a.nanos - b.nanos;
function iso(t: Instant, digits: 0 | 3 | 6 | 9): string {
  const base = new Date(t.sec * 1000).toISOString().slice(0, 19);
  if (digits === 0) return `${base}Z`;
  return `${base}.${String(t.nanos).padStart(9, '0').slice(0, digits)}Z`;
}
/** eventTime with a varying number of fractional digits; mostly 3 or 6, some 0 and 9. */
const eventTimeOf = (t: Instant): string => iso(t, pick([3, 3, 6, 6, 6, 9, 0, 9] as const));
/** A past timestamp (publication dates etc.), seconds precision. */
const pastIso = (daysAgoMin: number, daysAgoMax: number): string =>
  iso(at(START_SEC - int(daysAgoMin * 86400, daysAgoMax * 86400), 0), 0);

// ---------------------------------------------------------------------------
// The synthetic world: a tenant, two sites, users, content
// ---------------------------------------------------------------------------

type Rec = Record<string, unknown>;

const ROLES = {
  SiteAdministratorCreator: { siteRoleId: 11, licensingRoleName: 'Creator' },
  Creator: { siteRoleId: 10, licensingRoleName: 'Creator' },
  ExplorerCanPublish: { siteRoleId: 2, licensingRoleName: 'Explorer' },
  Explorer: { siteRoleId: 3, licensingRoleName: 'Explorer' },
  Viewer: { siteRoleId: 9, licensingRoleName: 'Viewer' },
} as const;
type RoleName = keyof typeof ROLES;

interface User {
  id: number;
  luid: string;
  tenantUserId: string;
  email: string;
  displayName: string;
  role: RoleName;
  ip: string;
  userAgent: string;
  externalId: string | null;
}
interface View {
  id: number;
  luid: string;
  name: string;
  sheetId: string;
  sheetType: 'dashboard' | 'view' | 'story';
  index: number;
  fields: string;
  caption: string;
  firstPublishedAt: string;
}
interface Project {
  luid: string;
  name: string;
}
interface Workbook {
  id: number;
  luid: string;
  name: string;
  repo: string;
  project: Project;
  owner: User;
  revision: string;
  contentVersion: number;
  size: number;
  firstPublishedAt: string;
  lastPublishedAt: string;
  extracts: boolean;
  views: View[];
}
interface Datasource {
  id: number;
  luid: string;
  name: string;
  repo: string;
  project: Project;
  owner: User;
  certified: boolean;
  size: number;
  revision: string;
}
interface Group {
  id: number;
  luid: string;
  name: string;
}
interface Site {
  luid: string;
  name: string;
  uri: string;
  users: User[];
  admin: User;
  projects: Project[];
  workbooks: Workbook[];
  datasources: Datasource[];
  groups: Group[];
  /** Probability that a record of this site carries eventProcessedTime. */
  processedTimeRate: number;
}

const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 TableauMobile/2024.3',
  'Tableau Desktop 2024.3.1 (20243.24.1112.0334) 64-bit Windows',
];
const API_USER_AGENT = 'python-requests/2.32.3 tableauserverclient/0.34';
// Documentation address ranges only (RFC 5737, RFC 3849).
const ip4 = (): string => `${pick(['192.0.2', '198.51.100', '203.0.113'])}.${int(2, 250)}`;
const ip6 = (): string => `2001:db8:${hex(4)}:${hex(4)}::${hex(3)}`;

const PEOPLE = [
  ['Ada', 'Lovelace'],
  ['Grace', 'Hopper'],
  ['Alan', 'Turing'],
  ['Katherine', 'Johnson'],
  ['Edsger', 'Dijkstra'],
  ['Barbara', 'Liskov'],
  ['Donald', 'Knuth'],
  ['Frances', 'Allen'],
  ['Ken', 'Thompson'],
  ['Radia', 'Perlman'],
  ['John', 'Backus'],
  ['Margaret', 'Hamilton'],
  ['Leslie', 'Lamport'],
  ['Shafi', 'Goldwasser'],
] as const;

let nextUserId = 1001;
function makeUser(first: string, last: string, role: RoleName, domain: string): User {
  return {
    id: nextUserId++,
    luid: uuid(),
    tenantUserId: uuid(),
    email: `${first.toLowerCase()}.${last.toLowerCase()}@${domain}`,
    displayName: `${first} ${last}`,
    role,
    ip: chance(0.15) ? ip6() : ip4(),
    userAgent: pick(USER_AGENTS),
    externalId: chance(0.5) ? `${first.toLowerCase()}.${last.toLowerCase()}@${domain}` : null,
  };
}

let nextContentId = 201;
function makeWorkbook(name: string, project: Project, owner: User, viewNames: string[], fields: string): Workbook {
  const repo = name.replace(/[^A-Za-z0-9]/g, '');
  const first = pastIso(90, 400);
  const views: View[] = viewNames.map((vn, index) => ({
    id: nextContentId++,
    luid: uuid(),
    name: vn,
    sheetId: `${repo}/${vn.replace(/[^A-Za-z0-9]/g, '')}`,
    sheetType: index === 0 ? 'dashboard' : pick(['view', 'view', 'story'] as const),
    index: index + 1,
    fields,
    caption: `${vn} by ${fields.split(',')[0]}`,
    firstPublishedAt: first,
  }));
  const contentVersion = int(2, 14);
  return {
    id: nextContentId++,
    luid: uuid(),
    name,
    repo,
    project,
    owner,
    revision: `1.${contentVersion - 1}`,
    contentVersion,
    size: int(180_000, 9_500_000),
    firstPublishedAt: first,
    lastPublishedAt: pastIso(1, 60),
    extracts: chance(0.6),
    views,
  };
}

function makeSite(name: string, uri: string, domain: string, people: ReadonlyArray<readonly [string, string]>, roles: RoleName[], processedTimeRate: number): Site {
  const users = people.map(([f, l], i) => makeUser(f, l, roles[i % roles.length]!, domain));
  const admin = users[0]!;
  const projects: Project[] = ['Default', 'Sales', 'Finance', 'Operations'].map((n) => ({ luid: uuid(), name: n }));
  const creators = users.filter((u) => ROLES[u.role].licensingRoleName === 'Creator');
  const workbooks = [
    makeWorkbook('Sales Overview', projects[1]!, pick(creators), ['Overview', 'Region Detail', 'Top Customers'], 'Region,Sales,Profit,Order Date'),
    makeWorkbook('Pipeline Forecast', projects[1]!, pick(creators), ['Forecast', 'Win Rate'], 'Stage,Amount,Close Date,Owner'),
    makeWorkbook('Quarterly P&L', projects[2]!, pick(creators), ['P&L Summary', 'Cost Centers'], 'Account,Quarter,Actual,Budget'),
    makeWorkbook('Warehouse Ops', projects[3]!, pick(creators), ['Throughput', 'Backlog'], 'Warehouse,Shipments,Lead Time'),
  ];
  const datasources: Datasource[] = [
    ['Superstore Orders', projects[1]!, true],
    ['GL Extract', projects[2]!, false],
    ['Shipments (live)', projects[3]!, false],
  ].map(([n, p, c]) => ({
    id: nextContentId++,
    luid: uuid(),
    name: n as string,
    repo: (n as string).replace(/[^A-Za-z0-9]/g, ''),
    project: p as Project,
    owner: pick(creators),
    certified: c as boolean,
    size: int(2_000_000, 6_000_000_000),
    revision: `1.${int(0, 9)}`,
  }));
  const groups: Group[] = ['All Users', 'Sales Analysts', 'Finance Viewers', 'Ops Leads'].map((n) => ({
    id: nextContentId++,
    luid: uuid(),
    name: n,
  }));
  return { luid: uuid(), name, uri, users, admin, projects, workbooks, datasources, groups, processedTimeRate };
}

const TENANT = { id: uuid(), name: 'Acme Corporation', uri: 'acmecorp' };
const SITES: Site[] = [
  makeSite('Acme Analytics', 'acmeanalytics', 'acme.example', PEOPLE.slice(0, 8), ['SiteAdministratorCreator', 'Creator', 'Explorer', 'Viewer', 'ExplorerCanPublish', 'Viewer', 'Explorer', 'Viewer'], 1),
  makeSite('Acme Finance', 'acmefinance', 'acme.example', PEOPLE.slice(8), ['SiteAdministratorCreator', 'Creator', 'Viewer', 'Explorer', 'Viewer', 'Viewer'], 0.4),
];
const TCM_ADMIN = makeUser('Hedy', 'Lamarr', 'SiteAdministratorCreator', 'acme.example');
const TCM_ADMIN2 = makeUser('Claude', 'Shannon', 'SiteAdministratorCreator', 'acme.example');
const SERVICE_ACCOUNT = makeUser('Svc', 'Activitylog', 'Creator', 'acme.example');
SERVICE_ACCOUNT.displayName = 'Activity Log Forwarder';
SERVICE_ACCOUNT.userAgent = 'tableau-activity-otel/0.1.0 node/20';
SERVICE_ACCOUNT.ip = '198.51.100.77';

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

interface Event {
  family: 'site' | 'tenant';
  site?: Site;
  type: string;
  time: Instant;
  attrs: Rec;
  seq: number;
}
const events: Event[] = [];
let seq = 0;

function siteEvent(site: Site, type: string, t: Instant, actor: User, outcome: string | null, specific: Rec, initiator: User = actor): Event {
  const common: Rec = {
    eventTime: eventTimeOf(t),
    actorUserId: actor.id,
    actorUserLuid: actor.luid,
    initiatingUserId: initiator.id,
    initiatingUserLuid: initiator.luid,
    siteLuid: site.luid,
    licensingRoleName: ROLES[actor.role].licensingRoleName,
    siteRoleId: ROLES[actor.role].siteRoleId,
    systemAdminLevel: 0,
    eventOutcome: outcome,
  };
  if (chance(site.processedTimeRate)) common.eventProcessedTime = iso(plus(t, int(45, 420)), 3);
  const ev: Event = { family: 'site', site, type, time: t, attrs: { ...common, ...specific }, seq: seq++ };
  events.push(ev);
  return ev;
}

function workbookAttrs(site: Site, wb: Workbook): Rec {
  return {
    workbookLuid: wb.luid,
    name: wb.name,
    repositoryUrl: wb.repo,
    projectLuid: wb.project.luid,
    projectName: wb.project.name,
    ownerLuid: wb.owner.luid,
    ownerName: wb.owner.displayName,
    siteName: site.name,
    size: wb.size,
    revision: wb.revision,
    contentVersion: wb.contentVersion,
    documentVersion: '18.1',
    viewCount: wb.views.length,
    defaultViewIndex: 0,
    displayTabs: true,
    isPrivate: false,
    publishedAllSheets: true,
    dataEngineExtracts: wb.extracts,
    refreshableExtracts: wb.extracts,
    incrementableExtracts: false,
    extractsRefreshedAt: wb.extracts ? pastIso(0, 1) : null,
    extractsIncrementedAt: null,
    firstPublishedAt: wb.firstPublishedAt,
    lastPublishedAt: wb.lastPublishedAt,
    modifiedByUserLuid: wb.owner.luid,
    thumbUserLuid: null,
  };
}

function loginAuthentication(site: Site, t: Instant, user: User, ok: boolean): Event {
  const api = chance(0.15);
  return siteEvent(site, 'login_authentication', t, user, null, {
    status: ok ? 'success' : 'failure',
    reason: ok ? null : 'Invalid username or password',
    logRecordType: 'authentication',
    loginType: pick(['DEFAULT', 'SAML', 'SAML', 'TABID_WITH_MFA']),
    loginUrl: `https://sso.online.tableau.com/public/idp/SSO?site=${site.uri}`,
    loginKey: hex(32),
    userId: user.tenantUserId,
    username: user.email,
    userType: api ? 'API' : 'UI',
    sourceIp: user.ip,
    userAgent: api ? API_USER_AGENT : user.userAgent,
    acceptLanguage: pick(['en-US,en;q=0.9', 'en-GB,en;q=0.8', 'de-DE,de;q=0.9,en;q=0.6']),
    tenantId: TENANT.id,
    timestamp: iso(t, 3),
    uuid: uuid(),
  });
}

function vizqlRequest(site: Site, t: Instant, user: User, wb: Workbook, view: View, session: { sessionId: string; vizql: string }, step: number, initiator: User = user): Event {
  const base = `/vizql/t/${site.uri}/w/${wb.repo}/v/${view.sheetId.split('/')[1]}`;
  const steps: Array<[string, string, string]> = [
    ['GET', 'startSession', `${base}/startSession/viewing?:embed=y&:showVizHome=no&:toolbar=yes&:iid=${int(1, 4)}`],
    ['POST', 'bootstrapSession', `${base}/bootstrapSession/sessions/${session.vizql}`],
    ['POST', 'categorical-filter-by-index', `${base}/sessions/${session.vizql}/commands/tabdoc/categorical-filter-by-index`],
    ['POST', 'render-tooltip-server', `${base}/sessions/${session.vizql}/commands/tabsrv/render-tooltip-server`],
    ['POST', 'set-parameter-value', `${base}/sessions/${session.vizql}/commands/tabdoc/set-parameter-value?:refresh=yes&Region=North%20America`],
    ['GET', 'tempfile', `${base}/tempfile/sessions/${session.vizql}/?key=${int(100000000, 999999999)}&keepfile=yes&attachment=yes`],
  ];
  const [method, endpointName, requestUri] = steps[Math.min(step, steps.length - 1)]!;
  return siteEvent(site, 'vizql_http_request', t, user, 'success', {
    method,
    requestUri,
    endpointName,
    duration: step === 1 ? int(800, 6500) : int(12, 900),
    ipAddress: user.ip,
    userAgent: user.userAgent,
    referrer: `${POD_URI}/#/site/${site.uri}/views/${view.sheetId}`,
    requestId: alnum(24),
    sessionId: session.sessionId,
    vizqlSessionId: session.vizql,
    siteName: site.name,
    siteUri: site.uri,
    viewLuid: view.luid,
    viewName: view.name,
    viewRepoUrl: view.sheetId,
    workbookLuid: wb.luid,
    workbookName: wb.name,
    workbookRevision: wb.contentVersion,
  }, initiator);
}

function accessView(site: Site, t: Instant, user: User, wb: Workbook, view: View, initiator: User = user): Event {
  return siteEvent(
    site,
    'hist_access_view',
    t,
    user,
    null,
    {
      viewLuid: view.luid,
      name: view.name,
      title: view.name,
      caption: view.caption,
      description: chance(0.3) ? `${view.name} for ${wb.project.name}` : null,
      fields: view.fields,
      index: view.index,
      sheetId: view.sheetId,
      sheetType: view.sheetType,
      repositoryUrl: `${wb.repo}/sheets/${view.sheetId.split('/')[1]}`,
      revision: wb.revision,
      firstPublishedAt: view.firstPublishedAt,
      ownerLuid: wb.owner.luid,
      ownerName: wb.owner.displayName,
      workbookLuid: wb.luid,
      workbookName: wb.name,
      siteName: site.name,
      actorExternalId: user.externalId,
    },
    initiator,
  );
}

function accessDatasource(site: Site, t: Instant, user: User, ds: Datasource): Event {
  return siteEvent(site, 'hist_access_datasource', t, user, null, {
    datasourceLuid: ds.luid,
    name: ds.name,
    description: ds.certified ? 'Certified orders data, refreshed hourly' : null,
    isCertified: ds.certified,
    certificationNote: ds.certified ? 'Owned by the BI team' : null,
    ownerLuid: ds.owner.luid,
    ownerName: ds.owner.displayName,
    projectLuid: ds.project.luid,
    projectName: ds.project.name,
    repositoryUrl: ds.repo,
    revision: ds.revision,
    siteName: site.name,
    size: ds.size,
    usingRemoteQueryAgent: false,
    remoteQueryAgentName: null,
  });
}

/** One user's session in one hour: login, views (each with VizQL traffic), maybe a download. */
function userSession(site: Site, hourStart: number, user: User, impersonatedBy?: User): void {
  let t = at(hourStart + int(5, 2900));
  loginAuthentication(site, t, impersonatedBy ?? user, true);
  const session = { sessionId: hex(32).toUpperCase(), vizql: `${hex(32).toUpperCase()}-0:0` };
  const nViews = int(1, 3);
  for (let v = 0; v < nViews; v++) {
    t = plus(t, int(8, 90));
    const wb = pick(site.workbooks);
    const view = pick(wb.views);
    accessView(site, t, user, wb, view, impersonatedBy ?? user);
    const nReq = int(2, 5);
    let rt = t;
    for (let s = 0; s < nReq; s++) {
      rt = plus(rt, int(0, 25));
      // startSession, bootstrapSession, then interactions (filter, tooltip, parameter, export).
      vizqlRequest(site, rt, user, wb, view, session, s < 2 ? s : int(2, 5), impersonatedBy ?? user);
    }
    t = rt;
  }
  if (chance(0.35)) {
    t = plus(t, int(5, 60));
    accessDatasource(site, t, user, pick(site.datasources));
  }
  if (chance(0.3)) {
    t = plus(t, int(5, 60));
    const wb = pick(site.workbooks);
    siteEvent(site, 'hist_download_workbook', t, user, 'success', workbookAttrs(site, wb));
  }
}

function addUsersToGroup(site: Site, t: Instant, group: Group, users: User[], op: 'add' | 'delete'): void {
  for (const u of users) {
    siteEvent(site, 'add_delete_user_to_group', t, site.admin, 'success', {
      groupId: group.id,
      groupLuid: group.luid,
      groupOperation: op,
      userId: u.id,
      userLuid: u.luid,
      isError: false,
    });
    t = plus(t, 0);
  }
}

/** A permission change is written as one record per capability, all at the same moment. */
function grantPermissions(site: Site, t: Instant, wb: Workbook, group: Group, capabilities: Array<[number, string]>): void {
  let eventTime: unknown;
  for (const [capabilityId, capabilityValue] of capabilities) {
    const ev = siteEvent(site, 'create_permissions', t, site.admin, 'success', {
      authorizableType: 'Workbook',
      contentId: wb.id,
      contentLuid: wb.luid,
      contentName: wb.name,
      capabilityId,
      capabilityValue,
      granteeType: 'Group',
      granteeId: group.id,
      granteeLuid: group.luid,
      granteeValue: 'group allow',
      isError: false,
    });
    // One change, one moment: every record of the batch has the same eventTime.
    eventTime ??= ev.attrs.eventTime;
    ev.attrs.eventTime = eventTime;
  }
}

function publishWorkbook(site: Site, t: Instant, wb: Workbook): Event {
  wb.contentVersion += 1;
  wb.revision = `1.${wb.contentVersion - 1}`;
  wb.lastPublishedAt = iso(t, 0);
  wb.size += int(-20_000, 80_000);
  return siteEvent(site, 'hist_publish_workbook', t, wb.owner, 'success', workbookAttrs(site, wb));
}

// --- site activity, hour by hour -------------------------------------------

for (let h = 0; h < HOURS; h++) {
  const hourStart = START_SEC + h * 3600;
  for (const [si, site] of SITES.entries()) {
    const sessions = int(4, 6);
    for (let s = 0; s < sessions; s++) userSession(site, hourStart, pick(site.users.slice(1)));
    // Scripted administrative activity so that every type shows up.
    if (h === 0) {
      addUsersToGroup(site, at(hourStart + int(600, 1800)), site.groups[1 + si]!, site.users.slice(2, 4 + si), 'add');
    }
    if (h === 1) {
      grantPermissions(site, at(hourStart + int(300, 2400)), site.workbooks[si]!, site.groups[1 + si]!, [
        [1, 'Read'],
        [9, 'Filter'],
        [20, 'ExportData'],
      ]);
      publishWorkbook(site, at(hourStart + int(2400, 3000)), site.workbooks[2]!);
    }
    if (h === 2) {
      publishWorkbook(site, at(hourStart + int(100, 1200)), site.workbooks[1 + si]!);
      addUsersToGroup(site, at(hourStart + int(1500, 2500)), site.groups[3]!, site.users.slice(4, 5), 'delete');
    }
  }
}
// An administrator impersonating a viewer (initiatingUser differs from actorUser).
userSession(SITES[0]!, START_SEC + 3600, SITES[0]!.users[3]!, SITES[0]!.admin);
// A failed sign-in (eventOutcome is null for logins; status says failure).
loginAuthentication(SITES[0]!, at(START_SEC + 3600 + 1234), SITES[0]!.users[5]!, false);

// --- outcomes other than success, placed deterministically --------------------

function setOutcome(ev: Event, outcome: string, reason: string): void {
  ev.attrs.eventOutcome = outcome;
  ev.attrs.eventOutcomeReason = reason;
}
const ofType = (type: string, site?: Site) => events.filter((e) => e.type === type && (!site || e.site === site));
{
  const viz = ofType('vizql_http_request');
  for (const i of [7, Math.floor(viz.length / 2), viz.length - 5]) {
    setOutcome(viz[i]!, 'unauthorized', 'User does not have the View capability on this view');
    viz[i]!.attrs.sessionId = null;
  }
  const downloads = ofType('hist_download_workbook');
  if (downloads.length === 0) throw new Error('no download events generated');
  setOutcome(downloads[0]!, 'unauthorized', 'User does not have the Download Workbook/Save As capability');
  const perms = ofType('create_permissions', SITES[1]);
  setOutcome(perms[perms.length - 1]!, 'unauthorized', 'Only the content owner or an administrator can change permissions');
  const publishes = ofType('hist_publish_workbook', SITES[1]);
  setOutcome(publishes[0]!, 'internal_error', 'Unexpected error while saving the workbook');
}

// --- tenant activity ---------------------------------------------------------

function tenantEvent(type: string, t: Instant, who: User, role: string, specific: Rec, opts: { site?: Site | { luid: string; name: string; uri: string }; url: string; session?: string | null; outcome?: string; reason?: string; trace?: string }): Event {
  const attrs: Rec = {
    eventId: uuid(),
    eventType: type,
    eventVersion: '1.0',
    eventTime: eventTimeOf(t),
    eventProcessedTime: iso(plus(t, int(30, 300)), 3),
    eventOutcome: opts.outcome ?? 'success',
    ...(opts.reason ? { eventOutcomeReason: opts.reason } : {}),
    traceUuid: opts.trace ?? uuid(),
    tenantId: TENANT.id,
    tenantName: TENANT.name,
    tenantUri: TENANT.uri,
    initiatingUserId: who.tenantUserId,
    initiatingUserEmail: who.email,
    initiatingUserDisplayName: who.displayName,
    initiatingUserRole: role,
    initiatingUserIpAddress: who.ip,
    initiatingUserAgent: who.userAgent,
    initiatingUrl: opts.url,
    initiatingSessionId: opts.session === undefined ? uuid() : opts.session,
  };
  if (opts.site) {
    attrs.siteId = opts.site.luid;
    attrs.siteName = opts.site.name;
    attrs.siteUri = opts.site.uri;
    attrs.podUri = POD_URI;
  }
  const ev: Event = { family: 'tenant', type, time: t, attrs: { ...attrs, ...specific }, seq: seq++ };
  events.push(ev);
  return ev;
}

const patName = 'activity-log-forwarder';
const patId = uuid();
for (let h = 0; h < HOURS; h++) {
  const hourStart = START_SEC + h * 3600;
  // The forwarder's PAT sign-in every 15 minutes, each followed by an Activity Log read.
  for (let q = 0; q < 4; q++) {
    const t = at(hourStart + q * 900 + int(1, 40));
    const newSession = uuid();
    tenantEvent('personal_access_token_login', t, SERVICE_ACCOUNT, 'TenantAdmin', { tokenId: patId, tokenName: patName, newSessionId: newSession }, { url: `${TCM_URL}/api/v1/pat/login`, session: null });
    const startT = at(hourStart + q * 900 - 900, 0);
    tenantEvent(
      'tcm_activity_log_access',
      plus(t, int(1, 5)),
      SERVICE_ACCOUNT,
      'TenantAdmin',
      { eventProcessedTimeStart: iso(startT, 3), eventProcessedTimeEnd: iso(at(startT.sec + 900, 0), 3), eventTypeAccessed: null },
      { url: `${TCM_URL}/api/v1/tenants/${TENANT.id}/activitylog?startTime=${encodeURIComponent(iso(startT, 0))}&pageSize=100`, session: newSession },
    );
  }
  // Interactive TCM sign-ins by administrators.
  for (let k = 0; k < int(2, 3); k++) {
    const who = pick([TCM_ADMIN, TCM_ADMIN2]);
    const t = at(hourStart + int(60, 3300));
    tenantEvent('user_login_create_session', t, who, 'TenantAdmin', { idpId: 'tableau-id', idpName: 'TableauID', newSessionId: uuid(), expiresAt: iso(at(t.sec + 7200, 0), 0) }, { url: `${TCM_URL}/login`, session: null });
  }
}
{
  // A failed TCM sign-in: no session attributes.
  tenantEvent('user_login_create_session', at(START_SEC + 3 * 60 + 17), TCM_ADMIN2, 'TenantAdmin', { idpId: 'tableau-id', idpName: 'TableauID' }, { url: `${TCM_URL}/login`, session: null, outcome: 'unauthorized', reason: 'Invalid credentials' });
  // A new PAT for the forwarder.
  tenantEvent('create_personal_access_token', at(START_SEC + 1100), TCM_ADMIN, 'TenantAdmin', { tokenId: uuid(), tokenName: `${patName}-2`, expiresAt: '2027-11-24T22:18:20Z' }, { url: `${TCM_URL}/api/v1/pat` });
  tenantEvent('revoke_personal_access_token', at(START_SEC + 2 * 3600 + 1500), TCM_ADMIN, 'TenantAdmin', { tokenId: uuid(), tokenName: 'old-etl-token' }, { url: `${TCM_URL}/api/v1/pat/revoke` });
  // A new site, then its capacity set in one batch (same traceUuid).
  const newSite = { luid: uuid(), name: 'Acme Sandbox', uri: 'acmesandbox' };
  const t = at(START_SEC + 3600 + 2222);
  tenantEvent('create_site', t, TCM_ADMIN, 'TenantAdmin', {}, { url: `${TCM_URL}/api/v1/tenants/${TENANT.id}/sites`, site: newSite });
  const trace = uuid();
  for (const [capacityName, oldAmount, newAmount] of [
    ['CREATOR', 0, 5],
    ['EXPLORER', 0, 20],
    ['VIEWER', 0, 100],
  ] as const) {
    tenantEvent('site_capacity_change', plus(t, 4), TCM_ADMIN, 'TenantAdmin', { capacityName, oldCapacityAmount: oldAmount, newCapacityAmount: newAmount }, { url: `${TCM_URL}/api/v1/tenants/${TENANT.id}/sites/${newSite.luid}/capacity`, site: newSite, trace });
  }
  // Site role changes by a tenant admin, one of them removing the user from the site.
  const trace2 = uuid();
  const t2 = at(START_SEC + 2 * 3600 + 600);
  for (const [i, u] of [SITES[0]!.users[5]!, SITES[1]!.users[2]!, SITES[1]!.users[4]!].entries()) {
    const site = i === 0 ? SITES[0]! : SITES[1]!;
    const removed = i === 2;
    tenantEvent(
      'update_user_site_role',
      plus(t2, i),
      TCM_ADMIN2,
      'TenantAdmin',
      { userId: u.tenantUserId, userName: u.email, email: u.email, oldRole: u.role, newRole: removed ? null : 'Explorer', oldIdp: 'TableauID', newIdp: removed ? null : 'TableauID' },
      { url: `${TCM_URL}/api/v1/tenants/${TENANT.id}/sites/${site.luid}/users`, site, trace: trace2 },
    );
  }
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

interface FileSpec {
  rel: string;
  events: Event[];
  withEventType: boolean;
  gzip: boolean;
  crlfWithBlankLine: boolean;
  noTrailingNewline: boolean;
}

const pad2 = (n: number) => String(n).padStart(2, '0');
function partition(t: Instant): { y: string; m: string; d: string; h: string; stamp: string } {
  const d = new Date(t.sec * 1000);
  return {
    y: String(d.getUTCFullYear()),
    m: pad2(d.getUTCMonth() + 1),
    d: pad2(d.getUTCDate()),
    h: pad2(d.getUTCHours()),
    stamp: `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}-${pad2(d.getUTCHours())}-${pad2(d.getUTCMinutes())}-${pad2(d.getUTCSeconds())}`,
  };
}

events.sort((a, b) => cmp(a.time, b.time) || a.seq - b.seq);

// Group by (prefix, hour, type); vizql_http_request gets two files per hour (before/after :30).
const groups = new Map<string, { prefix: string; hourKey: string; type: string; events: Event[] }>();
for (const ev of events) {
  const p = partition(ev.time);
  const prefix = ev.family === 'site' ? `pod=${POD}/siteLuid=${ev.site!.luid}` : `tenant=${TENANT.id}`;
  const half = ev.type === 'vizql_http_request' && new Date(ev.time.sec * 1000).getUTCMinutes() >= 30 ? 'b' : 'a';
  const hourKey = `y=${p.y}/m=${p.m}/d=${p.d}/h=${p.h}`;
  const key = `${prefix}/${hourKey}/${ev.type}/${half}`;
  let g = groups.get(key);
  if (!g) groups.set(key, (g = { prefix, hourKey, type: ev.type, events: [] }));
  g.events.push(ev);
}

const files: FileSpec[] = [];
for (const g of groups.values()) {
  const last = g.events[g.events.length - 1]!;
  // Firehose-style object name: delivery time (a little after the last record) and a random id.
  const name = `activity-log-1-${partition(plus(last.time, int(60, 300))).stamp}-${uuid()}.txt`;
  files.push({
    rel: `${g.prefix}/${g.hourKey}/eventType=${g.type}/${name}`,
    events: g.events,
    // Tenant records always carry eventType; site records only in some files.
    withEventType: g.events[0]!.family === 'tenant' || chance(0.5),
    gzip: false,
    crlfWithBlankLine: false,
    noTrailingNewline: false,
  });
}
files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));

// Special files, chosen deterministically.
const find = (pred: (f: FileSpec) => boolean, what: string): FileSpec => {
  const f = files.find(pred);
  if (!f) throw new Error(`no file for ${what}`);
  return f;
};
const siteA = SITES[0]!;
const siteB = SITES[1]!;
find((f) => f.rel.includes(siteA.luid) && f.rel.includes('/h=23/') && f.rel.includes('eventType=vizql_http_request/'), 'gzip site file').gzip = true;
find((f) => f.rel.startsWith('tenant=') && f.rel.includes('/h=22/') && f.rel.includes('eventType=personal_access_token_login/'), 'gzip tenant file').gzip = true;
find((f) => f.rel.includes(siteB.luid) && f.rel.includes('/h=22/') && f.rel.includes('eventType=hist_access_view/') && f.events.length >= 3, 'CRLF file').crlfWithBlankLine = true;
find((f) => f.rel.includes(siteB.luid) && f.rel.includes('eventType=add_delete_user_to_group/'), 'no-trailing-newline file').noTrailingNewline = true;

function serialise(ev: Event, withEventType: boolean): string {
  const attrs = withEventType && ev.family === 'site' ? { eventType: ev.type, ...ev.attrs } : ev.attrs;
  return JSON.stringify(attrs);
}

function gzipDeterministic(data: Buffer): Buffer {
  const gz = zlib.gzipSync(data, { level: 9, memLevel: 8, windowBits: 15, strategy: zlib.constants.Z_DEFAULT_STRATEGY });
  // Header: magic(2) CM(1) FLG(1) MTIME(4, zero) XFL(1) OS(1). Pin OS to 3 (Unix) so the bytes
  // do not depend on the platform the generator runs on.
  if (gz[0] !== 0x1f || gz[1] !== 0x8b || gz.readUInt32LE(4) !== 0) throw new Error('unexpected gzip header');
  gz[9] = 3;
  return gz;
}

fs.rmSync(OUT_DIR, { recursive: true, force: true });
const countsByType = new Map<string, { family: string; records: number; files: number }>();
let total = 0;
for (const f of files) {
  const lines = f.events.map((ev) => serialise(ev, f.withEventType));
  let text: string;
  if (f.crlfWithBlankLine) {
    const mid = Math.floor(lines.length / 2);
    text = [...lines.slice(0, mid), '', ...lines.slice(mid)].join('\r\n') + '\r\n';
  } else if (f.noTrailingNewline) {
    text = lines.join('\n');
  } else {
    text = lines.join('\n') + '\n';
  }
  let bytes: Buffer = Buffer.from(text, 'utf8');
  if (f.gzip) bytes = gzipDeterministic(bytes);
  const abs = path.join(OUT_DIR, f.rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, bytes);

  const type = f.events[0]!.type;
  const c = countsByType.get(type) ?? { family: f.events[0]!.family, records: 0, files: 0 };
  c.records += f.events.length;
  c.files += 1;
  countsByType.set(type, c);
  total += f.events.length;
}

// ---------------------------------------------------------------------------
// README (with the summary, so it always matches the tree)
// ---------------------------------------------------------------------------

const typeRows = [...countsByType.entries()]
  .sort((a, b) => (a[1].family === b[1].family ? (a[0] < b[0] ? -1 : 1) : a[1].family === 'site' ? -1 : 1))
  .map(([type, c]) => `| ${c.family} | \`${type}\` | ${c.records} | ${c.files} |`)
  .join('\n');
const special = (pred: (f: FileSpec) => boolean) =>
  files
    .filter(pred)
    .map((f) => `  - \`${f.rel}\``)
    .join('\n');
const outcomeCounts = new Map<string, number>();
for (const ev of events) {
  const o = ev.attrs.eventOutcome === null ? 'null' : String(ev.attrs.eventOutcome);
  outcomeCounts.set(o, (outcomeCounts.get(o) ?? 0) + 1);
}
const digitCounts = new Map<number, number>();
for (const ev of events) {
  const m = /\.(\d+)Z$/.exec(String(ev.attrs.eventTime));
  const d = m ? m[1]!.length : 0;
  digitCounts.set(d, (digitCounts.get(d) ?? 0) + 1);
}

const readme = `# Example Activity Log tree

**Synthetic data.** Every LUID, name, address and event here is made up (IP addresses come from the
documentation ranges 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32). It is shaped like
the Tableau Cloud Activity Log that Tableau replicates into a customer's S3 bucket, so the connector
can be tried and tested without a Tableau site.

Regenerate (deterministic: same bytes on every run, do not edit by hand):

\`\`\`sh
npx tsx scripts/generate-examples.ts
\`\`\`

## Layout

\`\`\`
pod=${POD}/siteLuid=<site LUID>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>.txt   site events
tenant=<tenant id>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>.txt              tenant events
\`\`\`

- Tenant \`${TENANT.id}\` (${TENANT.name}); sites \`${siteA.luid}\` (${siteA.name}) and \`${siteB.luid}\` (${siteB.name}).
- Three hours: 2026-11-24 22:00 UTC to 2026-11-25 01:00 UTC (the partitions cross midnight).
- Files are NDJSON: one flat JSON object per line, all attributes at the top level, real (English)
  attribute names. Partitions follow each record's \`eventTime\`. File names are illustrative.

## Summary

${files.length} files, ${total} records.

| family | eventType | records | files |
| --- | --- | ---: | ---: |
${typeRows}

\`eventOutcome\`: ${[...outcomeCounts.entries()].sort().map(([k, v]) => `${k} ${v}`).join(', ')}.
\`eventTime\` fractional digits: ${[...digitCounts.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k} digits ${v}`).join(', ')}.

## Things a reader must cope with (all deliberate)

- Gzip-compressed files that are still named \`.txt\` (detect gzip by the magic bytes \`1f 8b\`):
${special((f) => f.gzip)}
- CRLF line endings and an empty line in the middle:
${special((f) => f.crlfWithBlankLine)}
- No newline after the last record:
${special((f) => f.noTrailingNewline)}
- Site records carry an \`eventType\` attribute in some files and not in others; the
  \`eventType=<type>\` key segment always names the type. Tenant records always carry it.
- \`eventTime\` has 0, 3, 6 or 9 fractional digits; keep nanosecond precision.
- \`eventProcessedTime\` is present on every record of ${siteA.name} and on some of ${siteB.name}.
- \`eventOutcome\` is \`null\` for sign-in and access events (\`login_authentication\` reports
  \`status\` instead, one of them a \`failure\`); a few records are \`unauthorized\` and one is
  \`internal_error\`, each with \`eventOutcomeReason\`.
- Impersonation: some ${siteA.name} records have \`initiatingUserLuid\` different from \`actorUserLuid\`.
- Many attributes are \`null\`; integers larger than 2^31 appear (\`size\`).
`;
fs.writeFileSync(path.join(OUT_DIR, 'README.md'), readme);

console.log(`wrote ${files.length} files, ${total} records to ${path.relative(process.cwd(), OUT_DIR) || OUT_DIR}`);
for (const [type, c] of [...countsByType.entries()].sort()) console.log(`  ${c.family.padEnd(6)} ${type.padEnd(32)} ${String(c.records).padStart(4)} records in ${c.files} files`);
