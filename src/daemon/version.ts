/** The connector's name and version (the OTel instrumentation scope), read from package.json. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';

export const CONNECTOR_NAME = 'tableau-activity-otel';

export function connectorScope(): InstrumentationScopeInfo {
  const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json');
  let version = '0.0.0';
  try {
    version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
  } catch {
    /* running from an unusual layout: keep the placeholder */
  }
  return { name: CONNECTOR_NAME, version };
}
