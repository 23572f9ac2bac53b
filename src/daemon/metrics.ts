/**
 * The daemon's Prometheus metrics (prom-client), one registry per process. Labels are tenant,
 * source and destination ids from the configuration, names from the code (operations, results),
 * and a few that come from the data: `event_type`, `attribute` and `reason` (a dead letter's
 * opening words). Those are capped per tenant and label ({@link MAX_DATA_LABEL_VALUES} values;
 * the catalog's event types are always fine): further values are counted under "(other)", so
 * made-up event types cannot create series without bound. Never a secret.
 *
 * Audit (which label comes from where): tenant, source, destination: configuration; operation:
 * the sources' code; result, version, node_version: the code; event_type: the records' eventType
 * (or object key), capped; attribute: the records' field names, capped (and by the drift limit);
 * reason: the dead-letter reason's opening words (reasonLabel), capped.
 */
import type { EnrichmentMetrics, PipelineMetrics } from '../core/metrics.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type LabelValues } from 'prom-client';
import type { SharedRegionCounts, WorkerHeap, WorkerHeaps } from '../pipeline/encode-messages.js';
import { PROM_CLIENT_EVENT_LOOP_SAMPLE_MS, replaceEventLoopDelayMetrics } from './event-loop-delay-metrics.js';

/** Labels whose values come from the data. */
export const DATA_LABELS = ['event_type', 'attribute', 'reason'] as const;
export type DataLabel = (typeof DATA_LABELS)[number];
/** Distinct values of one data label per tenant (besides the catalog's event types) before the rest are lumped together. */
export const MAX_DATA_LABEL_VALUES = 200;
/** The label value further values are counted under. */
export const OTHER_LABEL_VALUE = '(other)';

/** Which values of the data labels each tenant may use. */
export class DataLabelCap {
  private known: ReadonlySet<string> = new Set();
  private readonly seen = new Map<string, Set<string>>();
  private readonly overflowed = new Set<string>();

  constructor(
    private readonly max = MAX_DATA_LABEL_VALUES,
    private readonly onOverflow?: (tenant: string, label: DataLabel) => void,
  ) {}

  /** The event types of the catalog in use: always labelled by name. */
  setKnownEventTypes(types: Iterable<string>): void {
    this.known = new Set(types);
  }

  value(tenant: string, label: DataLabel, value: string): string {
    if (value === OTHER_LABEL_VALUE) return value;
    if (label === 'event_type' && this.known.has(value)) return value;
    const key = `${tenant}\u0000${label}`;
    let seen = this.seen.get(key);
    if (!seen) {
      seen = new Set();
      this.seen.set(key, seen);
    }
    if (seen.has(value)) return value;
    if (seen.size < this.max) {
      seen.add(value);
      return value;
    }
    if (!this.overflowed.has(key)) {
      this.overflowed.add(key);
      this.onOverflow?.(tenant, label);
    }
    return OTHER_LABEL_VALUE;
  }
}

/**
 * A counter whose data labels pass through the cap, whoever increments it. (prom-client sets
 * `inc` on each instance in its constructor, so it is wrapped there; these counters have no
 * exemplars.)
 */
function withDataLabelCap<T extends string>(counter: Counter<T>, cap: DataLabelCap): Counter<T> {
  const inc = counter.inc.bind(counter) as (labels?: LabelValues<T> | number, value?: number) => void;
  const capLabels = (labels: LabelValues<T>): LabelValues<T> => {
    const l = labels as Record<string, string | number | undefined>;
    const tenant = String(l.tenant ?? '');
    const capped: Record<string, string | number | undefined> = { ...l };
    for (const name of DATA_LABELS) {
      const v = l[name];
      if (v !== undefined) capped[name] = cap.value(tenant, name, String(v));
    }
    return capped as LabelValues<T>;
  };
  counter.inc = ((labels?: LabelValues<T> | number, value?: number): void => {
    if (typeof labels === 'object' && labels !== null) inc(capLabels(labels), value);
    else inc(labels, value);
  }) as Counter<T>['inc'];
  return counter;
}

