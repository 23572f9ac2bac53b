/**
 * The metrics the pipeline and its components write to: the interface, not the registry. The
 * daemon's DaemonMetrics (daemon/metrics.ts: prom-client registry, label caps, `/metrics`)
 * implements it; code below the daemon sees only these instruments.
 */
import type { Counter, Gauge, Histogram } from 'prom-client';

/** The instruments of the pipeline, its sources and destinations (names and labels in docs/operations.md). */
export interface PipelineMetrics {
  readonly eventsRead: Counter<'tenant' | 'source'>;
  readonly eventsExported: Counter<'tenant' | 'destination'>;
  readonly eventsByType: Counter<'tenant' | 'event_type'>;
  readonly eventsDeadLettered: Counter<'tenant' | 'source' | 'reason'>;
  readonly eventsDroppedByOverride: Counter<'tenant' | 'event_type'>;
  readonly recordsUnenriched: Counter<'tenant'>;
  readonly exportRetries: Counter<'tenant' | 'destination'>;
  readonly batchesDeadLettered: Counter<'tenant' | 'destination'>;
  readonly entriesTruncated: Counter<'tenant' | 'destination'>;
  readonly objectsRead: Counter<'tenant' | 'source'>;
  readonly bytesRead: Counter<'tenant' | 'source'>;
  readonly sourceRequests: Counter<'tenant' | 'source' | 'operation'>;
  readonly newestPartition: Gauge<'tenant' | 'source'>;
  readonly exportLatency: Histogram<'tenant' | 'destination'>;
  readonly objectDuration: Histogram<'tenant' | 'source'>;
  readonly unknownEventTypes: Counter<'tenant' | 'event_type'>;
  readonly unknownAttributes: Counter<'tenant' | 'event_type' | 'attribute'>;
}

/** The instruments of a tenant's enrichment data (docs/enrichment.md, Metrics): refreshes, entries loaded, and the data's age. */
export interface EnrichmentMetrics {
  /** Loads of a tenant's users or sites, by result (`success`, `failure`); a lookup file found unchanged is not counted. */
  readonly enrichmentRefreshes: Counter<'tenant' | 'kind' | 'result'>;
  /** Entries of the copy in use. */
  readonly enrichmentEntries: Gauge<'tenant' | 'kind'>;
  /** Seconds since the copy in use was last known current (read at each scrape from the function set here; undefined removes it). */
  watchEnrichmentAge(tenant: string, kind: string, ageSeconds: (() => number | undefined) | undefined): void;
}

/** What a source reports besides the pipeline's counts: its requests and the newest partition it reached. */
export interface SourceMetrics {
  request(operation: string): void;
  newestPartition(hourStartSeconds: number): void;
}

/** A source's metrics, labelled with its tenant and id (`source` is read when it reports: ids can be set late). */
export function sourceMetrics(m: PipelineMetrics | undefined, tenant: string, source: () => string): SourceMetrics {
  return {
    request: (operation) => m?.sourceRequests.inc({ tenant, source: source(), operation }),
    newestPartition: (t) => m?.newestPartition.set({ tenant, source: source() }, t),
  };
}

export const NO_SOURCE_METRICS: SourceMetrics = { request: () => undefined, newestPartition: () => undefined };
