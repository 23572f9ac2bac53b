/**
 * The daemon's Prometheus metrics (prom-client), one registry per process. Labels are tenant,
 * source and destination ids and event types: never a secret, never an unbounded value other
 * than event-type names (themselves capped by the mapper's drift limit).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export class DaemonMetrics {
  readonly registry = new Registry();
  readonly eventsRead: Counter<'tenant' | 'source'>;
  readonly eventsExported: Counter<'tenant' | 'destination'>;
  readonly eventsByType: Counter<'tenant' | 'event_type'>;
  readonly eventsDeadLettered: Counter<'tenant' | 'source' | 'reason'>;
  readonly eventsDroppedByOverride: Counter<'tenant' | 'event_type'>;
  readonly exportRetries: Counter<'tenant' | 'destination'>;
  readonly batchesDeadLettered: Counter<'tenant' | 'destination'>;
  readonly objectsRead: Counter<'tenant' | 'source'>;
  readonly bytesRead: Counter<'tenant' | 'source'>;
  readonly sourceRequests: Counter<'tenant' | 'source' | 'operation'>;
  readonly newestPartition: Gauge<'tenant' | 'source'>;
  readonly exportLatency: Histogram<'tenant' | 'destination'>;
  readonly objectDuration: Histogram<'tenant' | 'source'>;
  readonly lagSeconds: Gauge<'tenant'>;
  readonly newestExportedEventTime: Gauge<'tenant'>;
  readonly checkpointAgeSeconds: Gauge<'tenant'>;
  readonly unknownEventTypes: Counter<'tenant' | 'event_type'>;
  readonly unknownAttributes: Counter<'tenant' | 'event_type' | 'attribute'>;

  constructor() {
    const registers = [this.registry];
    this.eventsRead = new Counter({ name: 'tao_events_read_total', help: 'Records read from sources (lines that were not blank)', labelNames: ['tenant', 'source'], registers });
    this.eventsExported = new Counter({ name: 'tao_events_exported_total', help: 'Records a destination accepted', labelNames: ['tenant', 'destination'], registers });
    this.eventsByType = new Counter({ name: 'tao_events_by_type_total', help: 'Records mapped, by event type', labelNames: ['tenant', 'event_type'], registers });
    this.eventsDeadLettered = new Counter({ name: 'tao_events_dead_lettered_total', help: 'Lines written to the dead-letter store', labelNames: ['tenant', 'source', 'reason'], registers });
    this.eventsDroppedByOverride = new Counter({ name: 'tao_events_dropped_by_override_total', help: "Records a tenant's overrides dropped", labelNames: ['tenant', 'event_type'], registers });
    this.exportRetries = new Counter({ name: 'tao_export_retries_total', help: 'Export attempts that will be retried', labelNames: ['tenant', 'destination'], registers });
    this.batchesDeadLettered = new Counter({ name: 'tao_batches_dead_lettered_total', help: 'Batches a destination rejected for good', labelNames: ['tenant', 'destination'], registers });
    this.objectsRead = new Counter({ name: 'tao_objects_read_total', help: 'Objects read to the end', labelNames: ['tenant', 'source'], registers });
    this.bytesRead = new Counter({ name: 'tao_bytes_read_total', help: 'Bytes read from objects (decompressed)', labelNames: ['tenant', 'source'], registers });
    this.sourceRequests = new Counter({ name: 'tao_source_requests_total', help: 'Requests a source made (list, get, login, …)', labelNames: ['tenant', 'source', 'operation'], registers });
    this.newestPartition = new Gauge({ name: 'tao_source_newest_partition_timestamp_seconds', help: 'Start of the newest hour partition read', labelNames: ['tenant', 'source'], registers });
    this.exportLatency = new Histogram({ name: 'tao_export_duration_seconds', help: 'Time to deliver one batch to one destination, retries included', labelNames: ['tenant', 'destination'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers });
    this.objectDuration = new Histogram({ name: 'tao_object_duration_seconds', help: 'Time to read and hand over one object', labelNames: ['tenant', 'source'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300], registers });
    this.lagSeconds = new Gauge({ name: 'tao_lag_seconds', help: 'Now minus the newest eventTime exported', labelNames: ['tenant'], registers });
    this.newestExportedEventTime = new Gauge({ name: 'tao_newest_exported_event_timestamp_seconds', help: 'Newest eventTime exported', labelNames: ['tenant'], registers });
    this.checkpointAgeSeconds = new Gauge({ name: 'tao_checkpoint_age_seconds', help: 'Seconds since the checkpoint was last saved', labelNames: ['tenant'], registers });
    this.unknownEventTypes = new Counter({ name: 'tao_unknown_event_types_total', help: 'Records of event types no mapping file describes', labelNames: ['tenant', 'event_type'], registers });
    this.unknownAttributes = new Counter({ name: 'tao_unknown_attributes_total', help: 'Records carrying attributes their mapping file does not document', labelNames: ['tenant', 'event_type', 'attribute'], registers });
  }
}

/** What a source may report about itself, with its tenant and source labels bound. */
export interface SourceMetrics {
  request(operation: string): void;
  newestPartition(hourStartSeconds: number): void;
}

export function sourceMetrics(m: DaemonMetrics | undefined, tenant: string, source: () => string): SourceMetrics {
  return {
    request: (operation) => m?.sourceRequests.inc({ tenant, source: source(), operation }),
    newestPartition: (t) => m?.newestPartition.set({ tenant, source: source() }, t),
  };
}

export const NO_SOURCE_METRICS: SourceMetrics = { request: () => undefined, newestPartition: () => undefined };
