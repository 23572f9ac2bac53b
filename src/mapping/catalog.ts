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
import { FileError, loadYamlFile } from '../util/yaml-file.js';

export interface EventTypeEntry extends EventMappingFile {
  file: string;
  /** Common and type-specific attributes together. */
  allAttributes: ReadonlyMap<string, CatalogAttribute>;
}

export interface Catalog {
  dir: string;
  defaults: DefaultsFile;
  eventTypes: ReadonlyMap<string, EventTypeEntry>;
}

/** `mappings/` of the installed package (works from `src/` under tsx and from `dist/`). */
export function bundledMappingsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, '..', '..', 'mappings');
}

export function loadCatalog(dir: string = bundledMappingsDir()): Catalog {
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
      try {
        entry = loadYamlFile(file, eventMappingFileSchema);
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
      eventTypes.set(entry.eventType, { ...entry, file, allAttributes: all });
    }
  }
  if (problems.length > 0) {
    const err = new Error(problems.map((p) => p.message).join('\n'));
    err.name = 'CatalogError';
    throw err;
  }
  return { dir, defaults, eventTypes };
}
