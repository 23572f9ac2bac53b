/** Every fault scenario, in the order the table lists them. */
import type { Scenario } from '../lib/harness.js';
import { kill9 } from './kill9.js';
import { destinationDown, destination429, destinationSlow } from './destinations.js';
import { s3Restart, s3Resets, s3Throttle } from './s3.js';
import { diskFull } from './disk-full.js';
import { badInput } from './bad-input.js';
import { poisonLines } from './poison-lines.js';
import { securitySecrets, securityTls, securityTenants, securityPaths } from './security.js';
import { securityTcmRedirect, securitySsrf } from './security-tcm.js';
import { replay } from './replay.js';
import { securityOverrides, securityLogs, securityReadyz, securityObjectLimits } from './security-hardening.js';
import { destination401, destination413 } from './destination-refusals.js';
import { serverNode } from './server-node.js';
import { tableauServer } from './tableau-server.js';
import { tenantRestart, secondDaemon } from './daemon-state.js';
import { googleSecOps } from './google-secops.js';
import { sentinel } from './sentinel.js';
import { enrichmentTcmDown } from './enrichment.js';
import { enrichmentLookupBig } from './enrichment-lookup.js';

export const SCENARIOS: Scenario[] = [
  kill9,
  destinationDown,
  destination429,
  destinationSlow,
  s3Restart,
  s3Resets,
  s3Throttle,
  diskFull,
  badInput,
  poisonLines,
  securitySecrets,
  securityTls,
  securityTenants,
  securityPaths,
  securityTcmRedirect,
  securitySsrf,
  securityOverrides,
  securityLogs,
  securityReadyz,
  securityObjectLimits,
  replay,
  destination401,
  destination413,
  serverNode,
  tableauServer,
  tenantRestart,
  secondDaemon,
  googleSecOps,
  sentinel,
  enrichmentTcmDown,
  enrichmentLookupBig,
];
