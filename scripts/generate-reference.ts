/**
 * Reference documentation generator: turns the catalog in `mappings/` into
 * `docs/event-reference.md`, the page a SIEM engineer reads to write rules: the mapping rules
 * every event type follows, the common attributes of each family, an index of all event types,
 * and, on one page per family (`event-reference-site.md`, `event-reference-tenant.md`: one page
 * would be over the 512 kB GitHub renders), one section per event type (semantics, target, body, every type-specific attribute with
 * the exact attribute name the mapper emits).
 *
 * Output names come from `outputNamesOf` (the catalog's own naming function), the derived and
 * resource attribute names from the mapper's constants, the severity and semantic-convention
 * rules from `mappings/defaults.yaml`: the page cannot drift from what the mapper does. The
 * output is deterministic (sorted, no timestamps), so a test can compare it byte for byte.
 *
 * Usage:
 *   npx tsx scripts/generate-reference.ts [--out FILE] [--mappings DIR] [--check]
 *
 *   --out FILE       write FILE instead of docs/event-reference.md (the family pages,
 *                    event-reference-site.md and event-reference-tenant.md, next to it)
 *   --mappings DIR   read the catalog from DIR instead of the repository's mappings/
 *   --check          write nothing; exit 1 with a message when FILE differs from what would be written
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog, movesOf, outputNamesOf, type Catalog, type EventTypeEntry } from '../src/mapping/catalog.js';
import { OCSF_ACTIVITIES, OCSF_CLASSES, categorySchema, type CatalogAttribute, type Family } from '../src/mapping/mapping-file-schema.js';
import { OCSF_VERSION } from '../src/mapping/ocsf.js';
import {
  ATTR_EVENT_ACTION,
  ATTR_EVENT_CATEGORY,
  ATTR_EVENT_TYPE,
  ATTR_OCSF_ACTIVITY_ID,
  ATTR_OCSF_CLASS_UID,
  ATTR_OCSF_STATUS_ID,
  ATTR_OCSF_TYPE_UID,
  ATTR_OCSF_VERSION,
  ATTR_TARGET_GROUP_ID,
  ATTR_EVENT_SUB_TYPE,
  ATTR_IMPERSONATED,
  ATTR_TARGET_ID,
  ATTR_TARGET_NAME,
  ATTR_TARGET_TYPE,
  ATTR_TARGET_USER_ID,
  DERIVED_ATTRIBUTES,
  RAW_ATTRIBUTE_PREFIX,
  RESOURCE_TABLEAU_TENANT_ID, RESOURCE_TENANT_LABEL,
  UNKNOWN_EVENT_TYPE,
  snakeCase,
} from '../src/mapping/record-mapper.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOG_RECORD_UID,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  ATTR_USER_ID,
  SEVERITY_NUMBER,
  SITE_ROLE_NAMES,
} from '../src/mapping/semantic-conventions.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_OUT = path.join(REPO_ROOT, 'docs', 'event-reference.md');
const FAMILIES: readonly Family[] = ['site', 'tenant'];
/** GitHub cuts off or stops rendering Markdown files past about this size (a README at 512,000 bytes). */
const GITHUB_RENDER_LIMIT = 512_000;

// ---------------------------------------------------------------------------------------------
// Markdown helpers
// ---------------------------------------------------------------------------------------------

