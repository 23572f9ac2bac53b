/**
 * Type feedback given to a function before its callers are optimized.
 *
 * V8 optimizes a function from what its earlier calls met (the types at each operation, the
 * functions called, the shapes of objects read): its type feedback. A branch no earlier call took
 * has none, and when a later call takes it, V8 throws the optimized code away and compiles again
 * ("insufficient type feedback" in `--trace-deopt`). On the hot path that happened at a run's
 * first exponent in a number, first long string, first user block of the join…: a recompile of
 * the function and of every caller it was inlined into (mapInto some 15-20 ms, the line scanner
 * some 10 ms), and the work done meanwhile in a slower tier. Running such a function once over
 * values of every kind when its module loads gives each branch feedback for some microseconds.
 *
 * Feedback is kept only once a function has run a few times (V8 allocates it lazily), hence the
 * rounds. The calls must have no effect beyond their result.
 *
 * It has a price: feedback of every kind makes the optimized code general where it was
 * specialised (a comparison with strings only becomes a generic one, a load from one kind of
 * buffer a test of two). Primed at their modules' load, the line's number scan, a body's value
 * (`show`), `anyValue`, `ProtoWriter.string` and `copyBytes` lost a few recompiles a run but made
 * the encode worker's steady work 2.7 % slower (in-process, six processes, each 1.2 to 3.7 %; see
 * docs/performance-rounds.md, round 40): a run's start is not worth that. Prime only what runs
 * a few times a record at most, and measure the steady work after.
 */

/** Calls made of each argument list: past V8's lazy feedback allocation (8 calls on Node 20 and 24). */
const ROUNDS = 16;

/** Calls `fn` with each of `argLists`, ROUNDS times over. */
export function primeFeedback<A extends unknown[]>(fn: (...args: A) => unknown, argLists: readonly A[]): void {
  for (let round = 0; round < ROUNDS; round++) for (const args of argLists) fn(...args);
}
