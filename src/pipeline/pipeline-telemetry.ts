/**
 * Every event of one source's pipeline, told once: each method updates the tenant's counters
 * (PipelineStats, the CLI summary), the source's progress (`/readyz`, progress display, lag),
 * the Prometheus metrics and the log together, so that they cannot disagree (one place per
 * event, as Vector's internal events do).
 */
import type { SourceObject } from '../sources/source.js';
import type { DeliveryResult } from '../export/delivery.js';
import type { Logger } from '../core/logger.js';
import type { PipelineMetrics } from '../core/metrics.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { ChunkResult } from './chunk-processor.js';

/** What one runner has done so far: for progress displays, `/readyz` and the lag gauges. */
export interface SourceProgress {
  /** Objects listed by the polls so far, and the sum of their sizes where the source knows them. */
  objectsListed: number;
  bytesListed: number;
  /** False once a listed object came without a size. */
  sizesKnown: boolean;
  objectsRead: number;
  bytesRead: number;
  /** Lines read (records before mapping). */
  events: number;
  /** Records every destination accepted. */
  exported: number;
  newestExportedTimeUnixNano: bigint;
  /** Date.now() at the end of the last poll that listed, read and delivered without an error (0: none yet). */
  lastPollOkAt: number;
  lastError?: string;
  lastErrorAt: number;
}

/** A destination's answer that blames the content. */
export type RejectedOutcome = Extract<DeliveryResult, { kind: 'rejected' }>['outcome'];

export interface TelemetryTarget {
  tenantId: string;
  sourceId: string;
  stats: PipelineStats;
  metrics?: PipelineMetrics | undefined;
  /** The source's logger. */
  log: Logger;
  /** Unknown event types / attributes already logged for this tenant. */
  driftSeen: Set<string>;
}

/** Unknown names logged and labelled per tenant before they are lumped together. */
const MAX_DRIFT_NAMES = 200;
const DRIFT_OVERFLOW_KEY = '\u0000overflow';
const DRIFT_OVERFLOW_LABEL = '(other)';

export class PipelineTelemetry {
  readonly progress: SourceProgress = { objectsListed: 0, bytesListed: 0, sizesKnown: true, objectsRead: 0, bytesRead: 0, events: 0, exported: 0, newestExportedTimeUnixNano: 0n, lastPollOkAt: 0, lastErrorAt: 0 };
  private readonly tenant: string;
  private readonly source: string;
  private readonly stats: PipelineStats;
  private readonly metrics: PipelineMetrics | undefined;
  private readonly log: Logger;
  private readonly driftSeen: Set<string>;

  constructor(target: TelemetryTarget) {
    this.tenant = target.tenantId;
    this.source = target.sourceId;
    this.stats = target.stats;
    this.metrics = target.metrics;
    this.log = target.log;
    this.driftSeen = target.driftSeen;
  }

  // -- polls ------------------------------------------------------------------------------

  objectsListed(objects: readonly SourceObject[]): void {
    const p = this.progress;
    p.objectsListed += objects.length;
    for (const o of objects) {
      if (o.size === undefined) p.sizesKnown = false;
      else p.bytesListed += o.size - (o.startOffset ?? 0);
    }
  }

  pollSucceeded(): void {
    this.progress.lastPollOkAt = Date.now();
  }

  pollFailed(err: Error): void {
    this.progress.lastError = err.message;
    this.progress.lastErrorAt = Date.now();
  }

  /** The poll loop goes on after a failed poll. */
  pollRetrying(err: Error): void {
    this.log.error({ err: err.message }, 'source poll failed; retrying after the poll interval');
  }

  objectsAcknowledged(objects: number): void {
    if (objects === 0) return;
    const s = this.stats;
    this.log.info({ objects, exportedTotal: s.recordsExported, deadLetteredTotal: s.deadLetteredLines }, 'objects read and acknowledged');
  }

  objectFinishedNotTold(object: string, err: Error): void {
    this.log.error({ object, err: err.message }, 'source could not be told the object is finished');
  }

  // -- reading ----------------------------------------------------------------------------

  bytesRead(bytes: number): void {
    this.stats.bytesRead += bytes;
    this.progress.bytesRead += bytes;
    this.metrics?.bytesRead.inc({ tenant: this.tenant, source: this.source }, bytes);
  }

