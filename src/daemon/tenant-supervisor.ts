/**
 * Supervision: one slot per tenant (its runtime, its state, its restarts). Tenants are
 * isolated: a tenant whose run fails (a destination that gave up under `retryFor`, a state file
 * it cannot read, a worker that crashed on a poison object) is closed and started again with
 * backoff (BACKOFF_DEFAULTS.tenantRestart: 5 s doubling to 5 min) while the others run on;
 * `run --once` records the failure (exit code 1 at the end).
 */
import { Backoff, BACKOFF_DEFAULTS, type BackoffPolicy } from '../core/backoff.js';
import { DestinationUnavailableError } from '../pipeline/pipeline-errors.js';
import type { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import type { Logger } from './logger.js';
import type { DaemonMetrics } from './metrics.js';
import { probeUntilReached } from './readiness.js';
import type { TenantPlan } from './reload-plan.js';
import type { TenantRuntime } from './tenant-runtime.js';

export type TenantState = 'starting' | 'running' | 'stopping' | 'stopped' | 'failed' | 'finished';

/** A tenant that ran this long before it failed starts its restart backoff over. */
const RAN_WELL_MS = 10 * 60_000;

export class TenantSlot {
  state: TenantState = 'starting';
  runtime: TenantRuntime | null = null;
  /** The last runtime that ran (its counters, after it stopped). */
  last: TenantRuntime | null = null;
  readAbort = new AbortController();
  probeAbort = new AbortController();
  done: Promise<void> = Promise.resolve();
  stopping: Promise<void> | null = null;
  lastError: { message: string; at: number } | undefined;
  restarts = 0;
  restartTimer: NodeJS.Timeout | undefined;
  restartAt = 0;
  startedAt = 0;
  everFailed = false;

  constructor(
    public plan: TenantPlan,
    readonly restartBackoff: Backoff,
  ) {}

  get id(): string {
    return this.plan.config.id;
  }
}

export interface SupervisorOptions {
  once: boolean;
  log: Logger;
  metrics: DaemonMetrics;
  /** Probe destinations when a tenant starts (when /readyz is served). */
  probeDestinations: boolean;
  /** Backoff of a failed tenant's restarts (default BACKOFF_DEFAULTS.tenantRestart). */
  restartBackoff?: Partial<BackoffPolicy>;
  /** The time in-flight batches get once a tenant stops. */
  deliveryGraceMs: number;
  /** The daemon is stopping: nothing is started again. */
  isStopping(): boolean;
  /** Build a tenant's runtime from its plan (not opened). */
  build(plan: TenantPlan): TenantRuntime;
  /** The encode pool a starting tenant uses. */
  pool(): EncodeWorkerPool;
}

export class TenantSupervisor {
  readonly slots = new Map<string, TenantSlot>();
  private readonly restartPolicy: BackoffPolicy;

  constructor(private readonly options: SupervisorOptions) {
    this.restartPolicy = { ...BACKOFF_DEFAULTS.tenantRestart, ...options.restartBackoff };
  }

  /** Add a tenant and start it (with its runtime, when already built). */
  start(plan: TenantPlan, prebuilt?: TenantRuntime): TenantSlot {
    const slot = new TenantSlot(plan, new Backoff(this.restartPolicy));
    this.slots.set(slot.id, slot);
    this.launch(slot, prebuilt);
    return slot;
  }

  /** `run --once`: resolves with the exit code once every tenant finished. */
  async finished(): Promise<number> {
    await Promise.all([...this.slots.values()].map((s) => s.done));
    return [...this.slots.values()].some((s) => s.everFailed) ? 1 : 0;
  }

  /** Stop a tenant gracefully: no new reads, in-flight batches get the grace period, its state is saved. */
  stop(slot: TenantSlot): Promise<void> {
    slot.stopping ??= (async () => {
      if (slot.restartTimer) {
        clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
      }
      if (slot.state === 'starting' || slot.state === 'running') slot.state = 'stopping';
      slot.readAbort.abort();
      slot.probeAbort.abort();
      const timer = setTimeout(() => slot.runtime?.abortDeliveries(), this.options.deliveryGraceMs);
      try {
        await slot.done;
      } finally {
        clearTimeout(timer);
      }
      if (slot.state === 'stopping') slot.state = 'stopped';
    })();
    return slot.stopping;
  }

  stopAll(): Promise<void> {
    return Promise.all([...this.slots.values()].map((s) => this.stop(s))).then(() => undefined);
  }

  /** Forget a stopped tenant (removed by a reload). */
  remove(id: string): void {
    this.slots.delete(id);
    this.options.metrics.tenantUp.remove({ tenant: id });
  }

  /** Open the tenant's state and run it; failures are contained in the slot. */
  private launch(slot: TenantSlot, prebuilt?: TenantRuntime): void {
    const { options } = this;
    slot.readAbort = new AbortController();
    slot.probeAbort = new AbortController();
    slot.state = 'starting';
    let rt: TenantRuntime | undefined = prebuilt;
    try {
      rt ??= options.build(slot.plan);
      rt.open(options.pool());
    } catch (err) {
      if (rt) void rt.close();
      this.failed(slot, err);
      return;
    }
    const runtime = rt;
    slot.runtime = runtime;
    slot.last = runtime;
    slot.state = 'running';
    slot.startedAt = Date.now();
    options.metrics.tenantUp.set({ tenant: slot.id }, 1);
    options.log.info({ tenant: slot.id, sources: runtime.sources.map((s) => s.id), destinations: runtime.destinations.map((d) => d.name) }, 'tenant started');
    if (options.probeDestinations) void probeUntilReached(runtime.destinations, slot.probeAbort.signal);
    const signal = slot.readAbort.signal;
    slot.done = (async () => {
      let error: unknown;
      try {
        await (options.once ? runtime.runOnce(signal) : runtime.run(signal));
      } catch (err) {
        error = err;
      }
      slot.probeAbort.abort();
      try {
        await runtime.close();
      } catch (err) {
        error ??= err;
      }
      slot.runtime = null;
      if (error !== undefined) this.failed(slot, error);
      else slot.state = options.once && !signal.aborted ? 'finished' : 'stopped';
    })();
  }

  private failed(slot: TenantSlot, err: unknown): void {
    const { options } = this;
    const message = err instanceof Error ? err.message : String(err);
    slot.state = 'failed';
    slot.everFailed = true;
    slot.lastError = { message, at: Date.now() };
    options.metrics.tenantUp.set({ tenant: slot.id }, 0);
    const kind = err instanceof DestinationUnavailableError ? 'destination' : 'pipeline';
    if (options.once || slot.stopping || options.isStopping() || this.slots.get(slot.id) !== slot) {
      options.log.error({ tenant: slot.id, err: message, kind }, 'tenant stopped with an error');
      return;
    }
    // ran well for a while: start the backoff over
    if (slot.startedAt > 0 && Date.now() - slot.startedAt > RAN_WELL_MS) slot.restartBackoff.reset();
    const delay = slot.restartBackoff.next();
    slot.restartAt = Date.now() + delay;
    options.log.error({ tenant: slot.id, err: message, kind, restartInMs: delay }, 'tenant stopped with an error; starting it again after a pause (the other tenants are not affected)');
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      if (options.isStopping() || slot.stopping || this.slots.get(slot.id) !== slot) return;
      slot.restarts++;
      this.launch(slot);
    }, delay);
  }
}