/** Inline code, safe for any content (backticks in the text get a longer fence). */
function code(text: string): string {
  const runs = text.match(/`+/g) ?? [];
  const fence = '`'.repeat(Math.max(0, ...runs.map((r) => r.length)) + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** Prose from the mapping files: one line, no raw HTML. */
function prose(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/</g, '&lt;');
}

/** One table cell: a `|` would end the cell (GFM lets `\|` through, also inside code spans). */
function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

/** Rows without padding around the pipes: the page has ~3000 rows and GitHub stops rendering large files. */
function row(cells: readonly string[]): string {
  return `|${cells.map(cell).join('|')}|`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [row(header), `|${header.map(() => '---').join('|')}|`, ...rows.map(row)];
}

/** GitHub's heading anchor (github-slugger): lower case, punctuation other than `-` and `_` removed, spaces → `-`. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

function list(items: readonly string[], conj = 'and'): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} ${conj} ${items[items.length - 1]}`;
}

/** Code-unit order: the same on every machine (no locale). */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// What the mapper emits
// ---------------------------------------------------------------------------------------------

interface OutputInfo {
  /** The attribute name(s) the value is emitted under, as inline code. */
  names: string[];
  /** A short explanation, when the plain name is not the whole story. */
  note?: string;
}

/** Where each documented attribute of a type (or of a family's common attributes) lands. */
function outputsOf(family: Family, attributes: ReadonlyMap<string, CatalogAttribute>, catalog: Catalog, semantics?: EventTypeEntry['semantics']): Map<string, OutputInfo> {
  const defaults = catalog.defaults;
  const names = outputNamesOf({ family, semantics }, attributes, defaults);
  const moves = Object.fromEntries(movesOf({ family, semantics }, defaults));
  const sources = new Map<string, string[]>();
  for (const [source, out] of names) sources.set(out, [...(sources.get(out) ?? []), source]);
  const result = new Map<string, OutputInfo>();
  for (const name of attributes.keys()) {
    const out = names.get(name);
    if (name === 'eventTime') {
      result.set(name, { names: [], note: 'the record\'s `Timestamp` (not an attribute)' });
      continue;
    }
    if (name === 'eventType') {
      result.set(name, { names: [ATTR_EVENT_TYPE], note: `and the event name; a record's own value that differs from the type (a sub-type) is kept as ${code(ATTR_EVENT_SUB_TYPE)}` });
      continue;
    }
    if (out === undefined) continue;
    const info: OutputInfo = { names: [out] };
    if (name === 'requestUri') {
      info.names = [ATTR_URL_PATH, ATTR_URL_QUERY];
      info.note = 'split at the first `?`';
    } else if (out === 'http.request.method') {
      info.note = 'known methods upper-cased; any other is `_OTHER` with the value in `http.request.method_original`';
    } else if (name === 'siteLuid') {
      info.note = 'a resource attribute, not repeated on the record';
    } else if (name === 'eventId' && family === 'tenant') {
      info.note = `also the record's ${code(ATTR_LOG_RECORD_UID)}`;
    } else if (name === 'initiatingUserRole' && family === 'tenant') {
      info.note = `also ${code('user.roles')} as a one-item array`;
    } else if (name === 'siteRoleId' && family === 'site') {
      info.note = `also ${code('user.roles')}: the documented role name as a one-item array (${[...SITE_ROLE_NAMES].map(([id, role]) => `${id} ${role}`).join(', ')}); none for another id`;
    }
    const shared = (sources.get(out) ?? []).filter((s) => s !== name);
    if (shared.length > 0 && moves[name] !== undefined) {
      const fallback = attributes.get(name)?.rename ?? defaults.attributePrefix + snakeCase(name);
      info.note = `shared with ${list(shared.map(code))}: the first present in the record takes ${code(out)}, this one is then emitted as ${code(fallback)}`;
    }
    result.set(name, info);
  }
  return result;
}

function showOutput(info: OutputInfo | undefined): string {
  if (!info) return '';
  const names = info.names.map(code).join(', ');
  return info.note ? (names ? `${names} (${info.note})` : info.note) : names;
}

// ---------------------------------------------------------------------------------------------
// The document
// ---------------------------------------------------------------------------------------------

function typesOf(catalog: Catalog, family: Family): EventTypeEntry[] {
  return [...catalog.eventTypes.values()].filter((e) => e.family === family).sort((a, b) => byName(a.eventType, b.eventType));
}

function ocsfName(uid: number): string {
  return (OCSF_CLASSES as Record<number, string>)[uid] ?? 'unknown class';
}

/** `3 Add User` (the activity's name in the pinned OCSF version). */
function activityName(classUid: number, id: number): string {
  const name = (OCSF_ACTIVITIES as Record<number, Record<number, string>>)[classUid]?.[id];
  return name ? `${id} ${name}` : String(id);
}

/** The activity_id of a type: a number, or where the record says it (`from groupOperation: add 3, …; else 99`). */
function activityText(ocsf: NonNullable<EventTypeEntry['ocsf']>): string {
  if (!ocsf.activityFrom) return String(ocsf.activityId);
  const values = Object.entries(ocsf.activityFrom.map).map(([v, id]) => `${code(v)} ${id}`);
  return `from ${code(ocsf.activityFrom.attribute)}: ${values.join(', ')}; else ${ocsf.activityId}`;
}

/** The failure-field rules that can fire for a type (it documents the field). */
function failureRulesOf(entry: EventTypeEntry, catalog: Catalog): string[] {
  const out: string[] = [];
  for (const rule of catalog.defaults.severity.failureFields) {
    const attr = entry.allAttributes.get(rule.field);
    if (!attr) continue;
    const expected = typeof rule.equals === 'boolean' ? 'boolean' : rule.present ? attr.type : 'string';
    const never = attr.type !== expected ? ` (never matches: the attribute is documented as ${attr.type})` : '';
    out.push(`a failure of at least ${rule.severity} when ${code(rule.field)} ${failureValueText(rule)}${never}`);
  }
  return out;
}

/** What a failure-field rule matches, in words. */
function failureValueText(rule: Catalog['defaults']['severity']['failureFields'][number]): string {
  if (rule.present) return 'is set (not empty)';
  if (rule.oneOf) return `is one of ${rule.oneOf.map(code).join(', ')} (any case)`;
  return `is ${code(String(rule.equals))}${typeof rule.equals === 'string' ? ' (any case)' : ''}`;
}

function defaultBodyText(entry: EventTypeEntry): string {
  return `${entry.eventType.replace(/_/g, ' ')}[ by user {user|actorUserId}][ ({eventOutcome|status})]`;
}

/** The file name of a family's page, next to the main page (GitHub renders Markdown up to 512 kB: one page would be over it). */
export function familyPageName(f: Family): string {
  return `event-reference-${f}.md`;
}
const MAIN_PAGE = 'event-reference.md';

/** The three pages: the main one (how to read, rules, common attributes, index) and one per family, by file name. */
export function renderReferencePages(catalog: Catalog): Map<string, string> {
  const d = catalog.defaults;
  const prefix = d.attributePrefix;
  const all = FAMILIES.flatMap((f) => typesOf(catalog, f));
  const counts = Object.fromEntries(FAMILIES.map((f) => [f, typesOf(catalog, f).length])) as Record<Family, number>;
  const anchors = new Map<string, string>();
  const pages = new Map<string, string[]>([[MAIN_PAGE, []]]);
  let lines = pages.get(MAIN_PAGE)!;
  const out = (...l: string[]): void => {
    lines.push(...l);
  };
  /** A link target on the main page, from a family page. */
  const main = (anchor: string): string => `${MAIN_PAGE}#${anchor}`;
  const heading = (level: number, text: string): string => {
    const s = slug(text);
    const previous = anchors.get(s);
    if (previous !== undefined) throw new Error(`headings '${previous}' and '${text}' would have the same anchor #${s}`);
    anchors.set(s, text);
    out(`${'#'.repeat(level)} ${text}`, '');
    return s;
  };
  const typeAnchor = (e: EventTypeEntry): string => slug(e.eventType);
  const typeLink = (e: EventTypeEntry): string => `${familyPageName(e.family)}#${typeAnchor(e)}`;
  const commonAnchor = (f: Family): string => slug(`${cap(f)} common attributes`);

  // --- Title and how to read ----------------------------------------------------------------
  heading(1, 'Tableau Cloud Activity Log: event reference');
  out(
    '<!-- Generated by scripts/generate-reference.ts from mappings/. Do not edit: change the mapping files and run `npm run docs`. -->',
    '',
    `Every Tableau Cloud Activity Log event type this connector knows (${all.length}: ${counts.site} site, ${counts.tenant} tenant) and exactly`,
    'what it becomes as an OpenTelemetry log record: the event name, severity, the classification',
    'attributes to write rules on, the object the action was done to, the body, and the name every',
    'attribute is emitted under. It is generated from the mapping files in `mappings/`, so it is the',
    'mapping itself, not a description of it.',
    '',
  );
  const withCategory = all.filter((e) => e.category).length;
  const withAction = all.filter((e) => e.action).length;
  const withOcsf = all.filter((e) => e.ocsf).length;
  const withTarget = all.filter((e) => e.target).length;
  const withBody = all.filter((e) => e.body).length;
  heading(2, 'How to read this reference');
  out(
    `- [Rules for every event type](#${slug('Rules for every event type')}): event name, timestamp, severity, the`,
    '  semantic-convention attributes, the attributes the mapper sets itself, the resource.',
    `- [Common attributes](#${slug('Common attributes')}): the attributes every event of a family carries,`,
    '  listed once here and not repeated in each event type.',
    `- [Index of event types](#${slug('Index of event types')}): one row per event type with its family and classification.`,
    `- [Site event types](${familyPageName('site')}) and [tenant event types](${familyPageName('tenant')}), one page each:`,
    '  one section per type, alphabetical, with the attributes specific to it.',
    '',
    'Each event type section starts with four lines:',
    '',
    `- **Event name**: the OTel ${code('EventName')}; **severity**: [default](#severity) unless the type has a field that can raise it.`,
    `- **Category**, **action**, **OCSF** class and activity_id: the values of ${code(ATTR_EVENT_CATEGORY)}, ${code(ATTR_EVENT_ACTION)},`,
    `  ${code(ATTR_OCSF_CLASS_UID)} and ${code(ATTR_OCSF_ACTIVITY_ID)} on every record of the type.`,
    `- **Target**: the value of ${code(ATTR_TARGET_TYPE)}, then which field feeds ${code(ATTR_TARGET_ID)} (${code('id ←')}),`,
    `  ${code(ATTR_TARGET_NAME)} (${code('name ←')}), ${code(ATTR_TARGET_USER_ID)} (${code('user ←')}) and ${code(ATTR_TARGET_GROUP_ID)} (${code('group ←')}),`,
    '  with the name that field is itself emitted under in parentheses.',
    '- **Body**: the template of the record\'s body.',
    '',
    'Then a table of the attributes specific to the type; the [common attributes](#common-attributes) of',
    'its family are on every record too and are not repeated. **Attribute** is the field name in the',
    'Activity Log JSON, **Emitted as** the OpenTelemetry attribute name the mapper writes it under (the',
    'name to use in queries and detection rules), **Type** the documented type; the JSON value keeps its',
    'type (integers stay integers, booleans stay booleans).',
    '',
    ...(all.every((e) => e.category && e.action && e.ocsf && e.target && e.body)
      ? []
      : [
          'Not every type is fully classified. An empty cell in the index, or "none" in a section, means the',
          'attribute is not set on records of that type.',
          '',
        ]),
    `Classified: category on ${withCategory}, action on ${withAction}, OCSF class on ${withOcsf}, target on ${withTarget}`,
    `and a body template on ${withBody} of the ${all.length} event types.`,
    '',
  );

  // --- Rules -----------------------------------------------------------------------------------
  heading(2, 'Rules for every event type');
  heading(3, 'Event name and timestamp');
  out(
    `- **EventName**: ${code(`${d.eventNamePrefix}<eventType>`)}, for example ${code(`${d.eventNamePrefix}${all[0]?.eventType ?? 'hist_access_view'}`)}. The type comes from the`,
    `  object key's ${code('eventType=')} segment, else the record's ${code('eventType')} field, else ${code(UNKNOWN_EVENT_TYPE)}.`,
    `  Records of types not listed here are exported too, with the rules below and no classification.`,
    `- **Timestamp**: ${code('eventTime')}, at full precision (nanoseconds when it has nine fractional digits).`,
    '  **ObservedTimestamp** is when the connector read the record. A record without a parseable',
    `  ${code('eventTime')} is not exported (it goes to the dead-letter file).`,
    '',
  );

  heading(3, 'Severity');
  const outcomeRows: string[][] = [];
  const outcomes = Object.entries(d.severity.outcomes).sort(([a], [b]) => byName(a, b));
  outcomeRows.push([`${code('success')}, none, or any value not listed below`, 'INFO', String(SEVERITY_NUMBER.INFO), '']);
  for (const [value, sev] of outcomes) outcomeRows.push([code(value), sev, String(SEVERITY_NUMBER[sev]), code(value)]);
  out(
    `SeverityText and SeverityNumber come from the record's ${code('eventOutcome')}:`,
    '',
    ...table(['eventOutcome', 'SeverityText', 'SeverityNumber', ATTR_ERROR_TYPE], outcomeRows),
    '',
  );
  if (d.severity.failureFields.length > 0) {
    out(
      'A record whose own field says it failed is a failure, raised to at least the given severity (never lowered);',
      'string values are compared in any case. The event types that document such a field say so in',
      'their section.',
      '',
      ...table(
        ['Field', 'Value', 'At least'],
        d.severity.failureFields.map((r) => [code(r.field), failureValueText(r).replace(/^is /, ''), r.severity]),
      ),
      '',
    );
  }
  out(
    `${code(ATTR_ERROR_TYPE)} is set on every failure, never otherwise: the failed ${code('eventOutcome')} (the last column above);`,
    `else the record's ${list(d.severity.errorTypeFields.map(code), 'or')} when it is a short code (letters, digits, ${code('_.:-')},`,
    `at most 64 characters); else ${code('_OTHER')}. An event type whose mapping file says ${code('severity: { default: … }')}`,
    `starts from that severity instead of INFO; ${code('failure: always')} makes every record of the type a failure.`,
    'A tenant\'s overrides file can set a fixed severity for event types',
    '(`severity:` in its mapping overrides); that replaces the computed one for that tenant.',
    '',
  );

  heading(3, 'Semantic-convention attributes');
  const semSources = new Set<string>();
  for (const f of FAMILIES) for (const s of Object.keys(d[f].semanticConventions)) semSources.add(s);
  const semRows = [...semSources].sort(byName).map((s) => [code(s), d.site.semanticConventions[s] ? code(d.site.semanticConventions[s]) : '', d.tenant.semanticConventions[s] ? code(d.tenant.semanticConventions[s]) : '']);
  semRows.push([code('requestUri'), `${code(ATTR_URL_PATH)}, ${code(ATTR_URL_QUERY)} (split at the first ${code('?')})`, `${code(ATTR_URL_PATH)}, ${code(ATTR_URL_QUERY)} (split at the first ${code('?')})`]);
  semRows.push([code('initiatingUrl'), code(ATTR_URL_FULL), code(ATTR_URL_FULL)]);
  semRows.sort((a, b) => byName(a[0]!, b[0]!));
  out(
    'These source fields are moved (not copied) to OpenTelemetry semantic-convention attributes,',
    'whichever event type carries them. An empty cell means the field keeps its',
    `${code(`${prefix}<snake_case>`)} name in that family.`,
    '',
    ...table(['Field', 'Site events', 'Tenant events'], semRows),
    '',
    'When two fields of one record move to the same attribute, the first one in the record takes it',
    `and the other keeps its ${code(`${prefix}<snake_case>`)} name.`,
    '',
  );

  heading(3, 'Other attributes');
  out(
    `Every other field is emitted as ${code(`${prefix}<snake_case>`)} (${code('workbookLuid')} → ${code(`${prefix}workbook_luid`)},`,
    `${code('newS3BucketName')} → ${code(`${prefix}new_s3_bucket_name`)}), documented or not: Tableau adds fields over time and`,
    'they flow through. Objects and arrays become OTLP maps and arrays. Null fields are omitted. A',
    'field whose usual name is already taken on that record is kept as',
    `${code(`${RAW_ATTRIBUTE_PREFIX}<fieldName>`)}, never overwritten.`,
    '',
  );

  heading(3, 'Attributes set by the mapper');
  const derived: Record<string, string> = {
    [ATTR_LOG_RECORD_UID]: `the tenant ${code('eventId')} when present, else derived from the object's identity and the line number: the same on every re-read, so duplicates can be dropped`,
    [ATTR_EVENT_TYPE]: `the event type, e.g. ${code('hist_access_view')}: the event name without its ${code(d.eventNamePrefix)} prefix`,
    [ATTR_ERROR_TYPE]: `the ${code('eventOutcome')} when it is a failure (see [Severity](#severity))`,
    [ATTR_EVENT_CATEGORY]: `the kind of activity, one of ${list(categorySchema.options.map(code), 'or')}`,
    [ATTR_EVENT_ACTION]: `what was done, a lower-case verb such as ${code('create')}, ${code('delete')}, ${code('update')}, ${code('login')}, ${code('access')}`,
    [ATTR_OCSF_CLASS_UID]: `the [OCSF](https://schema.ocsf.io/) class: ${list(Object.entries(OCSF_CLASSES).map(([uid, name]) => `${uid} ${name}`))}`,
    [ATTR_OCSF_ACTIVITY_ID]: `the OCSF ${code('activity_id')} within that class (e.g. Authentication: 1 Logon, 2 Logoff; Entity Management: 1 Create, 2 Read, 3 Update, 4 Delete); for some types it comes from the record's own field (e.g. ${code('groupOperation')}: ${code('add')} 3 Add User)`,
    [ATTR_OCSF_TYPE_UID]: `the OCSF ${code('type_uid')}: class_uid × 100 + activity_id, e.g. 300603 (Group Management: Add User)`,
    [ATTR_OCSF_STATUS_ID]: `the OCSF ${code('status_id')} of the outcome: 2 Failure when ${code(ATTR_ERROR_TYPE)} is set or a failure field says so (${code('isError: true')}, ${code('isFailure: true')}, ${code('status: failure')}), 1 Success when ${code('eventOutcome')} is ${code('success')} or such a field says it did not fail, 0 Unknown otherwise`,
    [ATTR_OCSF_VERSION]: `the OCSF version the ids follow, ${code(OCSF_VERSION)}`,
    [ATTR_TARGET_TYPE]: `the kind of object the action was done to (${code('workbook')}, ${code('datasource')}, ${code('view')}, ${code('user')}, ${code('group')}, …), named the same way for every type, so "everything done to workbook X" is one query`,
    [ATTR_TARGET_ID]: 'the id of that object',
    [ATTR_TARGET_NAME]: 'its name',
    [ATTR_TARGET_USER_ID]: 'the user the action was about (e.g. the user added to a group)',
    [ATTR_TARGET_GROUP_ID]: 'the group the action was about',
    [ATTR_IMPERSONATED]: `${code('true')} on a site record whose ${code('initiatingUserLuid')} differs from its ${code('actorUserLuid')} (both non-empty): an administrator acting as another user; absent otherwise`,
  };
  const missing = DERIVED_ATTRIBUTES.filter((a) => derived[a] === undefined);
  if (missing.length > 0) throw new Error(`no description for the derived attribute(s) ${missing.join(', ')}: add them to scripts/generate-reference.ts`);
  out(
    `${code(ATTR_LOG_RECORD_UID)} and ${code(ATTR_EVENT_TYPE)} are on every record, ${code(ATTR_ERROR_TYPE)} on failures; the others on`,
    'every record of a type whose section gives them a value. A record\'s own field never takes these',
    'names.',
    '',
    ...table(['Attribute', 'Value'], DERIVED_ATTRIBUTES.map((a) => [code(a), derived[a]!])),
    '',
    `The ${code('tableau.target.*')} ids and names are copies of the first present (non-null, non-empty) of the fields a type`,
    'names (the fields are still emitted under their own names too); a non-string value is written',
    'as its JSON text.',
    '',
  );

  heading(3, 'Body');
  out(
    'The body is a short summary. A type with a body template fills its `{field}` placeholders from the',
    `record (${code('{a|b}')}: the first present; ${code('{user}')}: the acting user, ${code(ATTR_USER_ID)}; ${code('{eventType}')}: the type);`,
    'a `[...]` part disappears when a placeholder inside it has no value, and a missing value outside one is',
    'shown as `?`. A type without a template gets',
    `${code('<event type with spaces>[ by user {user|actorUserId}][ ({eventOutcome|status})]')}, for example`,
    `${code('hist access view by user 4f2… (success)')}. The body is built after a tenant's overrides, so a value`,
    'they drop, redact or hash never reaches it.',
    '',
  );

  heading(3, 'Resource');
  out(
    ...table(
      ['Resource attribute', 'Value'],
      [
        [code(ATTR_SERVICE_NAME), `${FAMILIES.map((f) => `${code(d[f].serviceName)} for ${f} events`).join(', ')}; the tenant's ${code('resource.serviceName')} instead, and a source's own (${code('tableau-server')}) before both`],
        [code(RESOURCE_TABLEAU_TENANT_ID), `Tableau's tenant id: the tcm source's ${code('tenantId')}, else the object key's ${code('tenant=')} segment, else the tenant's ${code('resource.tableauTenantId')}; absent when none says it`],
        [code(RESOURCE_TENANT_LABEL), `the daemon's tenant label (${code('tenants[].id')} of the config)`],
        [code(`${prefix}site_luid`), `the record's ${code('siteLuid')}, else the object key's ${code('siteLuid=')} segment`],
        [code(`${prefix}pod`), `the object key's ${code('pod=')} segment`],
        ['(configured)', `the tenant's ${code('resource.attributes')} and its overrides' ${code('static:')} attributes, then what a source attaches to its objects (${code('host.name')}, …)`],
      ],
    ),
    '',
    'The connector\'s name and version are the instrumentation scope.',
    '',
  );

  // --- Common attributes --------------------------------------------------------------------
  heading(2, 'Common attributes');
  out('Every event of a family carries these (when Tableau fills them); the event type sections do not repeat them.', '');
  for (const f of FAMILIES) {
    heading(3, `${cap(f)} common attributes`);
    const common = new Map(Object.entries(d[f].commonAttributes));
    const outputs = outputsOf(f, common, catalog);
    out(
      ...table(
        ['Attribute', 'Type', 'Emitted as', 'Description'],
        [...common].map(([name, a]) => [code(name), a.type, showOutput(outputs.get(name)), prose(a.description)]),
      ),
      '',
    );
  }

  // --- Index --------------------------------------------------------------------------------
  heading(2, 'Index of event types');
  out(
    ...table(
      ['Event name', 'Family', 'Category', 'Action', 'OCSF class', 'OCSF activity_id'],
      all.map((e) => [
        `[${code(d.eventNamePrefix + e.eventType)}](${typeLink(e)})`,
        e.family,
        e.category ? code(e.category) : '',
        e.action ? code(e.action) : '',
        e.ocsf ? `${e.ocsf.classUid} ${ocsfName(e.ocsf.classUid)}` : '',
        e.ocsf ? activityText(e.ocsf) : '',
      ]),
    ),
    '',
  );

  // --- One section per type -----------------------------------------------------------------
  for (const f of FAMILIES) {
    lines = [];
    pages.set(familyPageName(f), lines);
    heading(1, `Tableau Cloud Activity Log: ${f} event types`);
    out(
      '<!-- Generated by scripts/generate-reference.ts from mappings/. Do not edit: change the mapping files and run `npm run docs`. -->',
      '',
      `The ${counts[f]} ${f} event types, one section each, alphabetical. How to read a section, the rules every`,
      `type follows and the [${f} common attributes](${main(commonAnchor(f))}) are in the [event reference](${MAIN_PAGE}).`,
      '',
    );
    heading(2, `${cap(f)} event types`);
    for (const e of typesOf(catalog, f)) {
      const anchor = heading(3, e.eventType);
      if (anchor !== typeAnchor(e)) throw new Error(`unexpected anchor ${anchor} for ${e.eventType}`);
      out(prose(e.description), '');
      const outputs = outputsOf(f, e.allAttributes, catalog, e.semantics);
      const failure = failureRulesOf(e, catalog);
      const items: string[] = [];
      const typeSeverity = e.severity ? `${e.severity.default ?? 'default'}${e.severity.failure === 'always' ? ', every record a failure' : ''}` : `[default](${main('severity')})`;
      items.push(`Event name ${code(d.eventNamePrefix + e.eventType)}; severity ${typeSeverity}${failure.length > 0 ? `, ${failure.join(', ')}` : ''}`);
      items.push(
        [
          `Category ${e.category ? code(e.category) : 'none'}`,
          `action ${e.action ? code(e.action) : 'none'}`,
          `OCSF ${e.ocsf ? `${e.ocsf.classUid} ${ocsfName(e.ocsf.classUid)}, activity_id ${e.ocsf.activityFrom ? activityText(e.ocsf) : activityName(e.ocsf.classUid, e.ocsf.activityId)}` : 'none'}`,
        ].join('; '),
      );
      if (e.target) {
        const t = e.target;
        const parts = [code(t.type)];
        const from = (attr: string, spec: string | undefined): void => {
          if (!spec) return;
          const fields = spec.split('|').map((s) => s.trim());
          const shown = fields.map((n) => {
            const names = outputs.get(n)?.names ?? [];
            return names.length > 0 ? `${code(n)} (${names.map(code).join(', ')})` : code(n);
          });
          parts.push(`${attr} ← ${fields.length > 1 ? `first of ${list(shown, 'or')}` : shown[0]}`);
        };
        from('id', t.id);
        from('name', t.name);
        from('user', t.user);
        from('group', t.group);
        items.push(`Target ${parts.join('; ')}`);
      } else {
        items.push('Target none');
      }
      items.push(e.body ? `Body ${code(e.body)}` : `Body [default](${main('body')}): ${code(defaultBodyText(e))}`);
      items.push(e.bodyOnFailure ? `Body on failure ${code(e.bodyOnFailure)}` : e.body ? `Body on failure: the body followed by ${code(' (failed: <error.type>)')}` : `Body on failure: the default body with ${code(' failed (<error.type>)')} in place of the outcome`);
      out(...items.map((i) => `- ${i}`), '');
      const own = Object.entries(e.attributes);
      if (own.length === 0) {
        out(`No attributes besides the [${f} common attributes](${main(commonAnchor(f))}).`, '');
      } else {
        out(
          ...table(
            ['Attribute', 'Type', 'Emitted as', 'Description'],
            own.map(([name, a]) => [code(name), a.type, showOutput(outputs.get(name)), prose(a.description)]),
          ),
          '',
        );
      }
    }
  }
  return new Map([...pages].map(([name, l]) => [name, l.join('\n').replace(/\n+$/, '\n')]));
}

/** The three pages as one text (main page first, then site, then tenant), for tests that search all of the reference. */
export function renderReference(catalog: Catalog): string {
  return [...renderReferencePages(catalog).values()].join('\n');
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------

interface Options {
  out: string;
  mappingsDir?: string;
  check: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { out: DEFAULT_OUT, check: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${arg} needs a value`);
      return v;
    };
    switch (arg) {
      case '--out':
        options.out = path.resolve(value());
        break;
      case '--mappings':
        options.mappingsDir = path.resolve(value());
        break;
      case '--check':
        options.check = true;
        break;
      default:
        throw new Error(`unknown argument ${arg} (usage: generate-reference.ts [--out FILE] [--mappings DIR] [--check])`);
    }
  }
  return options;
}

function firstDifference(a: string, b: string): number {
  const la = a.split('\n');
  const lb = b.split('\n');
  for (let i = 0; i < Math.max(la.length, lb.length); i++) if (la[i] !== lb[i]) return i + 1;
  return 0;
}

function main(argv: string[]): number {
  const options = parseArgs(argv);
  const catalog = loadCatalog(options.mappingsDir);
  const pages = renderReferencePages(catalog);
  // the main page at --out, the family pages next to it
  const files = [...pages].map(([name, text]) => ({ file: name === MAIN_PAGE ? options.out : path.join(path.dirname(options.out), name), text }));
  const shown = (file: string): string => path.relative(process.cwd(), file) || file;
  if (options.check) {
    let stale = 0;
    for (const { file, text } of files) {
      const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      if (current === text) continue;
      stale++;
      console.error(
        current === undefined
          ? `${shown(file)} does not exist: run \`npm run docs\` to generate it`
          : `${shown(file)} is out of date with mappings/ (first difference at line ${firstDifference(current, text)}): run \`npm run docs\` and commit the result`,
      );
    }
    if (stale === 0) console.log(`${files.map((f) => shown(f.file)).join(', ')}: up to date (${catalog.eventTypes.size} event types)`);
    return stale === 0 ? 0 : 1;
  }
  mkdirSync(path.dirname(options.out), { recursive: true });
  for (const { file, text } of files) {
    if (Buffer.byteLength(text) > GITHUB_RENDER_LIMIT) {
      console.warn(`warning: ${shown(file)} is ${Buffer.byteLength(text)} bytes; GitHub may not render Markdown files over ${GITHUB_RENDER_LIMIT} bytes`);
    }
    const before = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (before !== text) writeFileSync(file, text);
    console.log(`${shown(file)}: ${Buffer.byteLength(text)} bytes (${before === text ? 'unchanged' : 'written'})`);
  }
  return 0;
}

const invokedDirectly = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    console.error(`generate-reference: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}
