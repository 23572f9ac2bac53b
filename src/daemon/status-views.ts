/**
 * Status views of the running tenants, read by the endpoints and the progress display: per
 * source progress, the computed gauges (lag, newest exported event, checkpoint age, up/down)
 * and the `/readyz` answer.
 */
import { statSync } from 'node:fs';
import type { SourceProgress } from '../pipeline/pipeline-telemetry.js';
import type { DaemonMetrics } from './metrics.js';
import { ObservedDestination } from './readiness.js';
import type { DestinationHealthRegistry } from './destination-health-registry.js';
import type { Plan } from './reload-plan.js';
import type { TenantRuntime } from './tenant-runtime.js';
import type { TenantSlot } from './tenant-supervisor.js';

export interface SourceProgressView {
  tenant: string;
  source: string;
  type: string;
  progress: SourceProgress;
  /** The source said its last listing was only part of what is available. */
  hasMore: boolean;
}

/** Per source of every tenant: its counters (the last runtime's, once a tenant stopped). */
export function sourceProgress(slots: Iterable<TenantSlot>): SourceProgressView[] {
  const out: SourceProgressView[] = [];
  for (const slot of slots) {
    const rt = slot.runtime ?? slot.last;
    if (!rt) continue;
    for (const r of rt.runners) out.push({ tenant: slot.id, source: r.source.id, type: r.source.type, progress: r.progress, hasMore: r.source.hasMore === true });
  }
  return out;
}

/** Set the gauges that are computed, not counted: lag, newest exported event, checkpoint age, up/down. */
export function refreshGauges(m: DaemonMetrics, slots: Iterable<TenantSlot>, now = Date.now()): void {
  m.lagSeconds.reset();
  m.newestExportedEventTime.reset();
  m.checkpointAgeSeconds.reset();
  m.sourceUp.reset();
  m.destinationUp.reset();
  for (const slot of slots) {
    const rt = slot.runtime ?? slot.last;
    if (!rt) continue;
    for (const r of rt.runners) {
      const labels = { tenant: slot.id, source: r.source.id };
      const p = r.progress;
      if (p.newestExportedTimeUnixNano > 0n) {
        const t = Number(p.newestExportedTimeUnixNano / 1_000_000n) / 1000;
        m.newestExportedEventTime.set(labels, t);
        m.lagSeconds.set(labels, Math.max(0, now / 1000 - t));
      }
      if (p.lastPollOkAt > 0 || p.lastErrorAt > 0) m.sourceUp.set(labels, p.lastPollOkAt >= p.lastErrorAt ? 1 : 0);
    }
    const age = checkpointAge(rt, now);
    if (age !== undefined) m.checkpointAgeSeconds.set({ tenant: slot.id }, age);
    for (const d of rt.destinations) {
      if (!(d instanceof ObservedDestination) || d.health.state === 'pending') continue;
      m.destinationUp.set({ tenant: slot.id, destination: d.name }, d.health.state === 'ok' ? 1 : 0);
    }
  }
}

export interface ReadinessInput {
  plan: Plan | undefined;
  isStopping: boolean;
  slots: ReadonlyMap<string, TenantSlot>;
  health: DestinationHealthRegistry;
  loadedAt: number;
  lastReload: { at: number; ok: boolean; error?: string } | undefined;
}

/** The `/readyz` answer: ready when the configuration is loaded and every destination was reached once. */
export function readiness(input: ReadinessInput, now = Date.now()): { ready: boolean; body: unknown } {
  const { plan, slots, lastReload } = input;
  const iso = (t: number): string | null => (t > 0 ? new Date(t).toISOString() : null);
  const tenants: Record<string, unknown> = {};
  let allReady = plan !== undefined && !input.isStopping && slots.size > 0;
  for (const slot of slots.values()) {
    const rt = slot.runtime ?? slot.last;
    const destinations = slot.plan.config.destinations.map((cfg) => {
      const h = input.health.get(slot.id, cfg);
      return {
        name: h?.name ?? cfg.name ?? cfg.type,
        type: cfg.type,
        reached: h?.reached ?? false,
        state: h?.state ?? 'pending',
        lastSuccess: iso(h?.lastSuccessAt ?? 0),
        lastError: h?.lastError ?? null,
        lastErrorAt: iso(h?.lastErrorAt ?? 0),
      };
    });
    const sources = (rt?.runners ?? []).map((r) => {
      const p = r.progress;
      const state = p.lastPollOkAt === 0 && p.lastErrorAt === 0 ? 'pending' : p.lastPollOkAt >= p.lastErrorAt ? 'ok' : 'failing';
      const newest = p.newestExportedTimeUnixNano > 0n ? Number(p.newestExportedTimeUnixNano / 1_000_000n) : 0;
      return {
        id: r.source.id,
        type: r.source.type,
        state,
        lastSuccess: iso(p.lastPollOkAt),
        lastError: p.lastError ?? null,
        lastErrorAt: iso(p.lastErrorAt),
        objectsRead: p.objectsRead,
        eventsRead: p.events,
        eventsExported: p.exported,
        newestExportedEventTime: iso(newest),
        lagSeconds: newest > 0 ? Math.max(0, Math.round((now - newest) / 1000)) : null,
      };
    });
    const ready = destinations.every((d) => d.reached);
    if (!ready) allReady = false;
    const age = rt ? checkpointAge(rt, now) : undefined;
    tenants[slot.id] = {
      state: slot.state,
      ready,
      lastError: slot.lastError?.message ?? null,
      lastErrorAt: iso(slot.lastError?.at ?? 0),
      restarts: slot.restarts,
      ...(slot.state === 'failed' && slot.restartAt > now ? { restartInSeconds: Math.ceil((slot.restartAt - now) / 1000) } : {}),
      checkpointAgeSeconds: age === undefined ? null : Math.round(age),
      sources,
      destinations,
      // its enrichment data (the tenant is ready or not without regard to it: records go out without the names meanwhile)
      ...(slot.plan.config.enrichment ? { enrichment: rt?.enrichment?.status(now) ?? { state: 'pending', users: null, sites: null } } : {}),
    };
  }
  const body = {
    status: allReady ? 'ready' : 'not ready',
    config: {
      file: plan?.loaded.file ?? null,
      loadedAt: iso(input.loadedAt),
      lastReload: lastReload ? { at: iso(lastReload.at), result: lastReload.ok ? 'success' : 'failure', ...(lastReload.error ? { error: lastReload.error } : {}) } : null,
    },
    tenants,
  };
  return { ready: allReady, body };
}

function checkpointAge(rt: TenantRuntime, now: number): number | undefined {
  const own = rt.checkpointAgeSeconds(now);
  if (own !== undefined) return own;
  const file = rt.checkpointFile;
  if (!file) return undefined;
  try {
    return Math.max(0, (now - statSync(file).mtimeMs) / 1000);
  } catch {
    return undefined;
  }
}