  objectRead(startedAtMs: number): void {
    this.stats.objectsRead++;
    this.progress.objectsRead++;
    this.metrics?.objectsRead.inc({ tenant: this.tenant, source: this.source });
    this.metrics?.objectDuration.observe({ tenant: this.tenant, source: this.source }, (Date.now() - startedAtMs) / 1000);
  }

  objectOverLimit(object: string, line: number, reason: string): void {
    this.log.warn({ object, line, reason }, 'object over a limit; the rest of it is dead-lettered');
  }

  objectUnreadable(object: string, line: number, err: string): void {
    this.log.error({ object, line, err }, 'object unreadable; the rest of it is dead-lettered');
  }

  objectReadRetry(object: string, line: number, attempt: number, err: string): void {
    this.log.warn({ object, line, attempt, err }, 'object read failed; retrying from the last line read');
  }

  // -- processing (encode workers) --------------------------------------------------------

  /** What the workers found in a batch: lines, records, drops, types and schema drift (dead letters are told one by one). */
  batchProcessed(result: ChunkResult): void {
    const { stats, metrics, tenant } = this;
    stats.linesRead += result.linesRead;
    this.progress.events += result.linesRead;
    stats.recordsMapped += result.records;
    metrics?.eventsRead.inc({ tenant, source: this.source }, result.linesRead);
    if (result.unenriched) {
      stats.recordsUnenriched += result.unenriched;
      metrics?.recordsUnenriched.inc({ tenant }, result.unenriched);
    }
    for (const [type, n] of Object.entries(result.droppedByType)) {
      stats.droppedByOverride += n;
      metrics?.eventsDroppedByOverride.inc({ tenant, event_type: type }, n);
    }
    if (metrics) for (const [type, n] of Object.entries(result.byType)) metrics.eventsByType.inc({ tenant, event_type: type }, n);
    for (const [type, n] of Object.entries(result.unknownEventTypes)) {
      const known = this.driftName(`t:${type}`);
      metrics?.unknownEventTypes.inc({ tenant, event_type: known ? type : DRIFT_OVERFLOW_LABEL }, n);
      if (known === 'new') this.log.warn({ eventType: type }, 'unknown event type seen: exported with the default mapping');
    }
    for (const [name, n] of Object.entries(result.unknownAttributes)) {
      const dot = name.indexOf('.');
      const known = this.driftName(`a:${name}`);
      metrics?.unknownAttributes.inc({ tenant, event_type: name.slice(0, dot), attribute: known ? name.slice(dot + 1) : DRIFT_OVERFLOW_LABEL }, n);
      if (known === 'new') this.log.warn({ attribute: name }, 'undocumented attribute seen: exported with the default mapping');
    }
  }

  batchSplitting(objects: string[], err: Error & { crashed?: boolean }): void {
    this.log.error({ objects, err: err.message, workerDied: err.crashed }, 'batch failed while processing; splitting it to find the lines at fault');
  }

  batchFailed(err: Error): void {
    this.log.error({ err: err.message }, 'batch failed unexpectedly; its records will be read again');
  }

  /**
   * Schema drift is reported per name, but a flood of names (one record with 100 000 made-up
   * attributes) must not become 100 000 log lines or metric label values: past
   * MAX_DRIFT_NAMES names per tenant, further ones are counted under one label and logged once.
   */
  private driftName(key: string): 'new' | 'known' | null {
    const seen = this.driftSeen;
    if (seen.has(key)) return 'known';
    if (seen.size < MAX_DRIFT_NAMES) {
      seen.add(key);
      return 'new';
    }
    if (!seen.has(DRIFT_OVERFLOW_KEY)) {
      seen.add(DRIFT_OVERFLOW_KEY);
      this.log.warn({ names: MAX_DRIFT_NAMES }, `more than ${MAX_DRIFT_NAMES} unknown event types and attributes: further ones are counted as "${DRIFT_OVERFLOW_LABEL}" and not logged`);
    }
    return null;
  }

  // -- dead letters -----------------------------------------------------------------------

