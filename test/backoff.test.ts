/** The backoff rule every retry uses (src/core/backoff.ts). */
import { describe, it, expect } from 'vitest';
import { Backoff, backoffDelay, BACKOFF_DEFAULTS } from '../src/core/backoff.js';
import { sleep } from '../src/core/sleep.js';

describe('backoffDelay', () => {
  it('grows by the multiplier from initial, capped at max', () => {
    const p = { initialMs: 100, maxMs: 1000, multiplier: 3, jitter: 'none' as const };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(p, n))).toEqual([100, 300, 900, 1000, 1000]);
    expect(backoffDelay({ initialMs: 100, maxMs: 10_000, jitter: 'none' }, 4)).toBe(800); // multiplier 2 by default
    expect(backoffDelay(p, 10_000)).toBe(1000); // no overflow for very many attempts
  });

  it('equal jitter stays within [cap/2, cap]; full within [0, cap]', () => {
    const p = { initialMs: 1000, maxMs: 1000 };
    expect(backoffDelay(p, 1, () => 0)).toBe(500);
    expect(backoffDelay(p, 1, () => 0.999999)).toBe(1000);
    expect(backoffDelay({ ...p, jitter: 'full' }, 1, () => 0)).toBe(0);
    expect(backoffDelay({ ...p, jitter: 'full' }, 1, () => 0.5)).toBe(500);
    for (let i = 0; i < 1000; i++) {
      const d = backoffDelay(BACKOFF_DEFAULTS.delivery, 1 + (i % 10));
      expect(d).toBeGreaterThanOrEqual(250);
      expect(d).toBeLessThanOrEqual(30_000);
    }
  });
});

describe('Backoff', () => {
  it('counts attempts and starts over after reset()', () => {
    const b = new Backoff({ initialMs: 10, maxMs: 100, jitter: 'none' });
    expect([b.next(), b.next(), b.next()]).toEqual([10, 20, 40]);
    expect(b.attempts).toBe(3);
    b.reset();
    expect(b.next()).toBe(10);
  });
});

describe('sleep', () => {
  it('is cut short by an abort (true) and otherwise runs out (false)', async () => {
    const ac = new AbortController();
    const long = sleep(60_000, ac.signal);
    ac.abort();
    expect(await long).toBe(true);
    expect(await sleep(1)).toBe(false);
    expect(await sleep(60_000, AbortSignal.abort())).toBe(true);
  });
});
