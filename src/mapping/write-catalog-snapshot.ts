/**
 * `node dist/mapping/write-catalog-snapshot.js [MAPPINGS_DIR]`: loads the mappings (the bundled
 * ones by default), failing on any error in them, and writes the prebuilt catalog next to
 * catalog-snapshot.js (run by `npm run build`; see catalog-snapshot.ts).
 */
import { resolve } from 'node:path';
import { loadCatalog, bundledMappingsDir } from './catalog.js';
import { writeCatalogSnapshot } from './catalog-snapshot.js';

const dir = process.argv[2] ? resolve(process.argv[2]) : bundledMappingsDir();
const catalog = loadCatalog(dir, { snapshot: false });
writeCatalogSnapshot(catalog);
