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

/** Bump when the shape of a loaded catalog changes (a snapshot of another version is ignored). */
const SNAPSHOT_VERSION = 1;

// (dist/mapping/ beside this module; the same file when this code runs from the bundle in dist/bundle/)
const SNAPSHOT_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'mapping', 'catalog-snapshot.json');

interface SnapshotEntry extends Omit<EventTypeEntry, 'file' | 'allAttributes'> {
  /** Relative to the mappings directory. */
  file: string;
  allAttributes: Array<[string, CatalogAttribute]>;
}

interface Snapshot {
  version: number;
  fingerprint: string;
  defaults: DefaultsFile;
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

/** The prebuilt catalog, when there is one and it was built from exactly these files. */
export function readCatalogSnapshot(dir: string, file = SNAPSHOT_FILE): Catalog | undefined {
  if (!existsSync(file)) return undefined;
  let snap: Snapshot;
  try {
    snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  } catch {
    return undefined;
  }
  if (snap.version !== SNAPSHOT_VERSION) return undefined;
  if (mappingsFingerprint(dir) !== snap.fingerprint) return undefined;
  const eventTypes = new Map<string, EventTypeEntry>();
  const shared = sharedAttributes();
  for (const e of snap.eventTypes) {
    const own = Object.fromEntries(Object.entries(e.attributes).map(([k, a]) => [k, shared(a)]));
    eventTypes.set(e.eventType, { ...e, attributes: own, file: join(dir, e.file), allAttributes: new Map(e.allAttributes.map(([k, a]) => [k, shared(a)])) });
  }
  return { dir, defaults: snap.defaults, eventTypes };
}

/**
 * One object for each distinct attribute. Loaded from the YAML files, the family's common
 * attributes are the same objects in every event type; JSON makes a copy of each per type (6 911
 * attributes, 648 distinct), and the copies were two thirds of the catalog's heap (2.2 MB, in the
 * main thread and again in each encode worker, which gets the catalog by structured clone, which
 * keeps shared objects shared).
 */
function sharedAttributes(): (a: CatalogAttribute) => CatalogAttribute {
  const seen = new Map<string, CatalogAttribute>();
  return (a) => {
    const key = JSON.stringify(a);
    const known = seen.get(key);
    if (known) return known;
    seen.set(key, a);
    return a;
  };
}

/** Writes the snapshot of a catalog just loaded from `catalog.dir` (atomically: tmp + rename). */
export function writeCatalogSnapshot(catalog: Catalog, file = SNAPSHOT_FILE): void {
  const fingerprint = mappingsFingerprint(catalog.dir);
  if (fingerprint === undefined) throw new Error(`cannot read the mapping files in ${catalog.dir}`);
  const snap: Snapshot = {
    version: SNAPSHOT_VERSION,
    fingerprint,
    defaults: catalog.defaults,
    eventTypes: [...catalog.eventTypes.values()].map((e) => ({ ...e, file: relative(catalog.dir, e.file), allAttributes: [...e.allAttributes] })),
  };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(snap));
  renameSync(tmp, file);
}

export { SNAPSHOT_FILE };
