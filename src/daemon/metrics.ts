/**
 * The daemon's Prometheus metrics (prom-client), one registry per process. Labels are tenant,
 * source and destination ids and event types: never a secret, never an unbounded value other
 * than event-type names (themselves capped by the mapper's drift limit).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class DaemonMetrics {
  readonly registry = new Registry();
  readonly eventsRead: Counter<'tenant' | 'source'>;
  readonly eventsExported: Counter<'tenant' | 'destination'>;
  readonly eventsByType: Counter<'tenant' | 'event_type'>;
  readonly eventsDeadLettered: Counter<'tenant' | 'source' | 'reason'>;
  readonly eventsDroppedByOverride: Counter<'tenant' | 'event_type'>;
  readonly exportRetries: Counter<'tenant' | 'destination'>;
  readonly batchesDeadLettered: Counter<'tenant' | 'destination'>;
  readonly entriesTruncated: Counter<'tenant' | 'destination'>;
  readonly objectsRead: Counter<'tenant' | 'source'>;
  readonly bytesRead: Counter<'tenant' | 'source'>;
  readonly sourceRequests: Counter<'tenant' | 'source' | 'operation'>;
  readonly newestPartition: Gauge<'tenant' | 'source'>;
  readonly exportLatency: Histogram<'tenant' | 'destination'>;
  readonly objectDuration: Histogram<'tenant' | 'source'>;
  readonly lagSeconds: Gauge<'tenant' | 'source'>;
  readonly newestExportedEventTime: Gauge<'tenant' | 'source'>;
  readonly checkpointAgeSeconds: Gauge<'tenant'>;
  readonly sourceUp: Gauge<'tenant' | 'source'>;
  readonly destinationUp: Gauge<'tenant' | 'destination'>;
  readonly tenantUp: Gauge<'tenant'>;
  readonly configReloads: Counter<'result'>;
  readonly configLastReloadSuccessful: Gauge;
  readonly configLastReloadSuccessTime: Gauge;
  readonly buildInfo: Gauge<'version' | 'node_version'>;
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
    this.entriesTruncated = new Counter({ name: 'tao_entries_truncated_total', help: "Entries shortened on purpose to fit a destination's per-entry size limit", labelNames: ['tenant', 'destination'], registers });
    this.objectsRead = new Counter({ name: 'tao_objects_read_total', help: 'Objects read to the end', labelNames: ['tenant', 'source'], registers });
    this.bytesRead = new Counter({ name: 'tao_bytes_read_total', help: 'Bytes read from objects (decompressed)', labelNames: ['tenant', 'source'], registers });
    this.sourceRequests = new Counter({ name: 'tao_source_requests_total', help: 'Requests a source made (list, get, login, …)', labelNames: ['tenant', 'source', 'operation'], registers });
    this.newestPartition = new Gauge({ name: 'tao_source_newest_partition_timestamp_seconds', help: 'Start of the newest hour partition read', labelNames: ['tenant', 'source'], registers });
    this.exportLatency = new Histogram({ name: 'tao_export_duration_seconds', help: 'Time to deliver one batch to one destination, retries included', labelNames: ['tenant', 'destination'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers });
    this.objectDuration = new Histogram({ name: 'tao_object_duration_seconds', help: 'Time to read and hand over one object', labelNames: ['tenant', 'source'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300], registers });
    this.lagSeconds = new Gauge({ name: 'tao_lag_seconds', help: 'Now minus the newest eventTime exported (absent until a record was exported)', labelNames: ['tenant', 'source'], registers });
    this.newestExportedEventTime = new Gauge({ name: 'tao_newest_exported_event_timestamp_seconds', help: 'Newest eventTime exported', labelNames: ['tenant', 'source'], registers });
    this.checkpointAgeSeconds = new Gauge({ name: 'tao_checkpoint_age_seconds', help: "Seconds since the tenant's checkpoint file was last written", labelNames: ['tenant'], registers });
    this.sourceUp = new Gauge({ name: 'tao_source_up', help: "1 when the source's last poll succeeded, 0 when it failed", labelNames: ['tenant', 'source'], registers });
    this.destinationUp = new Gauge({ name: 'tao_destination_up', help: '1 when the last request (or probe) the destination answered was accepted, 0 otherwise', labelNames: ['tenant', 'destination'], registers });
    this.tenantUp = new Gauge({ name: 'tao_tenant_up', help: '1 while the tenant runs, 0 while it is stopped by an error (it is restarted with backoff)', labelNames: ['tenant'], registers });
    this.configReloads = new Counter({ name: 'tao_config_reloads_total', help: 'Configuration reloads (SIGHUP), by result (success, failure)', labelNames: ['result'], registers });
    this.configLastReloadSuccessful = new Gauge({ name: 'tao_config_last_reload_successful', help: '1 when the last configuration reload succeeded (or none was tried), 0 when it failed and the previous configuration still runs', registers });
    this.configLastReloadSuccessTime = new Gauge({ name: 'tao_config_last_reload_success_timestamp_seconds', help: 'When the running configuration was loaded', registers });
    this.buildInfo = new Gauge({ name: 'tao_build_info', help: "The connector's version and the Node.js version it runs on (always 1)", labelNames: ['version', 'node_version'], registers });
    this.configLastReloadSuccessful.set(1);
    this.unknownEventTypes = new Counter({ name: 'tao_unknown_event_types_total', help: 'Records of event types no mapping file describes', labelNames: ['tenant', 'event_type'], registers });
    this.unknownAttributes = new Counter({ name: 'tao_unknown_attributes_total', help: 'Records carrying attributes their mapping file does not document', labelNames: ['tenant', 'event_type', 'attribute'], registers });
  }

  private defaultsOn = false;

  /** Add prom-client's standard process and Node.js metrics (CPU, memory, event loop lag, GC, handles) to the registry. */
  enableDefaultMetrics(): void {
    if (this.defaultsOn) return;
    this.defaultsOn = true;
    collectDefaultMetrics({ register: this.registry });
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
