/** Config files for CLI tests: one tenant `acme`, a directory source on `<work>/logs`, the given destinations. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function writeDirectoryTenantConfig(work: string, destinations: Array<Record<string, unknown>>, pipeline = 'batchSize: 100, maxInFlightBatches: 2'): string {
  const file = join(work, 'config.yaml');
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      `pipeline: { ${pipeline} }`,
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
      `    destinations: ${JSON.stringify(destinations)}`,
    ].join('\n'),
  );
  return file;
}
