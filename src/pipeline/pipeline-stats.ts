/** Counters of one tenant's pipeline, read by the CLI summary (and the metrics endpoint later). */
export class PipelineStats {
  objectsRead = 0;
  bytesRead = 0;
  linesRead = 0;
  recordsMapped = 0;
  recordsExported = 0;
  batchesExported = 0;
  retries = 0;
  deadLetteredLines = 0;
  deadLetteredBatches = 0;
  droppedByOverride = 0;
  /** Records mapped while the tenant's reference data was pending (sent unenriched). */
  recordsUnenriched = 0;
  /** Entries a destination's encoder shortened to fit its per-entry limit (summed over destinations). */
  truncatedEntries = 0;
  /** Newest exported eventTime, ns since the epoch. */
  newestExportedTimeUnixNano = 0n;
}
