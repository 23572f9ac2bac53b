/** What every source runner of one tenant shares: its pool, destinations, state, counters and settings. */
import type { Destination } from '../export/destination.js';
import type { Logger } from '../core/logger.js';
import type { PipelineMetrics } from '../core/metrics.js';
import type { DeadLetterStore } from './dead-letter-store.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { EncodeWorkerPool } from './worker-pool.js';
import type { CheckpointSaver } from './checkpoint-saver.js';
import type { PipelineSettings } from './pipeline-settings.js';

export interface TenantContext {
  tenantId: string;
  /** Replaced after a reload (the next batches go to the new pool). */
  pool: EncodeWorkerPool;
  destinations: Destination[];
  deadLetters: DeadLetterStore;
  checkpoints: CheckpointSaver;
  stats: PipelineStats;
  log: Logger;
  settings: PipelineSettings;
  metrics?: PipelineMetrics;
  /** Unknown event types / attributes already logged for this tenant. */
  driftSeen: Set<string>;
  /**
   * Set when batches wait before they are encoded (the tenant's enrichment data loading, read
   * ahead meanwhile): resolves `true` once they may go on, `false` when reading stopped first
   * (the batches waiting are not delivered: their lines are read again at the next start).
   */
  encodeGate?: Promise<boolean>;
}
