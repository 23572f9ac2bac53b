/** Config files for CLI tests: one tenant `acme`, a directory source on `<work>/logs`, the given destinations. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function writeDirectoryTenantConfig(work: string, destinations: Array<Record<string, unknown>>, pipeline = 'batchSize: 100, maxInFlightBatches: 2', sourceSettings: Record<string, unknown> = {}): string {
  const file = join(work, 'config.yaml');
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      `pipeline: { ${pipeline} }`,
      'tenants:',
      '  - id: acme',
      `    sources: [ ${JSON.stringify({ type: 'directory', path: join(work, 'logs'), ...sourceSettings })} ]`,
      `    destinations: ${JSON.stringify(destinations)}`,
    ].join('\n'),
  );
  return file;
}
