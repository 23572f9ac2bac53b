/**
 * Delivering one batch to one destination: retry with exponential backoff and jitter (core/backoff.ts),
 * honouring `Retry-After`, until it is accepted, its content rejected, or the retry budget runs
 * out. A hold (our credentials refused, the destination moved) is retried the same way: the
 * batch waits like in an outage, it is never dead-lettered. Shared by every destination so the retry policy lives in one place.
 */
import { backoffDelay as coreBackoffDelay } from '../core/backoff.js';
import { sleep } from '../core/sleep.js';
import type { Destination, SendOutcome } from './destination.js';

export interface RetryPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** Give up after this long (Infinity: never, the daemon's default: a destination that stays down holds the checkpoint). */
  maxElapsedMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { initialDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: Infinity };

export type DeliveryResult =
  | { kind: 'done'; attempts: number }
  | { kind: 'rejected'; attempts: number; outcome: Extract<SendOutcome, { kind: 'rejected' }> }
  /** The retry budget ran out; `status` is the HTTP status of the last answer when it was a hold. */
  | { kind: 'gave-up'; attempts: number; lastReason: string; status?: number }
  | { kind: 'aborted'; attempts: number };

export interface DeliveryHooks {
  onRetry?(reason: string, delayMs: number, attempt: number, outcome: Extract<SendOutcome, { kind: 'retry' | 'hold' }>): void;
}

/** The wait before retry `attempt` of a batch: the daemon's one backoff rule (core/backoff.ts). */
export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  return coreBackoffDelay({ initialMs: policy.initialDelayMs, maxMs: policy.maxDelayMs }, attempt, random);
}

export async function deliver(
  destination: Destination,
  payload: Uint8Array,
  records: number,
  policy: RetryPolicy,
  signal: AbortSignal,
  hooks: DeliveryHooks = {},
): Promise<DeliveryResult> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) return { kind: 'aborted', attempts: attempt - 1 };
    let outcome: SendOutcome;
    try {
      const sent = await untilAborted(destination.send(payload, records, signal), signal);
      if (sent === ABANDONED) return { kind: 'aborted', attempts: attempt };
      outcome = sent;
    } catch (err) {
      outcome = { kind: 'retry', reason: err instanceof Error ? err.message : String(err) };
    }
    if (outcome.kind === 'done') return { kind: 'done', attempts: attempt };
    if (outcome.kind === 'rejected') return { kind: 'rejected', attempts: attempt, outcome };
    const retryAfterMs = outcome.kind === 'retry' ? (outcome.retryAfterMs ?? 0) : 0;
    const delay = Math.min(policy.maxDelayMs * 4, Math.max(retryAfterMs, backoffDelay(policy, attempt)));
    if (Date.now() - started + delay > policy.maxElapsedMs) {
      return { kind: 'gave-up', attempts: attempt, lastReason: outcome.reason, ...(outcome.kind === 'hold' ? { status: outcome.status } : {}) };
    }
    hooks.onRetry?.(outcome.reason, delay, attempt, outcome);
    const aborted = await sleep(delay, signal);
    if (aborted) return { kind: 'aborted', attempts: attempt };
  }
}

const ABANDONED = Symbol('abandoned');

/**
 * The send's outcome, or ABANDONED as soon as the signal aborts (a stop's grace period is over):
 * a destination that ignores the signal cannot hold the shutdown. The batch is then not
 * acknowledged, so the checkpoint does not move past it.
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | typeof ABANDONED> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.resolve(ABANDONED);
  }
  return new Promise<T | typeof ABANDONED>((resolve, reject) => {
    const onAbort = (): void => resolve(ABANDONED);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

export { sleep } from '../core/sleep.js';