export class DaemonMetrics implements PipelineMetrics, EnrichmentMetrics {
  readonly registry = new Registry();
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
  readonly labelValuesCapped: Counter<'tenant' | 'label'>;
  readonly enrichmentRefreshes: Counter<'tenant' | 'kind' | 'result'>;
  readonly enrichmentEntries: Gauge<'tenant' | 'kind'>;
  readonly enrichmentDataAge: Gauge<'tenant' | 'kind'>;
  readonly encodeWorkerHeapUsed: Gauge<'worker'>;
  readonly encodeWorkerHeapSize: Gauge<'worker'>;
  readonly encodeWorkerExternalMemory: Gauge<'worker'>;
  readonly encodeSharedRegions: Gauge<'kind'>;
  /** The encode pool's regions of shared buffers now (the daemon's current pool); `undefined`: none. */
  private sharedRegions: (() => SharedRegionCounts | undefined) | undefined;
  /** Asks the encode workers for their heaps (the daemon's current pool); one answer serves the three gauges of a scrape. */
  private workerHeaps: (() => Promise<WorkerHeaps>) | undefined;
  private workerHeapsAnswer: { atMs: number; answer: Promise<WorkerHeaps> } | undefined;
  private readonly enrichmentAges = new Map<string, { tenant: string; kind: string; age: () => number | undefined }>();
  /** The cap on the values of the labels that come from the data. */
  readonly dataLabels: DataLabelCap;

