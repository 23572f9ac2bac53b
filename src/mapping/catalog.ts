/**
 * The catalog: every documented event type with its attributes, and the family defaults,
 * read from the YAML files in `mappings/` (see mapping-file-schema.ts).
 */
import { readdirSync, existsSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  defaultsFileSchema,
  eventMappingFileSchema,
  type CatalogAttribute,
  type DefaultsFile,
  type EventMappingFile,
  type Family,
} from './mapping-file-schema.js';
import { FileError, loadYamlFile, parseYaml, positionOf, readTextFile, validateYaml } from '../core/yaml-file.js';
import { compileTemplate, templateFields, TemplateError } from './body-template.js';
import { snakeCase, DERIVED_ATTRIBUTES } from './attribute-names.js';
import { mappingsFingerprint, readCatalogSnapshot } from './catalog-snapshot.js';
import { ATTR_HTTP_REQUEST_METHOD_ORIGINAL, SEMANTICS_KEEP, SEMANTICS_TARGETS } from './semantic-conventions.js';

export interface EventTypeEntry extends EventMappingFile {
  file: string;
  /** Common and type-specific attributes together. */
  allAttributes: ReadonlyMap<string, CatalogAttribute>;
}

export interface Catalog {
  dir: string;
  defaults: DefaultsFile;
  eventTypes: ReadonlyMap<string, EventTypeEntry>;
  /**
   * SHA-256 over the names and contents of the files it was loaded from (catalog-snapshot.ts
   * `mappingsFingerprint`): equal for equal files, whether loaded from them or from the snapshot.
   */
  fingerprint: string;
}

/** `mappings/` of the installed package (works from `src/` under tsx and from `dist/`). */
export function bundledMappingsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, '..', '..', 'mappings');
}

export interface LoadCatalogOptions {
  /** Use the prebuilt catalog when it was built from these very files (default true; see catalog-snapshot.ts). */
  snapshot?: boolean;
}

export function loadCatalog(dir: string = bundledMappingsDir(), options: LoadCatalogOptions = {}): Catalog {
  // (hashed before the files are loaded: one edited meanwhile makes the next reload load it again)
  const fingerprint = mappingsFingerprint(dir);
  if (options.snapshot !== false) {
    const prebuilt = readCatalogSnapshot(dir, undefined, fingerprint);
    if (prebuilt) return prebuilt;
  }
  const defaults = loadYamlFile(join(dir, 'defaults.yaml'), defaultsFileSchema);
  const eventTypes = new Map<string, EventTypeEntry>();
  const problems: FileError[] = [];
  for (const family of ['site', 'tenant'] as Family[]) {
    const familyDir = join(dir, family);
    if (!existsSync(familyDir)) continue;
    for (const name of readdirSync(familyDir).sort()) {
      if (!name.endsWith('.yaml') && !name.endsWith('.yml')) continue;
      const file = join(familyDir, name);
      let entry: EventMappingFile;
      let position: (path: PropertyKey[]) => string;
      try {
        const parsed = parseYaml(file, readTextFile(file));
        entry = validateYaml(parsed, eventMappingFileSchema);
        position = (path) => positionOf(parsed, path);
      } catch (err) {
        if (err instanceof FileError) { problems.push(err); continue; }
        throw err;
      }
      const expected = name.replace(/\.ya?ml$/, '');
      if (entry.eventType !== expected) {
        problems.push(new FileError(file, [`1:1: eventType: '${entry.eventType}' does not match the file name '${expected}'`]));
        continue;
      }
      if (entry.family !== family) {
        problems.push(new FileError(file, [`1:1: family: '${entry.family}' but the file is under ${family}/`]));
        continue;
      }
      const previous = eventTypes.get(entry.eventType);
      if (previous) {
        problems.push(new FileError(file, [`1:1: eventType: '${entry.eventType}' is already defined in ${previous.file}`]));
        continue;
      }
      const all = new Map<string, CatalogAttribute>(Object.entries(defaults[family].commonAttributes));
      for (const [k, v] of Object.entries(entry.attributes)) all.set(k, v);
      const issues = checkEventType(entry, all, defaults);
      if (issues.length > 0) {
        problems.push(new FileError(file, issues.map((i) => `${position(i.path)}: ${i.path.join('.')}: ${i.message}`)));
        continue;
      }
      eventTypes.set(entry.eventType, { ...entry, file, allAttributes: all });
    }
  }
  if (problems.length > 0) {
    const err = new Error(problems.map((p) => p.message).join('\n'));
    err.name = 'CatalogError';
    throw err;
  }
  if (fingerprint === undefined) throw new Error(`cannot read the mapping files in ${dir}: one changed while they were loaded?`);
  return { dir, defaults, eventTypes, fingerprint };
}

interface EntryIssue {
  path: PropertyKey[];
  message: string;
}

