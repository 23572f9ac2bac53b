/** primeFeedback: every argument list, as given, more times than V8 calls a function before it keeps feedback. */
import { describe, it, expect } from 'vitest';
import { primeFeedback } from '../src/core/type-feedback.js';

describe('primeFeedback', () => {
  it('calls the function with each argument list, in order, more than eight times over', () => {
    const calls: Array<[number, string]> = [];
    primeFeedback((n: number, s: string) => calls.push([n, s]), [
      [1, 'a'],
      [2, 'b'],
    ]);
    expect(calls.length % 2).toBe(0);
    expect(calls.length / 2).toBeGreaterThan(8);
    for (let i = 0; i < calls.length; i += 2) expect(calls.slice(i, i + 2)).toEqual([[1, 'a'], [2, 'b']]);
  });

  it('an empty list of arguments: no call', () => {
    let called = false;
    primeFeedback(() => (called = true), []);
    expect(called).toBe(false);
  });
});
