/** The settings every component (source or destination) is created with, besides its own config. */
import type { Logger } from './logger.js';
import type { PipelineMetrics } from './metrics.js';

export interface ComponentSettings {
  /** The component's id within its tenant (a source's checkpoint key). */
  id: string;
  tenantId: string;
  /** Relative paths in the config are resolved against this (the config file's directory). */
  baseDir: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  metrics?: PipelineMetrics | undefined;
}
