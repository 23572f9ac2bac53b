/**
 * Where V8's optimizing compiler (TurboFan) runs: on the thread whose code it optimizes, not on
 * V8's background threads (`--no-concurrent-recompilation`).
 *
 * Why: each compile job allocates its working memory with malloc on whichever of V8's four
 * background threads runs it, and glibc gives each of those threads its own arena, which keeps
 * what a job freed. At the bench's peak that was the most variable part of the RSS. With the flag
 * on the node command line, `run --once` on the bench corpus peaked at 116 instead of 128 MB
 * (Node 20) and 142 instead of 163 MB (Node 24), wall and CPU the same (docs/performance.md).
 * The code it compiles is small, so a compile on the thread itself is short.
 *
 * V8 decides this once per isolate, when the isolate is created: set here at run time, the flag
 * reaches the isolates created later (the encode and lookup workers: 124 instead of 128 MB on
 * Node 20, 148 instead of 154 on Node 24), not the main thread's, which only the command line
 * reaches (the image's ENTRYPOINT has it: `node --no-concurrent-recompilation dist/cli.js`).
 *
 * An operator who sets either form of the flag on the node command line keeps their choice (Node
 * does not take it in NODE_OPTIONS).
 */
import v8 from 'node:v8';

export const ON_OWN_THREAD_FLAG = '--no-concurrent-recompilation';

/**
 * From now on the isolates created (the workers) run their optimizing compiles on their own
 * thread, unless the node command line chose either way.
 */
export function optimizeOnOwnThread(): void {
  // (V8 takes its flags with dashes or underscores)
  if (process.execArgv.some((a) => /^--(no[-_])?concurrent[-_]recompilation$/.test(a))) return;
  v8.setFlagsFromString(ON_OWN_THREAD_FLAG);
}