  /** A line's dead letter is on disk. */
  lineDeadLettered(object: string, line: number, reason: string): void {
    const { stats } = this;
    stats.deadLetteredLines++;
    this.metrics?.eventsDeadLettered.inc({ tenant: this.tenant, source: this.source, reason: reasonLabel(reason) });
    if (stats.deadLetteredLines <= 100 || stats.deadLetteredLines % 1000 === 0) {
      this.log.warn({ object, line, reason, deadLettered: stats.deadLetteredLines }, 'line dead-lettered');
    }
  }

  /** Records a destination rejected for their content are about to be dead-lettered (one letter per distinct answer). */
  recordsDeadLettered(destination: string, outcome: RejectedOutcome, records: number, batchRecords: number): void {
    this.stats.deadLetteredBatches++;
    this.metrics?.batchesDeadLettered.inc({ tenant: this.tenant, destination });
    this.metrics?.eventsDeadLettered.inc({ tenant: this.tenant, source: this.source, reason: 'rejected by destination' }, records);
    this.log.error({ destination, status: outcome.status, reason: outcome.reason, records, batchRecords }, 'records rejected by destination; dead-lettered, the rest of the batch delivered');
  }

  deadLetterWriteFailed(dir: string, err: Error): void {
    this.log.error({ dir, err: err.message }, 'cannot write the dead-letter file: the batch waits, checkpoint not advanced');
  }

  deadLetterWriteRecovered(dir: string): void {
    this.log.info({ dir }, 'dead-letter file written again after failure');
  }

  // -- delivery ---------------------------------------------------------------------------

  entriesTruncated(destination: string, entries: number): void {
    this.stats.truncatedEntries += entries;
    this.metrics?.entriesTruncated.inc({ tenant: this.tenant, destination }, entries);
    this.log.warn({ destination, entries }, 'entries over the destination size limit were truncated');
  }

  /** An attempt failed and will be retried. */
  retry(destination: string, reason: string, delayMs: number, attempt: number, records: number): void {
    this.countRetry(destination);
    this.log.warn({ destination, reason, delayMs, attempt, records }, 'export failed; retrying');
  }

  /** The destination refused our credentials or URL: the batch is held (retried like an outage). */
  hold(destination: string, status: number, reason: string, delayMs: number, attempt: number, records: number): void {
    this.countRetry(destination);
    this.log.error({ destination, status, reason, delayMs, attempt, records }, 'destination refuses the request (credentials or URL): holding the batch, checkpoint not advanced; retrying');
  }

  private countRetry(destination: string): void {
    this.stats.retries++;
    this.metrics?.exportRetries.inc({ tenant: this.tenant, destination });
  }

  destinationGaveUp(destination: string, reason: string, attempts: number, status?: number): void {
    this.log.error({ destination, ...(status !== undefined ? { status } : {}), reason, attempts }, 'destination unavailable; giving up, checkpoint not advanced');
  }

  /** One destination took a batch (`accepted` of its records; the others were dead-lettered). */
  deliveredTo(destination: string, accepted: number, startedAtMs: number): void {
    this.metrics?.exportLatency.observe({ tenant: this.tenant, destination }, (Date.now() - startedAtMs) / 1000);
    this.metrics?.eventsExported.inc({ tenant: this.tenant, destination }, accepted);
  }

  /** Every destination took the batch: `exported` records every one of them accepted. */
  batchExported(exported: number, newestTimeUnixNano: bigint): void {
    const { stats, progress } = this;
    stats.batchesExported++;
    stats.recordsExported += exported;
    if (newestTimeUnixNano > stats.newestExportedTimeUnixNano) stats.newestExportedTimeUnixNano = newestTimeUnixNano;
    progress.exported += exported;
    if (newestTimeUnixNano > progress.newestExportedTimeUnixNano) progress.newestExportedTimeUnixNano = newestTimeUnixNano;
  }
}

/**
 * A dead letter's reason as a metric label: its opening words, before any value it quotes or
 * details it adds, and with numbers as N (`unparseable eventTime "…"` → `unparseable eventTime`,
 * `line of 17000000 bytes exceeds maxLineBytes 16777216` → `line of N bytes exceeds maxLineBytes
 * N`), so that the data cannot create label values without bound.
 */
export function reasonLabel(reason: string): string {
  return reason.split(/[:("]/)[0]!.replace(/\d+/g, 'N').trim().slice(0, 48);
}