  constructor(options: { maxDataLabelValues?: number } = {}) {
    const registers = [this.registry];
    this.labelValuesCapped = new Counter({ name: 'tao_metric_label_values_capped_total', help: `A label whose values come from the data (event_type, attribute, reason) reached its ${options.maxDataLabelValues ?? MAX_DATA_LABEL_VALUES} values for the tenant: further values are counted as "${OTHER_LABEL_VALUE}" (1 per tenant and label)`, labelNames: ['tenant', 'label'], registers });
    this.dataLabels = new DataLabelCap(options.maxDataLabelValues ?? MAX_DATA_LABEL_VALUES, (tenant, label) => this.labelValuesCapped.inc({ tenant, label }));
    const capped = <T extends string>(config: CounterConfiguration<T>): Counter<T> => withDataLabelCap(new Counter(config), this.dataLabels);
    this.eventsRead = new Counter({ name: 'tao_events_read_total', help: 'Records read from sources (lines that were not blank)', labelNames: ['tenant', 'source'], registers });
    this.eventsExported = new Counter({ name: 'tao_events_exported_total', help: 'Records a destination accepted', labelNames: ['tenant', 'destination'], registers });
    this.eventsByType = capped({ name: 'tao_events_by_type_total', help: 'Records mapped, by event type', labelNames: ['tenant', 'event_type'], registers });
    this.eventsDeadLettered = capped({ name: 'tao_events_dead_lettered_total', help: 'Lines written to the dead-letter store', labelNames: ['tenant', 'source', 'reason'], registers });
    this.eventsDroppedByOverride = capped({ name: 'tao_events_dropped_by_override_total', help: "Records a tenant's overrides dropped", labelNames: ['tenant', 'event_type'], registers });
    this.recordsUnenriched = new Counter({ name: 'tao_records_unenriched_total', help: "Records mapped while the tenant's reference data (enrichment) was not loaded yet: sent without the users' and sites' names", labelNames: ['tenant'], registers });
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
    this.unknownEventTypes = capped({ name: 'tao_unknown_event_types_total', help: 'Records of event types no mapping file describes', labelNames: ['tenant', 'event_type'], registers });
    this.enrichmentRefreshes = new Counter({ name: 'tao_enrichment_refreshes_total', help: "Loads of a tenant's enrichment users or sites (TCM or lookup file), by result (success, failure)", labelNames: ['tenant', 'kind', 'result'], registers });
    this.enrichmentEntries = new Gauge({ name: 'tao_enrichment_entries', help: 'Users or sites in the enrichment copy in use', labelNames: ['tenant', 'kind'], registers });
    const ages = this.enrichmentAges;
    this.enrichmentDataAge = new Gauge({
      name: 'tao_enrichment_data_age_seconds',
      help: 'Seconds since the enrichment users or sites in use were last loaded (a lookup file: last found unchanged); grows while refreshes fail',
      labelNames: ['tenant', 'kind'],
      registers,
      collect() {
        for (const { tenant, kind, age } of ages.values()) {
          const v = age();
          if (v === undefined) this.remove({ tenant, kind });
          else this.set({ tenant, kind }, v);
        }
      },
    });
    // the encode workers' heaps (nodejs_heap_* and nodejs_external_memory_bytes are the main thread's)
    const heaps = async (): Promise<WorkerHeaps> => {
      if (!this.workerHeaps) return [];
      const now = Date.now();
      if (!this.workerHeapsAnswer || now - this.workerHeapsAnswer.atMs > 1000) this.workerHeapsAnswer = { atMs: now, answer: this.workerHeaps() };
      return this.workerHeapsAnswer.answer;
    };
    const workerGauge = (name: string, help: string, value: (h: WorkerHeap) => number): Gauge<'worker'> =>
      new Gauge({
        name,
        help,
        labelNames: ['worker'],
        registers,
        async collect() {
          this.reset();
          for (const { worker, heap } of await heaps()) this.set({ worker: String(worker) }, value(heap));
        },
      });
    this.encodeWorkerHeapUsed = workerGauge('tao_encode_worker_heap_used_bytes', "An encode worker's V8 heap in use (by worker index)", (h) => h.usedBytes);
    this.encodeWorkerHeapSize = workerGauge('tao_encode_worker_heap_size_bytes', "An encode worker's V8 heap, the pages it has taken (by worker index)", (h) => h.totalBytes);
    this.encodeWorkerExternalMemory = workerGauge('tao_encode_worker_external_memory_bytes', "Memory outside an encode worker's V8 heap that V8 accounts to it, ArrayBuffers and the like (by worker index)", (h) => h.externalBytes);
    const regions = (): SharedRegionCounts | undefined => this.sharedRegions?.();
    this.encodeSharedRegions = new Gauge({
      name: 'tao_encode_shared_buffer_regions',
      help: "Regions of the encode pool's shared buffers alive, by kind (input, output): each 64 MiB of address space, resident only where written; the first of each kind stays, the others are made under load and dropped once unused for 60 s",
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        const r = regions();
        if (!r) return;
        this.set({ kind: 'input' }, r.inputs);
        this.set({ kind: 'output' }, r.outputs);
      },
    });
    this.unknownAttributes = capped({ name: 'tao_unknown_attributes_total', help: 'Records carrying attributes their mapping file does not document', labelNames: ['tenant', 'event_type', 'attribute'], registers });
  }

  watchEnrichmentAge(tenant: string, kind: string, ageSeconds: (() => number | undefined) | undefined): void {
    const key = `${tenant}\u0000${kind}`;
    if (ageSeconds) this.enrichmentAges.set(key, { tenant, kind, age: ageSeconds });
    else {
      this.enrichmentAges.delete(key);
      this.enrichmentDataAge.remove({ tenant, kind });
    }
  }

  /** Where the encode workers' heaps come from (the daemon's current pool); `undefined`: none. */
  watchEncodeWorkers(heaps: (() => Promise<WorkerHeaps>) | undefined): void {
    this.workerHeaps = heaps;
    this.workerHeapsAnswer = undefined;
  }

  /** Where the shared buffers' region counts come from (the daemon's current pool); `undefined`: none. */
  watchSharedRegions(regions: (() => SharedRegionCounts | undefined) | undefined): void {
    this.sharedRegions = regions;
  }

  private defaultsOn = false;

  /** Add prom-client's standard process and Node.js metrics (CPU, memory, event loop lag, GC, handles) to the registry. */
  enableDefaultMetrics(): void {
    if (this.defaultsOn) return;
    this.defaultsOn = true;
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: PROM_CLIENT_EVENT_LOOP_SAMPLE_MS });
    // (prom-client's sampler wakes the main thread every 10 ms by default and reports its period as delay)
    replaceEventLoopDelayMetrics(this.registry);
  }
}

/** What a source may report about itself, with its tenant and source labels bound. */
export { sourceMetrics, NO_SOURCE_METRICS, type SourceMetrics } from '../core/metrics.js';
