/** The in-flight limit of a tenant's batches: a count and a byte budget (pipeline/in-flight-slots.ts). */
import { describe, it, expect } from 'vitest';
import { InFlightSlots } from '../src/pipeline/in-flight-slots.js';

/** Whether the promise has settled after the microtasks queued so far have run. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('InFlightSlots', () => {
  it('holds at most maxBatches whatever their bytes', async () => {
    const slots = new InFlightSlots(2, Infinity);
    await slots.acquire(10);
    await slots.acquire(10);
    const third = slots.acquire(10);
    expect(await settled(third)).toBe(false);
    slots.release(10);
    expect(await settled(third)).toBe(true);
    expect(slots.inFlight).toEqual({ batches: 2, bytes: 20 });
  });

  it('holds at most maxBytes between the batches in flight', async () => {
    const slots = new InFlightSlots(8, 100);
    await slots.acquire(40);
    await slots.acquire(40);
    const over = slots.acquire(40); // 120 > 100
    expect(await settled(over)).toBe(false);
    slots.release(40);
    expect(await settled(over)).toBe(true);
    expect(slots.inFlight).toEqual({ batches: 2, bytes: 80 });
  });

  it('lets a batch larger than the budget go alone, once nothing else is in flight', async () => {
    const slots = new InFlightSlots(8, 100);
    await slots.acquire(30);
    const big = slots.acquire(500);
    expect(await settled(big)).toBe(false);
    slots.release(30);
    expect(await settled(big)).toBe(true);
    expect(slots.inFlight).toEqual({ batches: 1, bytes: 500 });
    const small = slots.acquire(1); // nothing fits next to it
    expect(await settled(small)).toBe(false);
    slots.release(500);
    expect(await settled(small)).toBe(true);
  });

  it('serves waiters in order: a small batch does not overtake a large one that waits', async () => {
    const slots = new InFlightSlots(8, 100);
    await slots.acquire(60);
    const order: string[] = [];
    const large = slots.acquire(80).then(() => order.push('large'));
    const small = slots.acquire(10).then(() => order.push('small'));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]); // 10 would fit next to 60, but the large one came first
    slots.release(60);
    await Promise.all([large, small]);
    expect(order).toEqual(['large', 'small']);
    expect(slots.inFlight).toEqual({ batches: 2, bytes: 90 });
  });
});