/**
 * The semantic-convention moves of one event type: its family's (`defaults.yaml`), with the
 * type's own `semantics:` applied (a name moves the attribute there, `keep` removes the move).
 */
export function movesOf(entry: Pick<EventMappingFile, 'family' | 'semantics'>, defaults: DefaultsFile): Map<string, string> {
  const moves = new Map(Object.entries(defaults[entry.family].semanticConventions));
  for (const [name, to] of Object.entries(entry.semantics ?? {})) {
    if (to === SEMANTICS_KEEP) moves.delete(name);
    else moves.set(name, to);
  }
  return moves;
}

/** Where each documented attribute of a type lands by default. */
export function outputNamesOf(entry: Pick<EventMappingFile, 'family' | 'semantics'>, all: ReadonlyMap<string, CatalogAttribute>, defaults: DefaultsFile): Map<string, string> {
  const moves = movesOf(entry, defaults);
  const out = new Map<string, string>();
  for (const [name, attr] of all) {
    // eventTime is the timestamp; eventType is the event type itself (a record's differing
    // eventType field is kept under tableau.event_sub_type, see record-mapper.ts)
    if (name === 'eventTime' || name === 'eventType') continue;
    if (name === 'requestUri') out.set(name, 'url.path');
    else if (name === 'initiatingUrl') out.set(name, 'url.full');
    else out.set(name, moves.get(name) ?? attr.rename ?? defaults.attributePrefix + snakeCase(name));
  }
  return out;
}

/** Body placeholders and target attributes exist; no two attributes would be emitted under one name. */
function checkEventType(entry: EventMappingFile, all: ReadonlyMap<string, CatalogAttribute>, defaults: DefaultsFile): EntryIssue[] {
  const issues: EntryIssue[] = [];
  const known = (name: string): boolean => name === 'user' || name === 'eventType' || all.has(name);
  for (const key of ['body', 'bodyOnFailure'] as const) {
    const template = entry[key];
    if (!template) continue;
    try {
      compileTemplate(template);
      // {errorType}: the record's error.type, in the failure body only
      const missing = templateFields(template).filter((n) => !known(n) && !(key === 'bodyOnFailure' && n === 'errorType'));
      if (missing.length > 0) issues.push({ path: [key], message: `unknown attribute${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')}` });
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      issues.push({ path: [key], message: err.message });
    }
  }
  if (entry.target) {
    for (const key of ['id', 'name', 'user', 'group'] as const) {
      const spec = entry.target[key];
      if (!spec) continue;
      const missing = spec.split('|').map((n) => n.trim()).filter((n) => !all.has(n));
      if (missing.length > 0) issues.push({ path: ['target', key], message: `unknown attribute${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')}` });
    }
  }
  const activityFrom = entry.ocsf?.activityFrom?.attribute;
  if (activityFrom !== undefined && !all.has(activityFrom)) issues.push({ path: ['ocsf', 'activityFrom', 'attribute'], message: `unknown attribute '${activityFrom}'` });
  const familyMoves = defaults[entry.family].semanticConventions;
  for (const [name, to] of Object.entries(entry.semantics ?? {})) {
    if (!all.has(name) || name === 'eventTime' || name === 'eventType') issues.push({ path: ['semantics', name], message: `'${name}' is not an attribute of this event type` });
    else if (name === 'requestUri' || name === 'initiatingUrl') issues.push({ path: ['semantics', name], message: `'${name}' is split or moved by the mapper itself and cannot be changed here` });
    else if (to === SEMANTICS_KEEP) {
      if (familyMoves[name] === undefined) issues.push({ path: ['semantics', name], message: `keep: '${name}' has no ${entry.family} semantic-convention move to opt out of` });
    } else if (!SEMANTICS_TARGETS.has(to)) issues.push({ path: ['semantics', name], message: `unknown semantic-convention name '${to}' (one of ${[...SEMANTICS_TARGETS].join(', ')}, or keep)` });
  }
  const moves = movesOf(entry, defaults);
  const seen = new Map<string, string>();
  for (const name of [...DERIVED_ATTRIBUTES, ATTR_HTTP_REQUEST_METHOD_ORIGINAL]) seen.set(name, '(set by the mapper)');
  for (const [name, out] of outputNamesOf(entry, all, defaults)) {
    const previous = seen.get(out);
    // two semantic-convention sources of one target never co-occur in a documented type; a rename must not collide
    if (previous && !(moves.has(name) && moves.has(previous))) {
      const path = name in entry.attributes ? ['attributes', name, ...(all.get(name)?.rename ? ['rename'] : [])] : ['attributes'];
      issues.push({ path, message: `'${name}' and ${previous.startsWith('(') ? 'an attribute the mapper sets' : `'${previous}'`} would both be emitted as '${out}'` });
    }
    seen.set(out, name);
  }
  return issues;
}
