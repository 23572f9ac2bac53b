/** `validate --config FILE`: the config and every mapping file it uses, with errors naming file, line and path. */
import { resolve } from 'node:path';
import type { LoadedConfig } from './config.js';
import { loadCatalog } from '../mapping/catalog.js';
import { loadTenantOverrides } from './tenant-runtime.js';

export function validateCommand(loaded: LoadedConfig): string {
  const { config, baseDir } = loaded;
  const catalog = loadCatalog(config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined);
  const overrides = config.tenants.filter((t) => loadTenantOverrides(t, baseDir, catalog)).length;
  const sources = config.tenants.reduce((n, t) => n + t.sources.length, 0);
  const destinations = config.tenants.reduce((n, t) => n + t.destinations.length, 0);
  return `${loaded.file}: ok (${config.tenants.length} tenant(s), ${sources} source(s), ${destinations} destination(s), ${overrides} overrides file(s); ${catalog.eventTypes.size} event types in ${catalog.dir})`;
}
