/**
 * The one backoff rule of every retry in the daemon (destinations, sources, tenant restarts):
 * the n-th wait is `initial × multiplier^(n-1)`, capped at `max`, then jittered.
 *
 * Jitter (docs/destinations/README.md, Retries):
 * - `equal` (the default): a random wait between half the capped delay and the whole of it, so
 *   retries spread out but never come sooner than half the intended wait;
 * - `full`: anywhere between 0 and the capped delay;
 * - `none`: exactly the capped delay (tests, and waits that must be predictable).
 */
export type Jitter = 'equal' | 'full' | 'none';

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  /** Growth per attempt (default 2). */
  multiplier?: number;
  jitter?: Jitter;
}

/** The defaults, in one place. */
export const BACKOFF_DEFAULTS = {
  /** A batch to a destination (also the TCM API): 0.5 s doubling to 30 s. */
  delivery: { initialMs: 500, maxMs: 30_000, multiplier: 2, jitter: 'equal' },
  /** A source's poll or read that failed (listing, queue, checkpoint writes): 1 s doubling to 30 s. */
  source: { initialMs: 1_000, maxMs: 30_000, multiplier: 2, jitter: 'equal' },
  /** An S3 object's body cut mid-way, resumed at the same byte: 0.5 s doubling (4 resumes without progress at most), no jitter. */
  objectResume: { initialMs: 500, maxMs: 4_000, multiplier: 2, jitter: 'none' },
  /** A failed tenant started again: 5 s doubling to 5 min, exactly (operators read these waits in the logs). */
  tenantRestart: { initialMs: 5_000, maxMs: 300_000, multiplier: 2, jitter: 'none' },
} as const satisfies Record<string, Required<BackoffPolicy>>;

/** The wait before retry number `attempt` (1 = the first retry). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const multiplier = policy.multiplier ?? 2;
  const n = Math.max(0, Math.min(attempt - 1, 1000));
  const cap = Math.min(policy.maxMs, policy.initialMs * multiplier ** n);
  switch (policy.jitter ?? 'equal') {
    case 'none':
      return Math.round(cap);
    case 'full':
      return Math.round(random() * cap);
    default:
      return Math.round(cap / 2 + (random() * cap) / 2);
  }
}

/** Successive waits of one retry loop: `next()` gives the next wait, `reset()` starts over after a success. */
export class Backoff {
  private attempt = 0;

  constructor(
    readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Retries so far. */
  get attempts(): number {
    return this.attempt;
  }

  next(): number {
    this.attempt++;
    return backoffDelay(this.policy, this.attempt, this.random);
  }

  reset(): void {
    this.attempt = 0;
  }
}
