/** `validate --config FILE`: the config and every mapping and lookup file it uses, with errors naming file, line and path. */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LoadedConfig } from './config.js';
import { loadCatalog } from '../mapping/catalog.js';
import { loadTenantOverrides } from './tenant-runtime.js';
import { enrichmentFields } from './enrichment-config.js';
import { readLookupFile } from '../sources/reference-lookup-file.js';

export async function validateCommand(loaded: LoadedConfig): Promise<string> {
  const { config, baseDir } = loaded;
  const catalog = loadCatalog(config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined);
  const overrides = config.tenants.filter((t) => loadTenantOverrides(t, baseDir, catalog)).length;
  const sources = config.tenants.reduce((n, t) => n + t.sources.length, 0);
  const destinations = config.tenants.reduce((n, t) => n + t.destinations.length, 0);
  // the enrichment lookup files, read as the daemon reads them (a bad line throws a LookupFileError naming file and line)
  let lookups = 0;
  const missing: string[] = [];
  for (const t of config.tenants) {
    const e = t.enrichment;
    if (!e) continue;
    for (const kind of ['users', 'sites'] as const) {
      const spec = e[kind];
      if (!spec || spec.from !== 'file') continue;
      const file = resolve(baseDir, spec.file);
      if (!existsSync(file)) {
        missing.push(file);
        continue;
      }
      await readLookupFile(kind, file, spec.format, kind === 'users' ? e.maxUsers : e.maxSites, enrichmentFields(e), { size: statSync(file).size });
      lookups++;
    }
  }
  const notYet = missing.length > 0 ? `; lookup file(s) not there yet, the daemon waits for them: ${missing.join(', ')}` : '';
  return `${loaded.file}: ok (${config.tenants.length} tenant(s), ${sources} source(s), ${destinations} destination(s), ${overrides} overrides file(s), ${lookups} lookup file(s); ${catalog.eventTypes.size} event types in ${catalog.dir})${notYet}`;
}
