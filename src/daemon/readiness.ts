/**
 * What `/readyz` knows about each destination: whether it was ever reached (it accepted a
 * request, or answered a probe), and how its last request went. A destination is wrapped as it
 * is built, so every send and probe outcome is seen without the pipeline knowing.
 *
 * "Reached" means the destination answered and accepted our credentials: a 2xx to a batch or a
 * probe, or a rejection of a batch's contents (e.g. 400: the destination works, that batch was
 * refused). A network error, a 5xx/429/408 does not count, and does not take it back: once
 * reached, a destination stays reached through an outage (readiness does not flap with every
 * failed request); its current state and last error stay visible in the detail. A hold (401,
 * 403, 407, a redirect, 404: our credentials refused, the destination moved) does take it
 * back until the next accepted request: the pipeline cannot deliver anything until someone
 * fixes the token or the URL, so `/readyz` answers 503.
 */
import type { Destination, SendOutcome } from '../export/destination.js';
import type { EncodingSpec } from '../export/encodings.js';
import { Backoff, type BackoffPolicy } from '../core/backoff.js';
import { sleep } from '../core/sleep.js';

export type EndpointState = 'pending' | 'ok' | 'failing';

export class DestinationHealth {
  reached = false;
  state: EndpointState = 'pending';
  lastSuccessAt = 0;
  lastError: string | undefined;
  lastErrorAt = 0;
  probes = 0;

  constructor(
    readonly tenant: string,
    readonly name: string,
    readonly type: string,
  ) {}

  record(outcome: SendOutcome): void {
    const now = Date.now();
    if (outcome.kind === 'done') {
      this.reached = true;
      this.state = 'ok';
      this.lastSuccessAt = now;
      return;
    }
    this.lastError = outcome.reason;
    this.lastErrorAt = now;
    if (outcome.kind === 'hold') this.reached = false;
    if (outcome.kind === 'rejected') {
      // the destination answered: it works, it refused that request's contents
      this.reached = true;
      this.state = 'ok';
      return;
    }
    this.state = 'failing';
  }

  recordError(err: unknown): void {
    this.record({ kind: 'retry', reason: err instanceof Error ? err.message : String(err) });
  }
}

/** A destination whose outcomes go to a DestinationHealth. */
export class ObservedDestination implements Destination {
  constructor(
    readonly inner: Destination,
    readonly health: DestinationHealth,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  get encoding(): EncodingSpec {
    return this.inner.encoding;
  }

  get canProbe(): boolean {
    return typeof this.inner.probe === 'function';
  }

  async send(payload: Uint8Array, records: number, signal: AbortSignal): Promise<SendOutcome> {
    try {
      const outcome = await this.inner.send(payload, records, signal);
      if (!signal.aborted || outcome.kind === 'done') this.health.record(outcome);
      return outcome;
    } catch (err) {
      this.health.recordError(err);
      throw err;
    }
  }

  async probe(signal: AbortSignal): Promise<SendOutcome> {
    if (!this.inner.probe) return { kind: 'retry', reason: 'this destination type has no probe' };
    this.health.probes++;
    try {
      const outcome = await this.inner.probe(signal);
      this.health.record(outcome);
      return outcome;
    } catch (err) {
      this.health.recordError(err);
      throw err;
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * Probe each destination that can be probed until it is reached (by the probe or by a batch),
 * with backoff (1 s doubling to 60 s), until the signal aborts.
 */
/** Waits between probes of a destination not reached yet: 1 s doubling to 60 s. */
const PROBE_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 60_000, multiplier: 2, jitter: 'none' };

export async function probeUntilReached(destinations: readonly Destination[], signal: AbortSignal): Promise<void> {
  await Promise.all(
    destinations.map(async (d) => {
      if (!(d instanceof ObservedDestination) || !d.canProbe) return;
      const backoff = new Backoff(PROBE_BACKOFF);
      while (!signal.aborted && !d.health.reached) {
        try {
          await d.probe(signal);
        } catch {
          /* recorded */
        }
        if (d.health.reached) return;
        if (await sleep(backoff.next(), signal)) return;
      }
    }),
  );
}
