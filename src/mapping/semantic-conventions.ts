/**
 * OpenTelemetry semantic-convention names this mapper emits. The development-status ones live
 * in `@opentelemetry/semantic-conventions/incubating`, whose authors advise copying them into
 * the application rather than importing that entry point at run time: this is that copy.
 */
export const ATTR_USER_ID = 'user.id';
export const ATTR_USER_NAME = 'user.name';
export const ATTR_USER_EMAIL = 'user.email';
export const ATTR_USER_FULL_NAME = 'user.full_name';
export const ATTR_CLIENT_ADDRESS = 'client.address';
export const ATTR_USER_AGENT_ORIGINAL = 'user_agent.original';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_REQUEST_METHOD_ORIGINAL = 'http.request.method_original';
/** HTTP request headers (`http.request.header.<lower-case name>`): string arrays by the conventions, one item per header value. */
export const ATTR_HTTP_REQUEST_HEADER_PREFIX = 'http.request.header.';
export const ATTR_HTTP_REQUEST_HEADER_REFERER = 'http.request.header.referer';
export const ATTR_HTTP_REQUEST_HEADER_ACCEPT_LANGUAGE = 'http.request.header.accept-language';
export const ATTR_URL_FULL = 'url.full';
export const ATTR_URL_PATH = 'url.path';
export const ATTR_URL_QUERY = 'url.query';
export const ATTR_SESSION_ID = 'session.id';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_LOG_RECORD_UID = 'log.record.uid';
export const ATTR_SERVICE_NAME = 'service.name';
/** `user.roles` (an array of strings): tenant `initiatingUserRole`, site `siteRoleId` by its documented name. */
export const ATTR_USER_ROLES = 'user.roles';

/** Site role ids as Tableau documents `siteRoleId` (scripts/seed-pages, the Activity Log attribute table). */
export const SITE_ROLE_NAMES: ReadonlyMap<number, string> = new Map([
  [0, 'SiteAdministratorExplorer'], [1, 'SupportUser'], [2, 'ExplorerCanPublish'], [3, 'Explorer'], [7, 'Guest'],
  [8, 'Unlicensed'], [9, 'Viewer'], [10, 'Creator'], [11, 'SiteAdministratorCreator'],
]);

/**
 * The semantic-convention names an event type's `semantics:` key may move one of its attributes
 * to (mapping-file-schema.ts); `keep` opts an attribute out of its family's move.
 */
export const SEMANTICS_TARGETS: ReadonlySet<string> = new Set([
  ATTR_USER_ID, ATTR_USER_NAME, ATTR_USER_EMAIL, ATTR_USER_FULL_NAME, ATTR_CLIENT_ADDRESS, ATTR_USER_AGENT_ORIGINAL,
  ATTR_HTTP_REQUEST_METHOD, ATTR_URL_FULL, ATTR_SESSION_ID, ATTR_HTTP_REQUEST_HEADER_REFERER, ATTR_HTTP_REQUEST_HEADER_ACCEPT_LANGUAGE,
]);
export const SEMANTICS_KEEP = 'keep';

/**
 * The HTTP methods semantic conventions know (`http.request.method`): a record's method is
 * upper-cased when it is one of them, else it is `_OTHER` and the value goes to
 * `http.request.method_original`.
 */
export const KNOWN_HTTP_METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'CONNECT']);
export const HTTP_METHOD_OTHER = '_OTHER';

export const SEVERITY_NUMBER = { INFO: 9, WARN: 13, ERROR: 17 } as const;
