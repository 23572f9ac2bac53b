/**
 * A prebuilt catalog: the result of loading `mappings/` (YAML parsing, schema validation and
 * cross-checks of 271 files, about half a second at every start and in every encode worker),
 * saved as JSON by `npm run build` next to this module, with a SHA-256 of the mapping files it
 * was built from. loadCatalog() uses it only when the files it is asked to load hash the same
 * (contents, not dates), so an edited, added or removed mapping file is always read afresh.
 *
 *   node dist/mapping/catalog-snapshot.js [MAPPINGS_DIR]   writes dist/mapping/catalog-snapshot.json
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Catalog, EventTypeEntry } from './catalog.js';
import type { CatalogAttribute, DefaultsFile } from './mapping-file-schema.js';

/** Bump when the shape of a loaded catalog or of the file changes (a snapshot of another version is ignored). */
const SNAPSHOT_VERSION = 2;

// (dist/mapping/ beside this module; the same file when this code runs from the bundle in dist/bundle/)
const SNAPSHOT_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'mapping', 'catalog-snapshot.json');

interface SnapshotEntry extends Omit<EventTypeEntry, 'file' | 'attributes' | 'allAttributes'> {
  /** Relative to the mappings directory. */
  file: string;
  /** Indices into {@link Snapshot.attributes}. */
  attributes: Record<string, number>;
  allAttributes: Array<[string, number]>;
}

interface Snapshot {
  version: number;
  fingerprint: string;
  defaults: DefaultsFile;
  /**
   * Each distinct attribute once. Loaded from the YAML files, a family's common attributes are
   * the same objects in every event type (6 911 attributes, 648 distinct); stored once here and
   * referred to by index, they are the same objects again when read back, without a copy of each
   * per type to parse and then match up (the snapshot went from 1.5 to 0.4 MB; the main thread
   * reads it at every start, and each encode worker gets the catalog by structured clone, which
   * keeps shared objects shared).
   */
  attributes: CatalogAttribute[];
  eventTypes: SnapshotEntry[];
}

/** The files loadCatalog reads, relative to `dir`, in a fixed order. */
export function mappingFiles(dir: string): string[] {
  const out = ['defaults.yaml'];
  for (const family of ['site', 'tenant']) {
    const familyDir = join(dir, family);
    if (!existsSync(familyDir)) continue;
    for (const name of readdirSync(familyDir).sort()) if (name.endsWith('.yaml') || name.endsWith('.yml')) out.push(`${family}/${name}`);
  }
  return out;
}

/** SHA-256 over the names and contents of the mapping files (undefined when one cannot be read). */
export function mappingsFingerprint(dir: string): string | undefined {
  const h = createHash('sha256');
  h.update(`v${SNAPSHOT_VERSION}\n`);
  try {
    for (const rel of mappingFiles(dir)) {
      const bytes = readFileSync(join(dir, rel));
      h.update(`${rel}\n${bytes.length}\n`);
      h.update(bytes);
    }
  } catch {
    return undefined;
  }
  return h.digest('hex');
}

/**
 * The prebuilt catalog, when there is one and it was built from exactly these files
 * (`fingerprint`: theirs, when the caller hashed them already).
 */
export function readCatalogSnapshot(dir: string, file = SNAPSHOT_FILE, fingerprint: string | undefined = mappingsFingerprint(dir)): Catalog | undefined {
  if (!existsSync(file)) return undefined;
  let snap: Snapshot;
  try {
    snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  } catch {
    return undefined;
  }
  if (snap?.version !== SNAPSHOT_VERSION || !Array.isArray(snap.attributes)) return undefined;
  if (fingerprint === undefined || fingerprint !== snap.fingerprint) return undefined;
  const table = snap.attributes;
  const attribute = (i: number): CatalogAttribute => {
    const a = table[i];
    if (a === undefined) throw new RangeError(`attribute ${i} is not in the snapshot`);
    return a;
  };
  const eventTypes = new Map<string, EventTypeEntry>();
  try {
    for (const e of snap.eventTypes) {
      const own: Record<string, CatalogAttribute> = {};
      for (const k in e.attributes) own[k] = attribute(e.attributes[k]!);
      eventTypes.set(e.eventType, { ...e, attributes: own, file: join(dir, e.file), allAttributes: new Map(e.allAttributes.map(([k, i]) => [k, attribute(i)])) });
    }
  } catch {
    return undefined; // not one this code wrote: the files are read instead
  }
  return { dir, defaults: snap.defaults, eventTypes, fingerprint: snap.fingerprint };
}

/** Writes the snapshot of a catalog just loaded from `catalog.dir` (atomically: tmp + rename). */
export function writeCatalogSnapshot(catalog: Catalog, file = SNAPSHOT_FILE): void {
  const fingerprint = catalog.fingerprint;
  // one index per distinct attribute (equal contents, one entry: as the YAML files share them)
  const attributes: CatalogAttribute[] = [];
  const indexOf = new Map<string, number>();
  const index = (a: CatalogAttribute): number => {
    const key = JSON.stringify(a);
    let i = indexOf.get(key);
    if (i === undefined) {
      i = attributes.push(a) - 1;
      indexOf.set(key, i);
    }
    return i;
  };
  const eventTypes = [...catalog.eventTypes.values()].map(
    (e): SnapshotEntry => ({
      ...e,
      file: relative(catalog.dir, e.file),
      attributes: Object.fromEntries(Object.entries(e.attributes).map(([k, a]) => [k, index(a)])),
      allAttributes: [...e.allAttributes].map(([k, a]) => [k, index(a)]),
    }),
  );
  const snap: Snapshot = { version: SNAPSHOT_VERSION, fingerprint, defaults: catalog.defaults, attributes, eventTypes };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(snap));
  renameSync(tmp, file);
}

export { SNAPSHOT_FILE };
