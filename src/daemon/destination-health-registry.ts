/** The health of every tenant's destinations (for `/readyz` and `tao_destination_up`), kept across a reload for destinations whose configuration did not change. */
import type { Destination } from '../export/destination.js';
import type { DestinationConfig } from '../export/destination-registry.js';
import { DestinationHealth, ObservedDestination } from './readiness.js';
import type { Plan } from './reload-plan.js';

export class DestinationHealthRegistry {
  private readonly health = new Map<string, DestinationHealth>();

  /** The destination, wrapped so that its outcomes are seen. */
  observe(tenant: string, d: Destination, cfg: DestinationConfig): Destination {
    const key = healthKey(tenant, cfg);
    let h = this.health.get(key);
    if (!h) {
      h = new DestinationHealth(tenant, d.name, cfg.type);
      this.health.set(key, h);
    }
    return new ObservedDestination(d, h);
  }

  get(tenant: string, cfg: DestinationConfig): DestinationHealth | undefined {
    return this.health.get(healthKey(tenant, cfg));
  }

  /** Forget the destinations the plan no longer has. */
  prune(plan: Plan): void {
    const keep = new Set<string>();
    for (const tp of plan.tenants.values()) for (const d of tp.config.destinations) keep.add(healthKey(tp.config.id, d));
    for (const k of this.health.keys()) if (!keep.has(k)) this.health.delete(k);
  }
}

function healthKey(tenant: string, cfg: DestinationConfig): string {
  return `${tenant}\n${JSON.stringify(cfg)}`;
}
